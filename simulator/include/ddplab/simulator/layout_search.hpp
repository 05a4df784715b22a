// `ddplab simulate --search`: every [parallel] layout of a world size for a scenario's model and strategy,
// simulated and ranked by throughput, with the device memory each needs (docs/model-parallel.md).
#pragma once
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include "ddplab/core/scenario.hpp"
#include "ddplab/simulator/simulator.hpp"

namespace ddplab {

struct LayoutCandidate {
  ParallelConfig parallel;          // tp, pp, dp, microbatches, the scenario's schedule
  StrategyConfig strategy;          // the one simulated: the search's, or one of its zero_stage_variants
  std::optional<SweepPoint> point;  // its simulation; none when refused
  std::string refused;              // why the model or the strategy does not take this layout
  std::string mode;                 // how it was simulated (simulation_mode): exact, folded, probed, aggregated
};

struct LayoutSearch {
  std::vector<LayoutCandidate> candidates;  // simulated ones by samples/s, fastest first; then the refused
  std::vector<std::string> policies;        // each layout's strategies: the search's, then its ZeRO variants
  double wall_s = 0;
};

// The layouts of `world` ranks: tp dividing cluster.devices_per_node (a TP group inside a node), pp
// dividing world / tp, dp the rest; under pp > 1 the scenario's pipeline schedule (an interleaved one where
// its conditions hold, else skipped) over M = batch / b microbatches for microbatch sizes b = 1, 2, 4, ...
// with M >= pp, and one microbatch without a pipeline. Each is simulated as simulate_point does, on the
// scenario's placement (setup.options.mode "folded" folds the model-parallel ones, pure DP then runs as
// "auto" would; "auto" above kExactMaxLayoutWorld ranks samples every layout, pure DP too).
// progress(done, total) after each.
// zero_stages: each layout under every zero_stage_variants of the strategy too.
LayoutSearch search_layouts(const Scenario& scenario, const StrategyConfig& strategy, int world,
                            const SweepSetup& setup, const std::function<void(int, int)>& progress = {},
                            bool zero_stages = false);

}  // namespace ddplab
