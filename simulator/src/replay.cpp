#include "replay.hpp"

#include <cmath>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "aggregate.hpp"
#include "platform.hpp"
#include "ddplab/core/error.hpp"

namespace sg4 = simgrid::s4u;

namespace ddplab::sim {
namespace {

// Messages carry no data, only a simulated size; every send points at this.
int g_payload = 0;

std::uint64_t wire_bytes(std::uint64_t bytes, double factor) {
  return factor == 1 ? bytes : static_cast<std::uint64_t>(std::llround(static_cast<double>(bytes) * factor));
}

sg4::Mailbox* lookup(std::unordered_map<int, sg4::Mailbox*>& cache, int peer, int src, int dst) {
  auto it = cache.find(peer);
  if (it != cache.end()) return it->second;
  auto* mb = sg4::Mailbox::by_name(fmt::format("r{}->r{}", src, dst));
  cache.emplace(peer, mb);
  return mb;
}

}  // namespace

sg4::Mailbox* RankMailboxes::to(int dst) {
  const int g = global(dst);
  return lookup(out_, g, rank_, g);
}
sg4::Mailbox* RankMailboxes::from(int src) {
  const int g = global(src);
  return lookup(in_, g, g, rank_);
}

sg4::CommPtr RankMailboxes::send(int dst, std::uint64_t bytes, SendTally& tally, double wire_factor) {
  tally.to_peer[global(dst)] += bytes;
  ++tally.messages;
  const std::uint64_t wire = wire_bytes(bytes, wire_factor);
  if (const int g = global(dst); mirrored(g))
    return sg4::Comm::sendto_async(hosts_->at(static_cast<std::size_t>(rank_)), hosts_->at(static_cast<std::size_t>(g)),
                                   wire);
  return to(dst)->put_async(&g_payload, wire);
}

sg4::CommPtr RankMailboxes::recv(int src, std::uint64_t wire, int** sink) {
  if (const int g = global(src); mirrored(g))
    return sg4::Comm::sendto_async(hosts_->at(static_cast<std::size_t>(g)), hosts_->at(static_cast<std::size_t>(rank_)),
                                   wire);
  return from(src)->get_async<int>(sink);
}

void SendWindow::add(std::vector<sg4::CommPtr>&& sends) {
  steps_.push_back(std::move(sends));
  while (static_cast<int>(steps_.size()) >= depth_) {
    if (!steps_.front().empty()) sg4::Comm::wait_all(steps_.front());
    steps_.pop_front();
  }
}

void SendWindow::drain() {
  for (auto& s : steps_)
    if (!s.empty()) sg4::Comm::wait_all(s);
  steps_.clear();
}

std::uint64_t replay_schedule(const Schedule& s, int rank, std::size_t elem_bytes, RankMailboxes& boxes,
                              SendTally& tally, std::uint64_t serialize_from) {
  std::vector<sg4::CommPtr> comms, first, sends;
  SendWindow window(s.timing.pipeline_depth);
  std::vector<int*> sinks;
  std::uint64_t sent = 0;
  const ScheduleTiming& timing = s.timing;
  if (timing.start_s > 0) sg4::this_actor::sleep_for(timing.start_s);
  for (const auto& step : s.ranks[static_cast<std::size_t>(rank)]) {
    if (const double d = timing.step_delay(rank, step.sends); d > 0) sg4::this_actor::sleep_for(d);
    comms.clear();
    first.clear();
    sinks.assign(step.recvs.size(), nullptr);  // sized before any get_async points into it
    // A message of an exchange with one peer takes its turn when both directions are at least
    // serialize_from bytes: the lower rank's goes first (Open MPI over TCP, replay.hpp).
    auto exchanged = [&](int peer, std::uint64_t bytes) {
      if (serialize_from == 0 || bytes < serialize_from) return false;
      for (const auto& r : step.recvs)
        if (r.peer == peer && static_cast<std::uint64_t>(r.chunk.count) * elem_bytes >= serialize_from) return true;
      return false;
    };
    std::vector<std::pair<int, std::uint64_t>> later_sends;
    for (const auto& op : step.sends) {
      const std::uint64_t bytes = static_cast<std::uint64_t>(op.chunk.count) * elem_bytes;
      sent += bytes;
      if (exchanged(op.peer, bytes) && op.peer < rank) {
        later_sends.emplace_back(op.peer, bytes);
        continue;
      }
      (exchanged(op.peer, bytes) ? first
       : window.lock_step()      ? comms
                                 : sends)
          .push_back(boxes.send(op.peer, bytes, tally, timing.wire_factor));
    }
    for (std::size_t i = 0; i < step.recvs.size(); ++i) {
      const RecvOp& r = step.recvs[i];
      const std::uint64_t bytes = static_cast<std::uint64_t>(r.chunk.count) * elem_bytes;
      auto comm = boxes.recv(r.peer, wire_bytes(bytes, timing.wire_factor), &sinks[i]);
      (exchanged(r.peer, bytes) && r.peer < rank ? first : comms).push_back(comm);
    }
    if (!first.empty()) sg4::Comm::wait_all(first);
    for (const auto& [peer, bytes] : later_sends) comms.push_back(boxes.send(peer, bytes, tally));
    sg4::Comm::wait_all(comms);
    if (!window.lock_step()) window.add(std::move(sends));
    sends.clear();
  }
  window.drain();
  tally.bytes += sent;
  return sent;
}

bool lockstep_symmetric(const Schedule& s) {
  if (s.ranks.empty()) return false;
  const std::size_t steps = s.ranks.front().size();
  for (const auto& rank : s.ranks) {
    if (rank.size() != steps) return false;
    for (const auto& step : rank)
      if (step.sends.empty() || step.sends.size() != step.recvs.size()) return false;
  }
  return true;
}

void validate_schedule(const Schedule& s) {
  const int n = s.world_size;
  if (n < 1) throw InternalError("simulator: schedule world size must be >= 1");
  if (s.ranks.size() != static_cast<std::size_t>(n))
    throw InternalError(
        fmt::format("simulator: schedule \"{}\" has {} rank lists for world size {}", s.name, s.ranks.size(), n));
  std::map<std::pair<int, int>, long> balance;  // sends minus receives per (src, dst)
  for (int r = 0; r < n; ++r)
    for (const auto& step : s.ranks[static_cast<std::size_t>(r)]) {
      auto check = [&](int peer) {
        if (peer < 0 || peer >= n || peer == r)
          throw InternalError(fmt::format("simulator: schedule \"{}\" rank {} has invalid peer {}", s.name, r, peer));
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
      throw InternalError(fmt::format(
          "simulator: schedule \"{}\": sends from rank {} to rank {} and the receives for them do not match "
          "({} unmatched); it would deadlock",
          s.name, pair.first, pair.second, diff));
}

SimStepResult run_schedule_simulation(const ClusterConfig& cluster, const Schedule& s, std::size_t elem_bytes,
                                      const SimOptions& options) {
  const int n = s.world_size;
  auto* engine = make_engine(cluster, options);
  const auto hosts = build_platform(cluster, n);

  struct Record {
    double end = 0;
    bool finished = false;
    SendTally tally;
  };
  // Actors run one at a time (SimGrid contexts), so the records need no locks.
  std::vector<Record> records(static_cast<std::size_t>(n));
  // The aggregated mode replays the schedule's phases instead (aggregate.hpp).
  std::unique_ptr<Phases> phases;
  if (use_aggregated(options, n)) phases = std::make_unique<Phases>(phases_of(s));
  Routes routes(hosts);
  for (int r = 0; r < n; ++r)
    sg4::Actor::create(fmt::format("rank{}", r), hosts[static_cast<std::size_t>(r)], [&, r] {
      auto& rec = records[static_cast<std::size_t>(r)];
      RankMailboxes boxes(r);
      if (phases)
        replay_phases(*phases, r, elem_bytes, boxes, rec.tally, routes);
      else
        replay_schedule(s, r, elem_bytes, boxes, rec.tally, options.serialize_exchanges_from);
      rec.end = sg4::Engine::get_clock();
      rec.finished = true;
    });
  engine->run();

  SimStepResult res;
  res.world_size = n;
  res.schedule = s.name;
  res.bytes_sent.resize(static_cast<std::size_t>(n));
  res.ranks.resize(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) {
    const auto& rec = records[static_cast<std::size_t>(r)];
    if (!rec.finished) throw InternalError(fmt::format("rank {} did not finish its schedule (deadlock)", r));
    auto& t = res.ranks[static_cast<std::size_t>(r)];
    t.comm_s = t.exposed_comm_s = t.step_s = rec.end;  // the collective is all there is: nothing hides it
    res.bytes_sent[static_cast<std::size_t>(r)] = rec.tally.bytes;
    res.comms += rec.tally.messages;
    for (const auto& [peer, bytes] : rec.tally.to_peer) res.bytes_between[{r, peer}] = bytes;
    if (rec.end > res.step_s) res.step_s = res.comm_s = res.exposed_comm_s = rec.end;
  }
  return res;
}

}  // namespace ddplab::sim
