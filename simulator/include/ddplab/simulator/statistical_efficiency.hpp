// Statistical efficiency, the first half of a time-to-accuracy prediction (goodput): how many updates a
// strategy needs to reach a target test accuracy at a given global batch, fitted to measured runs with the
// gradient noise scale model of McCandlish et al. 2018 ("An Empirical Model of Large-Batch Training"):
//
//   S(B) = S_min (1 + B_noise / B)
//
// S_min is the updates an infinitely large batch would need, B_noise the batch where doubling it halves
// the updates no more (above it, extra samples buy fewer and fewer updates). Samples then follow
// E(B) = B S(B) = E_min (1 + B / B_noise), with E_min = S_min B_noise.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ddplab/core/scenario.hpp"
#include "ddplab/core/store.hpp"

namespace ddplab {

// One measured run: its global batch per update and the updates it took to reach the target.
struct BatchPoint {
  double global_batch = 0;  // samples per update, over all workers and accumulated micro-steps
  double updates = 0;       // to the target (fractional: interpolated between evaluations)
  std::int64_t run = 0;     // the run it came from (0: not from a store)
  int world_size = 0;       // the run's ranks and samples per worker and micro-step (0: not from a store)
  int batch_per_rank = 0;
};

struct NoiseScaleFit {
  double s_min = 0, b_noise = 0;
  std::size_t points = 0;
  double rms_rel_error = 0, max_rel_error = 0;  // of the fitted updates against each point's, |fit - x| / x
  double updates(double global_batch) const { return s_min * (1.0 + b_noise / global_batch); }
};

// Least squares in relative error (weights 1 / updates^2) of S = S_min + S_min B_noise / B, linear in 1 / B.
// Throws InputError with the points when there are fewer than 3 distinct batch sizes, or when
// they contradict the model: updates that grow with the batch (B_noise < 0) or an S_min of 0 or less.
NoiseScaleFit fit_noise_scale(const std::vector<BatchPoint>& points);

// The micro-step at which a run's test accuracy first reached `target`: linearly interpolated between the
// evaluation before and the first at or above it (the first evaluation's step when it is already there).
// Evaluations ordered by step, as Store::evaluations gives them. nullopt when none reached it.
std::optional<double> steps_to_accuracy(const std::vector<Evaluation>& evaluations, double target);

// The store's completed measured runs of this scenario (by name) and strategy (by name), of the scenario's
// model (runs of another model are passed over), that reached `target`, as points: global batch = batch size x workers
// x accumulate_steps, updates = micro-steps / accumulate_steps. Runs that never reached the target are listed in
// `missed` when given.
std::vector<BatchPoint> measured_batch_points(const Store& store, const Scenario& scenario,
                                              const StrategyConfig& strategy, double target,
                                              std::vector<std::int64_t>* missed = nullptr);

}  // namespace ddplab
