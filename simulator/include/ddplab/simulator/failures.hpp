// Goodput lost to failures, as large-scale training reports it. A job on `nodes` nodes, each failing
// independently at exponential times of mean node_mtbf_s (so the job at mean M = node_mtbf_s / nodes), writes a
// checkpoint of checkpoint_s seconds every interval seconds of training; a failure loses the work since the
// last checkpoint, and training resumes restart_s later (relaunch, read the checkpoint), a restart being as
// exposed to failures as the rest. Daly (2006) gives the expected wall time of work_s seconds of training:
//   M e^(R/M) (e^((interval + C)/M) - 1) work_s / interval,
// and the interval that minimises it (Young 1974 to first order: sqrt(2 C M)).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ddplab/core/store.hpp"

namespace ddplab {

struct FailureModel {
  double node_mtbf_s = 0;  // one node's mean time between failures
  int nodes = 1;
  double checkpoint_s = 0;                               // C: the job stalls this long to write a checkpoint
  double restart_s = 0;                                  // R: from a failure to training again
  double mtbf_s() const { return node_mtbf_s / nodes; }  // M, the job's
};

double young_interval(const FailureModel& f);  // sqrt(2 C M)
// Daly's optimum: sqrt(2 C M) (1 + sqrt(C / 2M) / 3 + C / 18M) - C for C < 2M, else M.
double daly_interval(const FailureModel& f);
// Daly's expected wall time of work_s seconds of training with a checkpoint every interval_s of it, the last
// segment as long as what is left (Daly's T / tau charges it a whole interval).
double expected_wall_time(double work_s, double interval_s, const FailureModel& f);
// The same process drawn at random (failures, lost segments, restarts), the mean over `trials` runs: the
// check of the formula above.
double sampled_wall_time(double work_s, double interval_s, const FailureModel& f, int trials, std::uint64_t seed);

// The checkpoint write time of a strategy as measured: the median over the scenario's measured runs of that
// strategy of their checkpoints' slowest-rank write time (final ones included); nullopt without any.
struct MeasuredCheckpoint {
  double write_s = 0;
  std::int64_t checkpoints = 0, bytes = 0;  // how many the median is over, and the newest one's size
};
std::optional<MeasuredCheckpoint> measured_checkpoint(const Store& store, const std::string& scenario,
                                                      const std::string& strategy);

// A prediction's training times (goodput.hpp) with failures: each world size on ceil(world / devices_per_node)
// nodes, checkpointing at `interval_s` of training (0: Daly's interval for that world).
struct FailureOptions {
  double node_mtbf_s = 0, restart_s = 0, checkpoint_s = 0, interval_s = 0;
};
struct FailureWorld {
  int world_size = 0, nodes = 0;
  double mtbf_s = 0;      // the job's
  double interval_s = 0;  // used: Daly's, or the one asked for
  double young_s = 0;     // Young's, for comparison
  double work_s = 0;      // the failure-free training time predicted
  double expected_s = 0;  // with checkpoints, failures and restarts
  double goodput() const { return work_s / expected_s; }
};
struct GoodputPrediction;
std::vector<FailureWorld> with_failures(const GoodputPrediction& p, const FailureOptions& o, int devices_per_node);

}  // namespace ddplab
