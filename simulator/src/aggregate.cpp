#include "aggregate.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>
#include <xbt/config.hpp>

namespace sg4 = simgrid::s4u;

namespace ddplab::sim {
namespace {

// Flows carry no data, only a simulated size; every send points at this.
int g_payload = 0;

// Indices of `flows` ordered by peer (a schedule has at most one send, and one receive, per pair and step).
std::vector<std::uint32_t> by_peer(const std::vector<PhaseFlow>& flows) {
  std::vector<std::uint32_t> idx(flows.size());
  for (std::uint32_t i = 0; i < idx.size(); ++i) idx[i] = i;
  std::sort(idx.begin(), idx.end(), [&](std::uint32_t a, std::uint32_t b) { return flows[a].peer < flows[b].peer; });
  return idx;
}

bool same_peers(const std::vector<PhaseFlow>& a, const std::vector<std::uint32_t>& ai, const std::vector<PhaseFlow>& b,
                const std::vector<std::uint32_t>& bi) {
  if (a.size() != b.size()) return false;
  for (std::size_t k = 0; k < ai.size(); ++k)
    if (a[ai[k]].peer != b[bi[k]].peer) return false;
  return true;
}

void add_elems(std::vector<PhaseFlow>& into, const std::vector<std::uint32_t>& into_i, const std::vector<PhaseFlow>& step,
               const std::vector<std::uint32_t>& step_i) {
  for (std::size_t k = 0; k < into_i.size(); ++k) into[into_i[k]].elems += step[step_i[k]].elems;
}

// Ring allreduce / reduce-scatter / all-gather over all n ranks (ring.cpp, ring_shards.cpp): every step each
// rank sends to its successor and receives from its predecessor, so the whole collective is one phase. Over
// the steps rank r sends every chunk but one (allreduce: every chunk but one in each half).
Phases ring_phases(const std::string& collective, int n, std::size_t count) {
  Phases p{"ring", n, {}, 0};
  if (n < 2) return p;
  auto c = [&](int i) -> std::uint64_t { return chunk_of(count, n, ((i % n) + n) % n).count; };
  auto sent = [&](int r) -> std::uint64_t {
    if (collective == "allreduce") return 2 * static_cast<std::uint64_t>(count) - c(r + 1) - c(r + 2);
    if (collective == "reduce_scatter") return count - c(r);
    return count - c(r + 1);  // all_gather
  };
  Phase ph;
  ph.steps = collective == "allreduce" ? 2 * (n - 1) : n - 1;
  ph.ranks.resize(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) {
    auto& rp = ph.ranks[static_cast<std::size_t>(r)];
    rp.sends.push_back({(r + 1) % n, sent(r)});
    rp.recvs.push_back({(r + n - 1) % n, sent((r + n - 1) % n)});
  }
  p.exact_messages = static_cast<std::uint64_t>(n) * static_cast<std::uint64_t>(ph.steps);
  p.phases.push_back(std::move(ph));
  return p;
}

}  // namespace

Phases phases_of(const Schedule& s) {
  const int n = s.world_size;
  Phases p{s.name, n, {}, 0};
  const std::size_t steps = s.ranks.empty() ? 0 : s.ranks.front().size();
  // Flows keep the schedule's order, which the replay posts them in: SimGrid's outcome can depend on the order
  // of simultaneous sends (a double binary tree on a torus moved 6.5% when one rank's sends were reordered), so
  // a step that merges with nothing must replay exactly as the exact mode does. Peers are compared in sorted
  // order through index arrays (`order` for the current phase, `step_order` for this step).
  std::vector<RankPhase> step_flows(static_cast<std::size_t>(n));
  struct Order {
    std::vector<std::uint32_t> sends, recvs;
  };
  std::vector<Order> order(static_cast<std::size_t>(n)), step_order(static_cast<std::size_t>(n));
  for (std::size_t t = 0; t < steps; ++t) {
    for (int r = 0; r < n; ++r) {
      const auto ri = static_cast<std::size_t>(r);
      const ScheduleStep& st = s.ranks[ri].at(t);
      RankPhase& f = step_flows[ri];
      f.sends.clear();
      f.recvs.clear();
      for (const auto& op : st.sends) f.sends.push_back({op.peer, op.chunk.count});
      for (const auto& op : st.recvs) f.recvs.push_back({op.peer, op.chunk.count});
      step_order[ri] = {by_peer(f.sends), by_peer(f.recvs)};
      p.exact_messages += f.sends.size();
    }
    // Merge into the current phase only when every rank keeps its set of (peer, direction) pairs.
    bool merge = !p.phases.empty();
    for (int r = 0; merge && r < n; ++r) {
      const auto ri = static_cast<std::size_t>(r);
      const RankPhase& cur = p.phases.back().ranks[ri];
      merge = same_peers(cur.sends, order[ri].sends, step_flows[ri].sends, step_order[ri].sends) &&
              same_peers(cur.recvs, order[ri].recvs, step_flows[ri].recvs, step_order[ri].recvs);
    }
    if (merge) {
      Phase& ph = p.phases.back();
      ++ph.steps;
      for (int r = 0; r < n; ++r) {
        const auto ri = static_cast<std::size_t>(r);
        add_elems(ph.ranks[ri].sends, order[ri].sends, step_flows[ri].sends, step_order[ri].sends);
        add_elems(ph.ranks[ri].recvs, order[ri].recvs, step_flows[ri].recvs, step_order[ri].recvs);
      }
    } else {
      p.phases.push_back({1, step_flows});
      order.swap(step_order);
    }
  }
  return p;
}

Phases phases_for_call(const CollectiveCall& call, const std::string& schedule, const ScheduleParams& where) {
  // The same choice of schedule and count as schedule_for_call (plan.cpp), with native replayed as ring.
  const int n = where.world_size;
  const std::string name = schedule == "native" ? "ring" : schedule;
  const bool gather = call.collective == "all_gather" || call.collective == "all_gather_shards";
  const bool ring_family = call.collective == "allreduce" || call.collective == "reduce_scatter" || gather;
  if (ring_family) {
    const std::string chosen = gather && !has_schedule(name, "all_gather") ? "ring" : name;
    const std::size_t count = call.collective == "all_gather" ? call.count * static_cast<std::size_t>(n) : call.count;
    // The shard rings (ring_shards.cpp) leave out empty chunks: with fewer elements than ranks, build them.
    const bool shards = call.collective != "allreduce";
    if (chosen == "ring" && (!shards || count >= static_cast<std::size_t>(n)))
      return ring_phases(gather ? "all_gather" : call.collective, n, count);
  }
  return phases_of(schedule_for_call(call, schedule, where, "ring"));
}

double RouteLatencies::operator()(int src, int dst) {
  // LV08 applies network/latency-factor (13.01) to the route's latency; CM02 has factor 1.
  if (factor_ < 0) factor_ = simgrid::config::get_value<double>("network/latency-factor");
  const std::uint64_t key = (static_cast<std::uint64_t>(static_cast<std::uint32_t>(src)) << 32) |
                            static_cast<std::uint32_t>(dst);
  auto it = cache_.find(key);
  if (it != cache_.end()) return it->second;
  std::vector<sg4::Link*> links;
  double latency = 0;
  hosts_.at(static_cast<std::size_t>(src))->route_to(hosts_.at(static_cast<std::size_t>(dst)), links, &latency);
  return cache_[key] = latency * factor_;
}

std::uint64_t replay_phases(const Phases& p, int rank, std::size_t elem_bytes, RankMailboxes& boxes, SendTally& tally,
                            RouteLatencies& latency) {
  std::vector<sg4::CommPtr> comms;
  std::vector<int*> sinks;
  std::vector<std::pair<double, std::size_t>> delays;  // (delay, send index)
  std::uint64_t sent = 0;
  for (const Phase& ph : p.phases) {
    const RankPhase& rp = ph.ranks[static_cast<std::size_t>(rank)];
    if (rp.idle()) continue;  // an idle step costs nothing in the exact mode either
    comms.clear();
    sinks.assign(rp.recvs.size(), nullptr);
    auto post_recvs = [&] {
      for (std::size_t i = 0; i < rp.recvs.size(); ++i)
        comms.push_back(boxes.from(rp.recvs[i].peer)->get_async<int>(&sinks[i]));
    };
    auto post_send = [&](const PhaseFlow& f) {
      const std::uint64_t bytes = f.elems * elem_bytes;
      comms.push_back(boxes.to(f.peer)->put_async(&g_payload, bytes));
      sent += bytes;
      tally.to_peer[f.peer] += bytes;
      ++tally.messages;
    };
    if (ph.steps == 1) {  // one schedule step: exactly as replay_schedule posts it
      for (const PhaseFlow& f : rp.sends) post_send(f);
      post_recvs();
      sg4::Comm::wait_all(comms);
      continue;
    }
    // Receives are posted at once; each send waits out the latency of the steps merged away on its own route
    // (steps - 1 route latencies), then its flow pays the last one. Flows on routes of different latency thus
    // keep the exact mode's offsets instead of all competing for shared links from the same instant.
    post_recvs();
    delays.clear();
    for (std::size_t i = 0; i < rp.sends.size(); ++i) delays.emplace_back((ph.steps - 1) * latency(rank, rp.sends[i].peer), i);
    std::sort(delays.begin(), delays.end());  // ties keep the schedule's order
    const double start = sg4::Engine::get_clock();
    for (const auto& [delay, i] : delays) {
      const double wait = start + delay - sg4::Engine::get_clock();
      if (wait > 0) sg4::this_actor::sleep_for(wait);
      post_send(rp.sends[i]);
    }
    sg4::Comm::wait_all(comms);
  }
  tally.bytes += sent;
  return sent;
}

const Phases& PhaseCache::acquire(const PlanOp& op, std::size_t call) {
  Entry& e = entries_[{op.id, call}];
  if (!e.phases) {
    e.phases = std::make_unique<Phases>(phases_for_call(op.calls[call], op.schedule, where_));
    e.users_left = where_.world_size;
  }
  return *e.phases;
}

void PhaseCache::release(const PlanOp& op, std::size_t call) {
  auto it = entries_.find({op.id, call});
  if (--it->second.users_left == 0) it->second.phases.reset();
}

bool use_aggregated(const SimOptions& options, int world_size) {
  return simulation_mode(options, world_size) == "aggregated";
}

}  // namespace ddplab::sim
