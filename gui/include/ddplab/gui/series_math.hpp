// The arithmetic behind the charts, free of Qt so that it is tested against reference formulas:
// TensorBoard's smoothing, the x axes of a training curve, LTTB downsampling and log-axis ranges.
#pragma once
#include <cstddef>
#include <cstdint>
#include <utility>
#include <vector>

#include "ddplab/core/step_totals.hpp"

namespace ddplab::gui {

// TensorBoard's scalar smoothing: an exponential moving average started at 0 and debiased by
// 1 - weight^n (n = finite values so far); non-finite values pass through unchanged and do not count;
// a constant series is returned as it is. weight in [0, 1); 0 returns the input.
std::vector<double> ema_smooth(const std::vector<double>& y, double weight);

// What a training curve is drawn against.
enum class XAxis { Step, Samples, Time };
const char* x_axis_title(XAxis);  // "step", "samples", "training time (s)"

// A measured run's progress after n completed steps (an evaluation stored at step n, or the loss of the
// step stored as n - 1): n itself, the samples of steps 0..n-1 over all ranks, or their training time
// (training_time_through: the slowest rank's step times, evaluation excluded). Fractional n counts
// its last step in proportion, so a time-to-accuracy lands between two evaluations.
class RunProgress {
 public:
  RunProgress() = default;
  explicit RunProgress(const std::vector<StepTotals>& steps);
  double at(XAxis axis, double completed) const;
  double samples_through(double completed) const;
  double time_through(double completed) const;

 private:
  // Cumulative sums after each stored step, ascending by step.
  std::vector<std::int64_t> step_;
  std::vector<double> samples_, time_, step_samples_, step_time_;
  double through(const std::vector<double>& cum, const std::vector<double>& each, double completed) const;
};

// Largest-Triangle-Three-Buckets (Steinarsson 2013): the indices of at most `threshold` points that keep
// a series' shape, always its first and last. x ascending. threshold < 3 or >= size keeps every point.
std::vector<std::size_t> lttb(const std::vector<double>& x, const std::vector<double>& y, std::size_t threshold);

// A log axis range that starts and ends just outside whole powers of `base`, so that the axis, which
// labels only powers strictly inside its range, labels every one of them (at least two). lo, hi > 0.
std::pair<double, double> log_decade_range(double lo, double hi, double base);

}  // namespace ddplab::gui
