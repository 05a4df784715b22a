// Internal: the aggregated execution mode. Consecutive schedule steps in which every rank talks to the same
// set of (peer, direction) pairs merge into one phase. A long phase replays its first 16 (8 once its pace
// has settled) and last 4 steps message by message, as the exact mode does, and skips the steps in between:
// each rank waits for as long as its head's settled steps took each, times the steps skipped (the bytes of
// skipped steps are tallied as if sent). Where every flow of the phase is alike (a ring on a star), one flow
// per pair stands for all its steps. The exact per-message replay (replay.hpp) stays the reference;
// tests/simulator/test_aggregate.cpp checks the two agree.
#pragma once
#include <cstddef>
#include <cstdint>
#include <limits>
#include <map>
#include <tuple>
#include <memory>
#include <string>
#include <unordered_map>
#include <utility>
#include <vector>

#include <simgrid/s4u.hpp>

#include "ddplab/simulator/simulator.hpp"
#include "ddplab/strategies/plan.hpp"
#include "replay.hpp"

namespace ddplab::sim {

struct PhaseFlow {
  int peer = 0;
  std::uint64_t elems = 0;  // summed over the phase's steps
};

// One rank's part of a phase; sends and recvs in the order of the phase's first schedule step.
struct RankPhase {
  std::vector<PhaseFlow> sends, recvs;
  // Each send's elements in each sampled step (the phase's head, then its tail), step-major: sampled[j *
  // sends.size() + i]. Receives need no size: a message's size is the sender's.
  std::vector<std::uint64_t> sampled;
  bool idle() const { return sends.empty() && recvs.empty(); }
};

// A route as the network model sees it: latency as applied (the sum of link latencies x the model's latency
// factor, 13.01 under LV08), its slowest link's bandwidth and its links, looked up once per (src, dst).
// Shared by all actors; they run one at a time, so no locks.
struct Route {
  double latency = 0, bandwidth = 0;
  std::vector<const simgrid::s4u::Link*> links;
};
class Routes {
 public:
  explicit Routes(const std::vector<simgrid::s4u::Host*>& hosts) : hosts_(hosts) {}
  const Route& operator()(int src, int dst);  // valid as long as the Routes

 private:
  const std::vector<simgrid::s4u::Host*>& hosts_;
  std::unordered_map<std::uint64_t, Route> cache_;
  double factor_ = -1;
};

struct Phase {
  int steps = 0;                 // schedule steps merged into this phase
  int head = 0, tail = 0;        // steps replayed message by message at its start and at its end
  std::vector<RankPhase> ranks;  // by rank
  int skipped() const { return steps - head - tail; }
  // True when every send of the phase has a route of the same latency and bandwidth and no two share a link
  // (a ring on a star or full cluster with one device per node): then each step takes every rank the same
  // time, and the phase runs as one flow per pair instead of sampling steps. Computed once, by the first
  // rank that asks.
  bool symmetric(Routes& routes) const;
  // Replay state shared by the ranks (actors run one at a time): when the first rank began skipping.
  mutable double skipping_since = std::numeric_limits<double>::infinity();
  // When the phase's non-idle ranks all talk to each other (directly or through others, as in a ring), waits
  // until all of them have reached the phase; otherwise returns at once. See replay_phases.
  void start_together() const;
  // Head steps every rank replays, decided by the first rank to finish kSettledCheck of them (ends as for
  // skipped_step_time): that many when its pace has settled in a connected phase, else `head`.
  int settled_head(const std::vector<double>& ends) const;

 private:
  mutable int symmetric_ = -1, connected_ = -1, settled_head_ = -1;
  mutable simgrid::s4u::BarrierPtr barrier_;
};

// Steps replayed at each end of a phase of `steps` steps: {head, tail}. A phase too short to skip a step
// replays every step ({steps, 0}).
std::pair<int, int> sampled_steps(int steps);

// Time per skipped step, from one rank's head: ends[0] is the phase's start, ends[j + 1] the end of head
// step j. The mean of the steps from a fourth of the head on (after the transient in which a ring's ranks
// drift into their staggered pace), leaving out steps that ended after `others_skipping_since` (another rank
// of the phase had stopped loading the network, so they ran faster than the exact mode's would) and steps
// over 1.5 times the median (they waited for a late peer, not for the network).
double skipped_step_time(const std::vector<double>& ends, double others_skipping_since);

struct Phases {
  std::string name;
  int world_size = 0;
  std::vector<Phase> phases;
  std::uint64_t exact_messages = 0;  // messages the exact mode would send (all ranks)
  ScheduleTiming timing;             // the schedule's (a backend model's protocol costs)
};

// Phases of a built schedule: steps t and t+1 merge when every rank has the same (peer, direction) set in both.
Phases phases_of(const Schedule& s);

// Phases of the Schedule schedule_for_call(call, schedule, where, native_as) would build. The ring family (ring
// allreduce, reduce-scatter, all-gather) is computed directly, without the n * 2(n-1) steps of the Schedule;
// every other schedule is built once and converted.
Phases phases_for_call(const CollectiveCall& call, const std::string& schedule, const ScheduleParams& where,
                       const NativeReplay& native_as = {});

// Rank `rank`'s part of the phases. A phase that skips no step replays every step as replay_schedule does.
// A symmetric one (Phase::symmetric) runs as one flow per pair. Any other runs its head steps (once every
// rank of a connected phase has arrived; Phase::settled_head may end the head early), waits
// skipped_step_time x the skipped steps, then runs its tail steps. Tallies the same bytes the exact replay
// would; messages only for the flows and steps replayed. Returns bytes sent.
std::uint64_t replay_phases(const Phases& p, int rank, std::size_t elem_bytes, RankMailboxes& boxes, SendTally& tally,
                            Routes& routes);

// The phases of each collective call of a plan, built by the first rank that needs them and freed once every
// rank has replayed them (as plan_replay's ScheduleCache). Actors run one at a time: no locks.
class PhaseCache {
 public:
  PhaseCache(const ScheduleParams& where, NativeReplay native_as) : where_(where), native_as_(std::move(native_as)) {}
  // `plan`: the plan's index in a chain of micro-steps (op ids repeat from one plan to the next).
  const Phases& acquire(std::size_t plan, const PlanOp& op, std::size_t call);
  void release(std::size_t plan, const PlanOp& op, std::size_t call);

 private:
  struct Entry {
    std::unique_ptr<Phases> phases;
    int users_left = 0;
  };
  ScheduleParams where_;
  NativeReplay native_as_;  // what `native` replays as (schedule_for_call)
  std::map<std::tuple<std::size_t, int, std::size_t>, Entry> entries_;
};

// True when options.mode (resolved by simulation_mode) is "aggregated".
bool use_aggregated(const SimOptions& options, int world_size);

}  // namespace ddplab::sim
