// data.uneven = "join" (PyTorch's Join): each rank takes the steps its own share gives it each epoch; a rank
// that has run out shadows the others' gradient syncs with zeros until the longest rank's epoch ends. Every
// rank's share is known up front (the split is drawn identically everywhere), so every rank knows at each
// step how many ranks still train: no per-step allreduce of a "joined" flag, as PyTorch's Join needs, and the
// simulator replays the same schedule from the same per-rank step counts.
#pragma once
#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <vector>

#include "ddplab/core/error.hpp"

namespace ddplab {

struct JoinSchedule {
  std::vector<std::int64_t> samples;  // per rank: its share, taken whole each epoch
  std::int64_t batch = 1;             // per rank per step

  // Steps a rank's share gives it per epoch (its last batch may be short).
  std::int64_t steps_of(int rank) const { return (samples.at(static_cast<std::size_t>(rank)) + batch - 1) / batch; }
  // Steps every rank takes per epoch: the longest rank's.
  std::int64_t per_epoch() const {
    if (samples.empty() || batch < 1) throw InternalError("JoinSchedule: no ranks, or a batch below 1");
    return (*std::max_element(samples.begin(), samples.end()) + batch - 1) / batch;
  }
  bool shadows(int rank, std::int64_t step_in_epoch) const { return step_in_epoch >= steps_of(rank); }
  // Ranks still training at this step of the epoch.
  int active(std::int64_t step_in_epoch) const { return active_in(step_in_epoch, 1); }
  // Ranks that take a batch at some of the run's steps first .. first + steps - 1 (an accumulation window,
  // which may cross into the next epoch): those whose gradients its sync sums.
  int active_in(std::int64_t first, std::int64_t steps) const {
    int n = 0;
    for (std::size_t r = 0; r < samples.size(); ++r) {
      bool takes = false;
      for (std::int64_t s = first; s < first + steps && !takes; ++s)
        takes = !shadows(static_cast<int>(r), s % per_epoch());
      n += takes;
    }
    return n;
  }
  // Samples rank `rank` takes at this step of the epoch, and all ranks together.
  std::int64_t samples_of(int rank, std::int64_t step_in_epoch) const {
    return std::clamp<std::int64_t>(samples.at(static_cast<std::size_t>(rank)) - step_in_epoch * batch, 0, batch);
  }
  std::int64_t samples_at(std::int64_t step_in_epoch) const {
    std::int64_t n = 0;
    for (std::size_t r = 0; r < samples.size(); ++r) n += samples_of(static_cast<int>(r), step_in_epoch);
    return n;
  }
};

}  // namespace ddplab
