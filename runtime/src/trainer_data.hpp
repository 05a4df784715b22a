// Private to the trainer: what each step's batch is. The sampler of this replica's share, every share's
// classes, data.uneven = "join"'s schedule, and the steps an epoch and the run take.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "ddplab/core/join_schedule.hpp"
#include "ddplab/core/scenario.hpp"
#include "ddplab/runtime/augment.hpp"
#include "ddplab/runtime/data.hpp"

namespace ddplab {

// A rank's part in the data: which replica's batches it takes, among how many.
struct DataShare {
  int index = 0;              // the sampler's: its replica's, or worker 0's for a dedicated server
  int workers = 1;            // the replicas that take batches
  std::size_t min_batch = 1;  // the fewest samples a batch may hold: a pipeline's microbatches
};

struct DataPlan {
  DataShare share;
  std::unique_ptr<Sampler> sampler;
  // Every share's classes, by replica: rank 0's (to print and store) and, under data.balance =
  // "class_weighted", every rank's (for its loss weights); empty elsewhere (iid's cost a shuffle per rank).
  std::vector<std::vector<std::size_t>> histograms;
  std::optional<JoinSchedule> join;  // under data.uneven = "join": every rank takes the longest share's steps
  std::int64_t steps_per_epoch = 0, total_steps = 0;

  // Samples the workers take together at `step`, each a batch of `batch`.
  std::int64_t samples_at(std::int64_t step, int batch) const {
    return join ? join->samples_at(step % steps_per_epoch) : static_cast<std::int64_t>(batch) * share.workers;
  }
  // What a sync at `step` divides the summed gradients by under join: the ranks that take a batch in its
  // accumulation window of `window` steps (those that add to it), or all of them with
  // data.join_divide_by_initial.
  int join_divisor(const DataConfig& d, std::int64_t step, int window) const {
    return d.join_divide_by_initial ? share.workers : join->active_in(step - step % window, window);
  }
};

// The plan of `sc`'s data for this share. Rank 0 says (`label`: the strategy) when each epoch's short last batch
// is dropped and prints a fixed split's partition table.
DataPlan plan_data(const Scenario& sc, const std::string& label, const Dataset& train, const DataShare& share,
                   int rank);

// [data] augment_*, as the input pipeline takes it.
inline AugmentConfig augment_config(const DataConfig& d) {
  return {d.augment_rotate, d.augment_scale, d.augment_shift};
}

}  // namespace ddplab
