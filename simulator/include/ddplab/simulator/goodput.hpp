// Goodput: the training time a strategy needs to reach a target test accuracy at a world size, predicted as
//
//   updates S(B) the strategy needs at that world's global batch B (statistical_efficiency.hpp: the
//   gradient noise scale model, fitted to the strategy's own measured runs, so what a codec or local SGD
//   costs in convergence is measured, not assumed)
//   x the simulated time of each update there (simulate_pattern: the strategy's whole-period plan, its
//   warm-up counted as it runs).
//
// Evaluation is not counted on either side: it is not training, and its cost depends on how often one evaluates.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ddplab/core/scenario.hpp"
#include "ddplab/core/store.hpp"
#include "ddplab/simulator/simulator.hpp"
#include "ddplab/simulator/statistical_efficiency.hpp"

namespace ddplab {

struct GoodputOptions {
  double target = 0;        // test accuracy
  std::vector<int> worlds;  // world sizes to predict
  double fit_below = 0;     // fit only the measured runs at a smaller global batch (0: every run)
  SimOptions sim;           // how each world size is simulated (compute source, network model, ...)
};

struct GoodputWorld {
  int world_size = 0;
  double global_batch = 0;  // the scenario's batch x workers x accumulate_steps
  double updates = 0;       // the fit's S(global_batch)
  double micro_steps = 0;   // updates x accumulate_steps
  double step_s = 0;        // simulated steady time per micro-step
  std::int64_t warmup_steps = 0;
  double warmup_s = 0;       // simulated time of the warm-up micro-steps
  double time_s = 0;         // training_time of micro_steps
  std::int64_t sim_run = 0;  // the simulated run stored for this world size
  // Measured counterparts: completed measured runs at this world size and the scenario's batch that the fit
  // did not use, and which of them reached the target; measured_s is those runs' mean training time to it.
  std::vector<std::int64_t> measured_runs;
  std::vector<std::int64_t> in_fit;  // runs at this world size and batch the fit used (not a validation)
  std::optional<double> measured_s;
};

struct GoodputPrediction {
  std::string strategy;
  NoiseScaleFit fit;
  std::vector<BatchPoint> points;    // the measured runs the fit used
  std::vector<std::int64_t> missed;  // measured runs that never reached the target (not in the fit)
  std::string compute_origin;        // where the simulated compute came from (compute_source.hpp)
  std::vector<GoodputWorld> worlds;
};

// Fits the strategy's statistical efficiency to its measured runs (those below options.fit_below when set),
// simulates each of options.worlds (simulate_sweep: the simulated runs are stored), and combines them.
// Throws InputError when the fit cannot be made (fewer than 3 global batch sizes reached the
// target: the message lists the runs and what to run) or the scenario cannot be predicted (data.uneven = "join":
// the global batch changes within an epoch), and what simulate_sweep throws.
GoodputPrediction predict_goodput(const Scenario&, const StrategyConfig&, Store&, const GoodputOptions&);

// Per world size (in the order predicted), the strategies from the shortest predicted training time to the
// longest: the first is the one `predict` names best. The predictions must cover the same world sizes.
struct WorldRanking {
  int world_size = 0;
  std::vector<std::pair<std::string, double>> by_time;  // strategy, time_s
};
std::vector<WorldRanking> rank_by_world(const std::vector<GoodputPrediction>&);

// Simulated training time of `micro_steps` micro-steps: the warm-up's steps at its own pace, the rest at the
// steady step time (a fraction of the warm-up when the target comes before it ends).
double training_time(const SimPatternResult&, double micro_steps);

// A measured run's training time to the target: the slowest rank's step time summed over the micro-steps
// before steps_to_accuracy (the fractional last one in proportion). nullopt when it never reached the target.
std::optional<double> measured_training_time(const Store&, std::int64_t run, double target);

// The rows `ddplab predict` stores (table predictions), one per world size, with the fit and its points as JSON.
std::vector<PredictionRow> prediction_rows(const Scenario&, const GoodputPrediction&, double target);

}  // namespace ddplab
