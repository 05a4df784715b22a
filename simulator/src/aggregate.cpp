#include "aggregate.hpp"

#include "ddplab/strategies/nccl_model.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <tuple>
#include <unordered_set>

#include <fmt/format.h>
#include <simgrid/s4u/Barrier.hpp>
#include <xbt/config.hpp>

#include "ddplab/core/stats.hpp"

namespace sg4 = simgrid::s4u;

namespace ddplab::sim {
namespace {

// Steps replayed at the start and at the end of a phase that skips steps. The head must outlast the exact
// mode's transient: a ring's ranks take up to about 10 steps to settle into their staggered pace (measured on
// 16- and 32-rank rings on fat-tree and dragonfly). Fewer made the 16-rank dragonfly ring, whose steps never
// settle, 2.6% (10 + 2) to 7% (12 + 3) off.
constexpr int kHeadSteps = 16;
constexpr int kTailSteps = 4;
// A head step slower than this many times the median waited for a late peer, not for the network.
constexpr double kLateStep = 1.5;
// After this many head steps, a connected phase whose pace has settled (the last half of those steps spread
// by at most kSettled of their mean) ends its head there: 12 messages per rank instead of 20 where a ring's
// pace is steady early (the DGX H100 fat-tree). It changed no comparison of the agreement test by more than
// 0.001%; unsettled rings (the dragonfly's) keep the whole head.
constexpr int kSettledCheck = 8;
constexpr double kSettled = 0.002;

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

// Adds a step's sends to the phase's flows and appends the step's row to `sampled`, in the phase's flow order.
void add_sends(RankPhase& into, const std::vector<std::uint32_t>& into_i, const std::vector<PhaseFlow>& step,
               const std::vector<std::uint32_t>& step_i) {
  const std::size_t row = into.sampled.size();
  into.sampled.resize(row + into.sends.size());
  for (std::size_t k = 0; k < into_i.size(); ++k) {
    into.sends[into_i[k]].elems += step[step_i[k]].elems;
    into.sampled[row + into_i[k]] = step[step_i[k]].elems;
  }
}

void add_recvs(std::vector<PhaseFlow>& into, const std::vector<std::uint32_t>& into_i,
               const std::vector<PhaseFlow>& step, const std::vector<std::uint32_t>& step_i) {
  for (std::size_t k = 0; k < into_i.size(); ++k) into[into_i[k]].elems += step[step_i[k]].elems;
}

// Keeps only the sampled rows (head and tail) of a phase whose `sampled` holds every step's row.
void keep_samples(Phase& ph) {
  std::tie(ph.head, ph.tail) = sampled_steps(ph.steps);
  if (ph.skipped() == 0) return;
  for (RankPhase& rp : ph.ranks) {
    const auto w = static_cast<std::ptrdiff_t>(rp.sends.size());
    rp.sampled.erase(rp.sampled.begin() + ph.head * w, rp.sampled.end() - ph.tail * w);
    rp.sampled.shrink_to_fit();
  }
}

// Ring allreduce / reduce-scatter / all-gather over all n ranks (ring.cpp, ring_shards.cpp): every step each
// rank sends to its successor and receives from its predecessor, so the whole collective is one phase. Over
// the steps rank r sends every chunk but one (allreduce: every chunk but one in each half); in step k it sends
// the chunk those files name.
Phases ring_phases(Collective collective, int n, std::size_t count) {
  Phases p{"ring", n, {}, 0, {}};
  if (n < 2) return p;
  auto c = [&](int i) -> std::uint64_t { return chunk_of(count, n, ((i % n) + n) % n).count; };
  auto sent_in = [&](int r, int k) -> std::uint64_t {
    if (collective == Collective::Allreduce) return k < n - 1 ? c(r - k) : c(r + 1 - (k - (n - 1)));
    if (collective == Collective::ReduceScatter) return c(r - k - 1);
    return c(r - k);  // all_gather
  };
  auto sent = [&](int r) -> std::uint64_t {
    if (collective == Collective::Allreduce) return 2 * static_cast<std::uint64_t>(count) - c(r + 1) - c(r + 2);
    if (collective == Collective::ReduceScatter) return count - c(r);
    return count - c(r + 1);  // all_gather
  };
  Phase ph;
  ph.steps = collective == Collective::Allreduce ? 2 * (n - 1) : n - 1;
  std::tie(ph.head, ph.tail) = sampled_steps(ph.steps);
  ph.ranks.resize(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) {
    auto& rp = ph.ranks[static_cast<std::size_t>(r)];
    rp.sends.push_back({(r + 1) % n, sent(r)});
    rp.recvs.push_back({(r + n - 1) % n, sent((r + n - 1) % n)});
    for (int k = 0; k < ph.head; ++k) rp.sampled.push_back(sent_in(r, k));
    for (int k = ph.steps - ph.tail; k < ph.steps; ++k) rp.sampled.push_back(sent_in(r, k));
  }
  p.exact_messages = static_cast<std::uint64_t>(n) * static_cast<std::uint64_t>(ph.steps);
  p.phases.push_back(std::move(ph));
  return p;
}

// NCCL's ring with one channel per NIC, built directly as ring_phases is: each ring step of a rank split
// between two peers as nccl_ring_peers says.
Phases nccl_ring_phases(const NcclFabric& f, Collective collective, int n, std::size_t count) {
  Phases plain = ring_phases(collective, n, count);
  if (plain.phases.empty() || nccl_ring_peers(f, n, 0).stripes <= 1) return plain;
  Phase& ph = plain.phases.front();
  const std::uint64_t base = count / static_cast<std::size_t>(n);
  for (int r = 0; r < n; ++r) {
    RankPhase& rp = ph.ranks[static_cast<std::size_t>(r)];
    const NcclRingPeers to = nccl_ring_peers(f, n, r);
    // The ring's steps carry chunks of base or base + 1 elements: `big` of them are base + 1.
    const std::uint64_t total = rp.sends.front().elems, big = total - base * static_cast<std::uint64_t>(ph.steps);
    const std::uint64_t across =
        big * to.across(base + 1) + (static_cast<std::uint64_t>(ph.steps) - big) * to.across(base);
    rp.sends = {{to.intra, total - across}, {to.inter, across}};
    std::vector<std::uint64_t> sampled;
    for (std::uint64_t c : rp.sampled) {
      sampled.push_back(c - to.across(c));
      sampled.push_back(to.across(c));
    }
    rp.sampled = std::move(sampled);
  }
  for (int r = 0; r < n; ++r) ph.ranks[static_cast<std::size_t>(r)].recvs.clear();
  for (int r = 0; r < n; ++r)
    for (const PhaseFlow& f : ph.ranks[static_cast<std::size_t>(r)].sends)
      ph.ranks[static_cast<std::size_t>(f.peer)].recvs.push_back({r, f.elems});
  plain.exact_messages *= 2;
  return plain;
}

}  // namespace

Phases phases_of(const Schedule& s) {
  const int n = s.world_size;
  Phases p{s.name, n, {}, 0, s.timing};
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
        add_sends(ph.ranks[ri], order[ri].sends, step_flows[ri].sends, step_order[ri].sends);
        add_recvs(ph.ranks[ri].recvs, order[ri].recvs, step_flows[ri].recvs, step_order[ri].recvs);
      }
    } else {
      if (!p.phases.empty()) keep_samples(p.phases.back());
      Phase& ph = p.phases.emplace_back();
      ph.steps = ph.head = 1;
      ph.ranks = step_flows;
      for (RankPhase& rp : ph.ranks)
        for (const PhaseFlow& f : rp.sends) rp.sampled.push_back(f.elems);
      order.swap(step_order);
    }
  }
  if (!p.phases.empty()) keep_samples(p.phases.back());
  return p;
}

Phases phases_for_call(const CollectiveCall& call, const std::string& schedule, const ScheduleParams& where,
                       const NativeReplay& native_as) {
  // The same choice of schedule and count as schedule_for_call (plan.cpp).
  const int n = where.world_size;
  if (call.collective == Collective::Push || call.collective == Collective::Pull)
    return phases_of(schedule_for_call(call, schedule, where, native_as));
  const CallShape shape = call_shape(call, n);
  if (is_backend_native(schedule) && native_as.transport == Transport::Nccl && where.nccl) {
    // NCCL's ring is built directly (at 16384 ranks its Schedule would not fit); its other algorithms have
    // few steps.
    const NcclChoice c = nccl_choose(*where.nccl, shape.collective, n, shape.count * elem_bytes(call.type));
    if (c.algorithm != "ring") return phases_of(schedule_for_call(call, schedule, where, native_as));
    Phases p = nccl_ring_phases(*where.nccl, shape.collective, n, shape.count);
    p.name = "nccl:ring/" + c.protocol;
    p.timing = nccl_timing(*where.nccl, c, shape.collective, n, p.phases.empty() ? 0 : p.phases.front().steps,
                           shape.count * elem_bytes(call.type));
    return p;
  }
  // The shard rings (ring_shards.cpp) leave out empty chunks: with fewer elements than ranks, build them.
  const bool shards = call.collective != Collective::Allreduce;
  if (schedule_name_for_call(call, schedule, n, native_as) == "ring" &&
      (!shards || shape.count >= static_cast<std::size_t>(n)))
    return ring_phases(shape.collective, n, shape.count);
  return phases_of(schedule_for_call(call, schedule, where, native_as));
}

std::pair<int, int> sampled_steps(int steps) {
  if (steps <= kHeadSteps + kTailSteps) return {steps, 0};
  return {kHeadSteps, kTailSteps};
}

double skipped_step_time(const std::vector<double>& ends, double others_skipping_since) {
  const int head = static_cast<int>(ends.size()) - 1;
  int last = head;  // steps [first, last) are the window
  while (last > 0 && ends[static_cast<std::size_t>(last)] > others_skipping_since) --last;
  int first = std::max(1, last - (head - head / 4));
  if (last - first < std::max(1, head / 4)) {
    // This rank started its head long after others (a late rank's neighbours run ahead of it by up to a step
    // per hop): the steps others' skipping sped up are all it has.
    first = std::min(head - 1, head / 4);
    last = head;
  }
  std::vector<double> d;
  for (int j = std::max(first, 0); j < last; ++j)
    d.push_back(ends[static_cast<std::size_t>(j) + 1] - ends[static_cast<std::size_t>(j)]);
  const double mid = median(d);
  double sum = 0;
  int kept = 0;
  for (double x : d)
    if (x <= kLateStep * mid) {
      sum += x;
      ++kept;
    }
  return sum / kept;  // the median itself is always kept
}

const Route& Routes::operator()(int src, int dst) {
  // LV08 applies network/latency-factor (13.01) to the route's latency; CM02 has factor 1.
  if (factor_ < 0) factor_ = simgrid::config::get_value<double>("network/latency-factor");
  const std::uint64_t key =
      (static_cast<std::uint64_t>(static_cast<std::uint32_t>(src)) << 32) | static_cast<std::uint32_t>(dst);
  auto it = cache_.find(key);
  if (it != cache_.end()) return it->second;
  std::vector<sg4::Link*> links;
  double latency = 0;
  hosts_.at(static_cast<std::size_t>(src))->route_to(hosts_.at(static_cast<std::size_t>(dst)), links, &latency);
  Route& route = cache_[key];
  route.latency = latency * factor_;
  route.bandwidth = std::numeric_limits<double>::infinity();
  for (const sg4::Link* l : links) route.bandwidth = std::min(route.bandwidth, l->get_bandwidth());
  route.links.assign(links.begin(), links.end());
  return route;
}

bool Phase::symmetric(Routes& routes) const {
  if (symmetric_ < 0) {
    symmetric_ = 1;
    const Route* first = nullptr;
    std::unordered_set<const sg4::Link*> used;
    for (std::size_t r = 0; r < ranks.size() && symmetric_; ++r)
      for (const PhaseFlow& f : ranks[r].sends) {
        const Route& route = routes(static_cast<int>(r), f.peer);
        if (!first) first = &route;
        bool alike = route.latency == first->latency && route.bandwidth == first->bandwidth;
        for (const sg4::Link* l : route.links) alike = alike && used.insert(l).second;
        if (!alike) {
          symmetric_ = 0;
          break;
        }
      }
  }
  return symmetric_ == 1;
}

int Phase::settled_head(const std::vector<double>& ends) const {
  if (settled_head_ < 0) {
    // Decided once, by the first rank to get here, for every rank (each must replay as many steps as its
    // peers): only a connected phase, whose ranks started together, and only when this rank's last steps
    // took the same time to within kSettled.
    settled_head_ = head;
    const std::size_t n = ends.size() - 1;
    if (connected_ == 1 && n >= 4) {
      double lo = std::numeric_limits<double>::infinity(), hi = 0, sum = 0;
      for (std::size_t j = n / 2; j < n; ++j) {
        const double d = ends[j + 1] - ends[j];
        lo = std::min(lo, d);
        hi = std::max(hi, d);
        sum += d;
      }
      if (hi - lo <= kSettled * sum / static_cast<double>(n - n / 2)) settled_head_ = static_cast<int>(n);
    }
  }
  return settled_head_;
}

void Phase::start_together() const {
  if (connected_ < 0) {
    // Union-find over the phase's flows: connected when every non-idle rank is in one group.
    std::vector<int> parent(ranks.size());
    for (std::size_t r = 0; r < parent.size(); ++r) parent[r] = static_cast<int>(r);
    auto find = [&](int x) {
      while (parent[static_cast<std::size_t>(x)] != x)
        x = parent[static_cast<std::size_t>(x)] = parent[static_cast<std::size_t>(parent[static_cast<std::size_t>(x)])];
      return x;
    };
    for (std::size_t r = 0; r < ranks.size(); ++r)
      for (const PhaseFlow& f : ranks[r].sends) {
        const int a = find(static_cast<int>(r)), b = find(f.peer);
        if (a != b) parent[static_cast<std::size_t>(std::max(a, b))] = std::min(a, b);
      }
    int root = -1;
    unsigned active = 0;
    connected_ = 1;
    for (std::size_t r = 0; r < ranks.size(); ++r) {
      if (ranks[r].idle()) continue;
      ++active;
      const int g = find(static_cast<int>(r));
      if (root < 0) root = g;
      if (g != root) connected_ = 0;
    }
    if (connected_) barrier_ = sg4::Barrier::create(active);
  }
  if (connected_) barrier_->wait();
}

std::uint64_t replay_phases(const Phases& p, int rank, std::size_t elem_bytes, RankMailboxes& boxes, SendTally& tally,
                            Routes& routes) {
  std::vector<sg4::CommPtr> comms;
  std::vector<int*> sinks;
  std::vector<double> ends;
  std::uint64_t sent = 0;
  SendWindow window(p.timing.pipeline_depth);
  if (p.timing.start_s > 0) sg4::this_actor::sleep_for(p.timing.start_s);
  for (const Phase& ph : p.phases) {
    const RankPhase& rp = ph.ranks[static_cast<std::size_t>(rank)];
    if (rp.idle()) continue;  // an idle step costs nothing in the exact mode either
    const std::size_t w = rp.sends.size();
    const double step_delay = p.timing.step_delay(rank, rp.sends);
    auto send = [&](std::size_t i, std::uint64_t elems) {
      const std::uint64_t bytes = elems * elem_bytes;
      comms.push_back(boxes.send(rp.sends[i].peer, bytes, tally, p.timing.wire_factor));
      sent += bytes;
    };
    auto post_recvs = [&] {
      sinks.assign(rp.recvs.size(), nullptr);  // sized before any get_async points into it
      for (std::size_t i = 0; i < rp.recvs.size(); ++i)
        comms.push_back(boxes.from(rp.recvs[i].peer)->get_async<int>(&sinks[i]));
    };
    comms.clear();
    if (ph.skipped() > 0 && ph.symmetric(routes)) {
      // Every flow alike: each step takes every rank the same time, so one flow per pair with the phase's
      // bytes, started after the latencies of the steps it stands for but one, takes the steps' time.
      post_recvs();
      sg4::this_actor::sleep_for((ph.steps - 1) * routes(rank, rp.sends.front().peer).latency + ph.steps * step_delay);
      for (std::size_t i = 0; i < w; ++i) send(i, rp.sends[i].elems);
      sg4::Comm::wait_all(comms);
      continue;
    }
    // A sampled step, as replay_schedule runs a schedule step: every send, every receive, wait for all.
    auto replay_step = [&](int j) {
      if (step_delay > 0) sg4::this_actor::sleep_for(step_delay);
      comms.clear();
      for (std::size_t i = 0; i < w; ++i) send(i, rp.sampled[static_cast<std::size_t>(j) * w + i]);
      std::vector<sg4::CommPtr> sends;
      if (!window.lock_step()) sends.swap(comms);  // a pipelined schedule's sends stay in flight (SendWindow)
      post_recvs();
      sg4::Comm::wait_all(comms);
      if (!window.lock_step()) window.add(std::move(sends));
    };
    // Ranks reach a collective at different times (a DDP bucket starts when the previous one ends there). In
    // the exact mode a late rank holds back its neighbours one hop per step, so within the phase every rank of
    // a ring ends up paced from the last arrival; a head only 16 steps long sees part of that wave and would
    // read it as a slower pace. So a connected phase starts its head when its last rank arrives. Phases of
    // several independent groups (the hierarchical schedule's inter-node rings) do not wait: their groups
    // start at offsets that load shared links, and holding each group's early ranks back would misread that
    // load. docs/simulation.md gives the agreement with the exact mode either way.
    if (ph.skipped() > 0) ph.start_together();
    ends.assign(1, sg4::Engine::get_clock());
    int head = ph.head;
    for (int j = 0; j < head; ++j) {
      replay_step(j);
      ends.push_back(sg4::Engine::get_clock());
      if (j + 1 == kSettledCheck && ph.skipped() > 0) head = ph.settled_head(ends);
    }
    if (ph.skipped() > 0) {  // wait out the skipped steps at the head's pace
      const double step_time = skipped_step_time(ends, ph.skipping_since);
      ph.skipping_since = std::min(ph.skipping_since, sg4::Engine::get_clock());
      sg4::this_actor::sleep_for(step_time * (ph.steps - head - ph.tail));
      for (std::size_t i = 0; i < w; ++i) {  // the skipped steps' bytes: the phase's minus those replayed
        std::uint64_t elems = rp.sends[i].elems;
        for (int j = 0; j < head; ++j) elems -= rp.sampled[static_cast<std::size_t>(j) * w + i];
        for (int j = ph.head; j < ph.head + ph.tail; ++j) elems -= rp.sampled[static_cast<std::size_t>(j) * w + i];
        sent += elems * elem_bytes;
        tally.to_peer[boxes.global(rp.sends[i].peer)] += elems * elem_bytes;
      }
    }
    for (int j = ph.head; j < ph.head + ph.tail; ++j) replay_step(j);
  }
  window.drain();
  tally.bytes += sent;
  return sent;
}

const Phases& PhaseCache::acquire(std::size_t plan, const PlanOp& op, std::size_t call) {
  Entry& e = entries_[{plan, op.id, call}];
  if (!e.phases) {
    e.phases = std::make_unique<Phases>(phases_for_call(op.calls[call], op.schedule, where_, native_as_));
    e.users_left = where_.world_size;
  }
  return *e.phases;
}

void PhaseCache::release(std::size_t plan, const PlanOp& op, std::size_t call) {
  auto it = entries_.find({plan, op.id, call});
  if (--it->second.users_left == 0) it->second.phases.reset();
}

bool use_aggregated(const SimOptions& options, int world_size) {
  return simulation_mode(options, world_size) == "aggregated";
}

}  // namespace ddplab::sim
