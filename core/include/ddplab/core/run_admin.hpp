// Managing the runs of a results store (`ddplab runs`): choosing runs by status, and deleting them after
// checking each one. A running run is never deleted: its writer may be writing it. An abandoned one may be.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ddplab/core/store.hpp"

namespace ddplab {

// Every status a run reads with: "running", then "completed", "failed" (a rank died or the job failed) or
// "interrupted" (SIGINT or SIGTERM to its launcher); or "abandoned": left running by a writer that is gone.
const std::vector<std::string>& run_statuses();

// The runs with one of `statuses`, oldest first. Each status must be one of run_statuses(); otherwise
// std::invalid_argument names it and lists the known ones.
std::vector<RunRow> runs_with_status(const Store& store, const std::vector<std::string>& statuses);

// Deletes `ids` with their steps, evaluations, resources and timelines in one transaction (Store::delete_runs)
// and returns their rows. Every id is checked first: one not in the store, or still marked running, is
// refused with std::invalid_argument naming all such ids, and nothing is deleted. Repeated ids count once.
std::vector<RunRow> delete_runs_checked(Store& store, const std::vector<std::int64_t>& ids);

}  // namespace ddplab
