// Internal: the aggregated execution mode. Consecutive schedule steps in which every rank talks to the same
// set of (peer, direction) pairs merge into one phase; a phase runs as one flow per (src, dst) pair carrying
// the summed bytes, plus the latency the exact mode pays for the steps it merged. The exact per-message
// replay (replay.hpp) stays the reference; tests/simulator/test_aggregate.cpp checks the two agree.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
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
  bool idle() const { return sends.empty() && recvs.empty(); }
};

struct Phase {
  int steps = 0;                 // schedule steps merged into this phase
  std::vector<RankPhase> ranks;  // by rank
};

struct Phases {
  std::string name;
  int world_size = 0;
  std::vector<Phase> phases;
  std::uint64_t exact_messages = 0;  // messages the exact mode would send (all ranks)
};

// Phases of a built schedule: steps t and t+1 merge when every rank has the same (peer, direction) set in both.
Phases phases_of(const Schedule& s);

// Phases of the Schedule schedule_for_call(call, schedule, where, "ring") would build. The ring family (ring
// allreduce, reduce-scatter, all-gather) is computed directly, without the n * 2(n-1) steps of the Schedule;
// every other schedule is built once and converted.
Phases phases_for_call(const CollectiveCall& call, const std::string& schedule, const ScheduleParams& where);

// Route latencies as the network model applies them (sum of link latencies x the model's latency factor),
// looked up once per (src, dst). Shared by all actors; they run one at a time, so no locks.
class RouteLatencies {
 public:
  explicit RouteLatencies(const std::vector<simgrid::s4u::Host*>& hosts) : hosts_(hosts) {}
  double operator()(int src, int dst);

 private:
  const std::vector<simgrid::s4u::Host*>& hosts_;
  std::unordered_map<std::uint64_t, double> cache_;
  double factor_ = -1;
};

// Rank `rank`'s part of the phases: per phase, every receive at once and each send after the latency of the
// steps merged away on its route (steps - 1 route latencies), then a wait for all of them. Tallies the same
// bytes the exact replay would. Returns bytes sent.
std::uint64_t replay_phases(const Phases& p, int rank, std::size_t elem_bytes, RankMailboxes& boxes, SendTally& tally,
                            RouteLatencies& latency);

// The phases of each collective call of a plan, built by the first rank that needs them and freed once every
// rank has replayed them (as plan_replay's ScheduleCache). Actors run one at a time: no locks.
class PhaseCache {
 public:
  PhaseCache(const ScheduleParams& where) : where_(where) {}
  const Phases& acquire(const PlanOp& op, std::size_t call);
  void release(const PlanOp& op, std::size_t call);

 private:
  struct Entry {
    std::unique_ptr<Phases> phases;
    int users_left = 0;
  };
  ScheduleParams where_;
  std::map<std::pair<int, std::size_t>, Entry> entries_;
};

// True when options.mode (resolved by simulation_mode) is "aggregated".
bool use_aggregated(const SimOptions& options, int world_size);

}  // namespace ddplab::sim
