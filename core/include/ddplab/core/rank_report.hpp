// Each rank's share of a measured run, and the straggler: the rank whose compute (with its optimizer)
// takes longest, and what it costs the others, who wait for it in their exposed comm (as HTA's straggler
// view), with each rank's resource use. `ddplab report --ranks RUN` prints it.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ddplab/core/store.hpp"

namespace ddplab {

struct RankBreakdown {
  int rank = 0;
  std::int64_t steps = 0;                                                             // averaged over
  double compute_s = 0, optimizer_s = 0, comm_s = 0, exposed_comm_s = 0, step_s = 0;  // means per step
  std::optional<Resources> resources;                                                 // over the whole run, when stored
};

struct RankReport {
  std::vector<RankBreakdown> ranks;  // by rank
  int slowest = -1;                  // largest compute + optimizer; -1 with one rank
  double others_work_s = 0;          // the median of the other ranks' compute + optimizer
  double others_wait_s = 0;          // the mean of the other ranks' exposed comm beyond the slowest's own
};

// Means over steps from `skip_steps` on (the last step always counts), with each rank's `resources`.
// Throws InputError when there are no steps.
RankReport rank_report(const std::vector<StepMetrics>& steps, std::int64_t skip_steps,
                       const std::vector<Resources>& resources = {});

// A table in ms, one row per rank (with CPU use as a share of one core, peak RSS and peak device memory when
// stored), then a line naming the slowest rank and what it cost the others.
std::string rank_report_text(const RunRow& run, const RankReport& report);

}  // namespace ddplab
