// Simulator: executes the same collective Schedule the runtime runs, as SimGrid 3.32 S4U activities on a
// modelled cluster, so that a step can be predicted for world sizes larger than the hardware at hand.
//
// Every simulation runs in a forked child process: SimGrid's engine cannot be re-created in one process
// (3.32 keeps the clock and refuses model changes on a second Engine), so this header never exposes SimGrid
// and the calling process never touches it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "ddplab/core/scenario.hpp"
#include "ddplab/strategies/schedule.hpp"

namespace ddplab {

class Store;

struct SimOptions {
  std::string network_model = "LV08";  // SimGrid network/model: "LV08" (realistic TCP factors) or "CM02" (pure alpha-beta)
  bool crosstraffic = true;            // network/crosstraffic: TCP acks load the reverse path
  bool verbose = false;                // keep SimGrid's own log output (silenced by default)
  // SimGrid surf/precision (s): events closer than this are handled as one. 0 = automatic, 1% of the link
  // latency (at least SimGrid's 1e-9 s); see sim::time_precision_for for why.
  double time_precision_s = 0;
};

// Times of one rank in one simulated step, in simulated seconds.
struct SimRankTimes {
  double compute_s = 0, comm_s = 0, exposed_comm_s = 0, optimizer_s = 0, step_s = 0;
};

struct SimStepResult {
  int world_size = 0;
  // The slowest rank's times (the rank whose step ended last); compute_s + comm_s + optimizer_s == step_s.
  double step_s = 0, compute_s = 0, comm_s = 0, exposed_comm_s = 0, optimizer_s = 0;
  std::vector<std::uint64_t> bytes_sent;                   // per rank
  std::map<std::pair<int, int>, std::uint64_t> bytes_between;  // (src, dst) -> bytes
  double wall_s = 0;                                       // simulator wall time (fork to result)
  std::uint64_t comms = 0;                                 // messages simulated
  std::vector<SimRankTimes> ranks;                         // per rank
  std::string schedule;                                    // the schedule actually replayed ("ring", ...)
};

// Elements of the flat gradient buffer are float32.
inline constexpr std::size_t kGradientElemBytes = 4;

// Simulates one baseline-policy ("flat") DDP step for the given world size, in a child process:
// Exec(compute_s), then the allreduce of the flat gradient buffer with the strategy's schedule, then
// Exec(optimizer_s). Schedule "native" is replayed as "ring" (MPI's own algorithm is unknown here).
// Throws std::invalid_argument for an unsupported policy, schedule or topology, std::runtime_error when
// the simulation fails (the message names the world size).
SimStepResult simulate_step(const Scenario&, const StrategyConfig&, int world_size, double compute_s, double optimizer_s,
                            const SimOptions& = {});

// Simulates just one Schedule on the cluster's platform (world size = schedule.world_size), in a child
// process. step_s = comm_s = the collective time (max over ranks of end - start); byte records as above.
SimStepResult simulate_schedule(const ClusterConfig&, const Schedule&, std::size_t elem_bytes, const SimOptions& = {});

struct SweepPoint {
  int world_size = 0;
  SimStepResult result;
  double samples_per_s = 0;  // world * batch / step_s
  double efficiency = 0;     // samples_per_s / (world * batch / (compute_s + optimizer_s))
  std::int64_t run_id = 0;   // the simulated run written to the store
};

struct ComputeSource {
  double compute_s = 0, optimizer_s = 0;
  std::string origin;  // "measured run #12" or "scenario [cluster].compute_s"
};

// Compute and optimizer time per step: the means of the latest completed measured run of this
// scenario + strategy in the store; otherwise the scenario's [cluster].compute_s / optimizer_s
// (optimizer_s defaults to 0); otherwise std::runtime_error explaining both options.
ComputeSource compute_source(const Scenario&, const StrategyConfig&, const Store&);

// Runs simulate_step for each world size and writes each as a completed run (source "simulated",
// backend "simgrid", one step row per rank). Points already written stay when a later one fails
// (the exception propagates). progress(done, total) is called after each point when given.
std::vector<SweepPoint> simulate_sweep(const Scenario&, const StrategyConfig&, const std::vector<int>& worlds, Store&,
                                       const SimOptions& = {}, std::function<void(int, int)> progress = {});

}  // namespace ddplab
