// The one definition of a run's throughput and per-step means, shared by the results store's summaries
// (report, GUI), `ddplab simulate` and `ddplab validate`: a step collapsed over ranks is paced by its
// slowest rank, samples add up over ranks, and a window's samples/s is its samples over the sum of its
// steps' slowest times. Time parts (compute, comm, exposed comm, optimizer) and bytes are means over the
// window's steps and ranks.
#pragma once
#include <cstdint>
#include <limits>
#include <vector>

#include "ddplab/core/step_pattern.hpp"
#include "ddplab/core/store.hpp"

namespace ddplab {

// One step of a run, collapsed over its ranks.
struct StepTotals {
  std::int64_t step = 0;
  int ranks = 0;
  double slowest_s = 0;                                                                   // the slowest rank's step_s
  double samples = 0;                                                                     // summed over ranks
  double compute_s = 0, comm_s = 0, exposed_comm_s = 0, optimizer_s = 0, bytes_sent = 0;  // summed over ranks
  // How many times a run goes through this step: 1 for a measured step, a warm-up segment's repeats for
  // the one simulated block that stands for all of them.
  double weight = 1;
  double mean_loss = std::numeric_limits<double>::quiet_NaN();  // over the ranks with a finite loss; NaN: none
};

struct WindowTotals {
  double steps = 0;   // weighted
  double time_s = 0;  // sum of the slowest ranks' step times
  double samples = 0;
  double rank_steps = 0;                                                                  // steps x ranks, weighted
  double compute_s = 0, comm_s = 0, exposed_comm_s = 0, optimizer_s = 0, bytes_sent = 0;  // sums over ranks and steps

  void add(const StepTotals& s) {
    steps += s.weight;
    time_s += s.weight * s.slowest_s;
    samples += s.weight * s.samples;
    rank_steps += s.weight * s.ranks;
    compute_s += s.weight * s.compute_s;
    comm_s += s.weight * s.comm_s;
    exposed_comm_s += s.weight * s.exposed_comm_s;
    optimizer_s += s.weight * s.optimizer_s;
    bytes_sent += s.weight * s.bytes_sent;
  }
  double samples_per_s() const { return time_s > 0 ? samples / time_s : 0.0; }
  double step_s() const { return steps > 0 ? time_s / steps : 0.0; }  // mean of the slowest ranks' step times
  // Means per step and rank.
  double mean(double sum) const { return rank_steps > 0 ? sum / rank_steps : 0.0; }
};

// Rows of any order collapsed into one StepTotals per step, ascending by step.
std::vector<StepTotals> step_totals(const std::vector<StepMetrics>& rows);

// A run's steady state and what comes before it, as RunSummary defines them: with a pattern, a simulated
// run's steady block (its warm-up blocks weighted by their segments' repeats) or a measured run's whole
// steady blocks after the warm-up and its first step, at least skip_steps in; without one, every step after
// the first skip_steps (the last step always counts). `steps` ascending by step.
struct RunWindows {
  WindowTotals steady, warmup;
  std::int64_t skipped = 0;  // steps before the steady window
};
RunWindows run_windows(std::vector<StepTotals> steps, const StepPattern* pattern, bool simulated, int skip_steps);

// A measured run's training time after `completed` micro-steps (an evaluation stored at step n follows steps
// 0..n-1): the slowest rank's step time summed over the steps before it, a fractional last one in proportion.
// Evaluation time is not counted. `steps` ascending by step, as step_totals gives them.
double training_time_through(const std::vector<StepTotals>& steps, double completed);

}  // namespace ddplab
