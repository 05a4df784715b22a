#include "replay.hpp"

#include <map>
#include <stdexcept>
#include <string>
#include <unordered_map>
#include <vector>

#include <fmt/format.h>
#include <simgrid/s4u.hpp>

#include "platform.hpp"

namespace sg4 = simgrid::s4u;

namespace ddplab::sim {
namespace {

// What every rank records while it runs. Actors run one at a time (SimGrid contexts), so no locks.
struct RankRecord {
  double start = 0, compute_end = 0, comm_end = 0, end = 0;
  bool finished = false;
  std::uint64_t bytes = 0, messages = 0;
  std::map<int, std::uint64_t> to_peer;  // dst -> bytes
};

// Messages carry no data, only a simulated size; every send points at this.
int g_payload = 0;

// Mailbox of the ordered pair src -> dst, e.g. "r3->r4". Messages between a pair match in FIFO order and
// every rank runs its steps in order, so the k-th send of a pair meets the k-th receive of that pair.
sg4::Mailbox* pair_mailbox(std::unordered_map<int, sg4::Mailbox*>& cache, int key, int src, int dst) {
  auto it = cache.find(key);
  if (it != cache.end()) return it->second;
  auto* mb = sg4::Mailbox::by_name(fmt::format("r{}->r{}", src, dst));
  cache.emplace(key, mb);
  return mb;
}

// One rank's part of a schedule: per step, start every send and receive, then wait for all of them.
// A zero-byte chunk is still a message, so the number of steps and messages matches the runtime's.
void replay_rank(const Schedule& s, int rank, std::size_t elem_bytes, RankRecord& rec) {
  std::unordered_map<int, sg4::Mailbox*> out, in;
  std::vector<sg4::CommPtr> comms;
  std::vector<int*> sinks;
  for (const auto& step : s.ranks[static_cast<std::size_t>(rank)]) {
    comms.clear();
    sinks.assign(step.recvs.size(), nullptr);  // sized before any get_async points into it
    for (const auto& op : step.sends) {
      const std::uint64_t bytes = static_cast<std::uint64_t>(op.chunk.count) * elem_bytes;
      comms.push_back(pair_mailbox(out, op.peer, rank, op.peer)->put_async(&g_payload, bytes));
      rec.bytes += bytes;
      rec.to_peer[op.peer] += bytes;
      ++rec.messages;
    }
    for (std::size_t i = 0; i < step.recvs.size(); ++i)
      comms.push_back(pair_mailbox(in, step.recvs[i].peer, step.recvs[i].peer, rank)->get_async<int>(&sinks[i]));
    sg4::Comm::wait_all(comms);
  }
}

// Compute is an Exec sized so it lasts `seconds` on an idle host; later issues can model contention.
void compute_for(double seconds) {
  if (seconds > 0) sg4::this_actor::execute(seconds * kHostSpeed);
}

}  // namespace

void validate_schedule(const Schedule& s) {
  const int n = s.world_size;
  if (n < 1) throw std::invalid_argument("simulator: schedule world size must be >= 1");
  if (s.ranks.size() != static_cast<std::size_t>(n))
    throw std::invalid_argument(fmt::format("simulator: schedule \"{}\" has {} rank lists for world size {}", s.name,
                                            s.ranks.size(), n));
  std::map<std::pair<int, int>, long> balance;  // sends minus receives per (src, dst)
  for (int r = 0; r < n; ++r)
    for (const auto& step : s.ranks[static_cast<std::size_t>(r)]) {
      auto check = [&](int peer) {
        if (peer < 0 || peer >= n || peer == r)
          throw std::invalid_argument(
              fmt::format("simulator: schedule \"{}\" rank {} has invalid peer {}", s.name, r, peer));
      };
      for (const auto& op : step.sends) {
        check(op.peer);
        ++balance[{r, op.peer}];
      }
      for (const auto& op : step.recvs) {
        check(op.peer);
        --balance[{op.peer, r}];
      }
    }
  for (const auto& [pair, diff] : balance)
    if (diff != 0)
      throw std::invalid_argument(fmt::format(
          "simulator: schedule \"{}\": sends from rank {} to rank {} and the receives for them do not match "
          "({} unmatched); it would deadlock",
          s.name, pair.first, pair.second, diff));
}

SimStepResult run_simulation(const SimJob& job) {
  const Schedule& s = *job.schedule;
  const int n = s.world_size;
  auto* engine = make_engine(job.cluster, job.options);
  const auto hosts = build_star_platform(job.cluster, n);

  std::vector<RankRecord> records(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) {
    auto& rec = records[static_cast<std::size_t>(r)];
    sg4::Actor::create(fmt::format("rank{}", r), hosts[static_cast<std::size_t>(r)], [&job, &s, &rec, r] {
      rec.start = sg4::Engine::get_clock();
      compute_for(job.compute_s);
      rec.compute_end = sg4::Engine::get_clock();
      replay_rank(s, r, job.elem_bytes, rec);
      rec.comm_end = sg4::Engine::get_clock();
      compute_for(job.optimizer_s);
      rec.end = sg4::Engine::get_clock();
      rec.finished = true;
    });
  }
  engine->run();

  SimStepResult res;
  res.world_size = n;
  res.schedule = s.name;
  res.bytes_sent.resize(static_cast<std::size_t>(n));
  res.ranks.resize(static_cast<std::size_t>(n));
  int slowest = 0;
  for (int r = 0; r < n; ++r) {
    const auto& rec = records[static_cast<std::size_t>(r)];
    if (!rec.finished)
      throw std::runtime_error(fmt::format("rank {} did not finish its schedule (deadlock)", r));
    auto& t = res.ranks[static_cast<std::size_t>(r)];
    t.compute_s = rec.compute_end - rec.start;
    t.comm_s = rec.comm_end - rec.compute_end;
    t.exposed_comm_s = t.comm_s;  // baseline: nothing overlaps the allreduce
    t.optimizer_s = rec.end - rec.comm_end;
    t.step_s = rec.end - rec.start;
    if (t.step_s > res.ranks[static_cast<std::size_t>(slowest)].step_s) slowest = r;
    res.bytes_sent[static_cast<std::size_t>(r)] = rec.bytes;
    res.comms += rec.messages;
    for (const auto& [peer, bytes] : rec.to_peer) res.bytes_between[{r, peer}] = bytes;
  }
  const auto& worst = res.ranks[static_cast<std::size_t>(slowest)];
  res.step_s = worst.step_s;
  res.compute_s = worst.compute_s;
  res.comm_s = worst.comm_s;
  res.exposed_comm_s = worst.exposed_comm_s;
  res.optimizer_s = worst.optimizer_s;
  return res;
}

}  // namespace ddplab::sim
