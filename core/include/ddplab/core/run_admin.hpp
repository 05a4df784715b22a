// Managing the runs of a results store (`ddplab runs`): choosing runs by status, and deleting them after
// checking each one. A running run is never deleted: its writer may be writing it. An abandoned one may be.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ddplab/core/store.hpp"

namespace ddplab {

// A run reads "running", then "completed", "failed" (a rank died or the job failed) or "interrupted"
// (SIGINT or SIGTERM to its launcher); or "abandoned": left running by a writer that is gone (RunStatus).

// The runs with one of `statuses` (as the user wrote them), oldest first. An unknown status is an
// InputError that names it and lists the known ones.
std::vector<RunRow> runs_with_status(const Store& store, const std::vector<std::string>& statuses);

// Deletes `ids` with their steps, evaluations, resources and timelines in one transaction (Store::delete_runs)
// and returns their rows. Every id is checked first: one not in the store, or still marked running, is
// refused with InputError naming all such ids, and nothing is deleted. Repeated ids count once.
// Their checkpoint folders are removed from disk after the rows.
std::vector<RunRow> delete_runs_checked(Store& store, const std::vector<std::int64_t>& ids);

// How a launched job ended badly, as its launcher learnt it (`ddplab run`, runtime/launch.hpp's JobEnd).
struct JobOutcome {
  int signal = 0;                     // the SIGINT, SIGTERM or SIGHUP the launcher received; 0: the job failed
  std::vector<std::string> failures;  // the ranks' failure notes (job_notes.hpp), in rank order
  std::vector<std::string> flights;   // the ranks' flight recorder dumps (JSON, flight.hpp), in rank order
};

// The reason stored with the job's runs: every distinct note once, in rank order ("; " between them); else
// "SIGINT to the launcher" and the like; else empty.
std::string job_failure_reason(const JobOutcome& outcome);

struct JobEndRecord {
  std::vector<RunRow> marked;           // the runs marked interrupted or failed here (as they were before)
  std::vector<RunRow> stopped;          // the runs its ranks stored interrupted themselves (a stop on request)
  std::int64_t flight_run = 0;          // the run the flight records were stored with (0: none stored)
  std::vector<std::string> unreadable;  // why a dump was left out
};
// Records a job that ended badly in the store, for the runs its launch stored (`launch_runs`, oldest first):
// those still running, or abandoned (their writer died with the job), are finished "interrupted" (a signal)
// or "failed", with job_failure_reason; a run its ranks already marked failed gets that reason too when they
// left notes (the notes of every rank say more than rank 0's own error). The flight dumps go with the last run
// not completed, the one the job was in when it ended (none: they are dropped); an unreadable dump is left
// out and said so.
JobEndRecord record_job_end(Store& store, const std::vector<RunRow>& launch_runs, const JobOutcome& outcome);

}  // namespace ddplab
