// The steady state of a run, measured or simulated, as `ddplab validate` compares them: whole blocks of
// the strategy's step pattern (step_pattern.hpp), so that a local SGD block of 4 steps (3 local, one that
// averages) or an accumulation window counts as what it is, not as its communicating step alone.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ddplab/core/step_pattern.hpp"
#include "ddplab/core/store.hpp"
#include "ddplab/simulator/simulator.hpp"

namespace ddplab {

// Per rank, each whole steady block's sums of step_s and of its parts; per rank the median over blocks;
// the run's step time is the slowest rank's median and the parts are means over ranks, all per micro-step
// (divided by the block's length). Medians, because on a shared machine a preempted step is an outlier
// that only adds time; per rank first, because the maximum over ranks of each step's time would pick every
// step's worst jitter (ranks that wait for each other take turns at being late), which a simulated step
// has not.
struct SteadyState {
  std::int64_t run_steps = 0;  // steps in the rows
  std::int64_t first = 0;      // the first step counted
  int blocks = 0;              // whole blocks counted
  std::int64_t period = 1;     // micro-steps per block
  double step_s = 0, compute_s = 0, comm_s = 0, exposed_comm_s = 0, optimizer_s = 0;
  std::string describe() const;  // "4 blocks of 4 micro-steps from step 20 of 60"
};

// Blocks start at the first block boundary at or after max(pattern warm-up, min_first). When the rows
// hold no whole block from there, min_first is dropped; when they hold none even then, InputError
// says how many steps there are and how many are needed.
SteadyState steady_state(const std::vector<StepMetrics>& rows, const StepPattern& pattern, std::int64_t min_first);

// The steady state of a simulated pattern, by the same rule as a measured run's (its one steady block).
SteadyState steady_state(const SimPatternResult& r);

}  // namespace ddplab
