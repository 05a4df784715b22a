// The folder a `ddplab` launcher shares with the ranks of its job ($DDPLAB_JOB_DIR, passed by mpirun -x):
// every rank marks that it started, and a rank that fails leaves a note saying why (a watchdog timeout, an
// error at a step). The launcher reads them once mpirun has returned: it retries a launch in which no rank
// started, and stores the notes as the failed run's reason. Without the variable (srun, a hand-run mpirun)
// nothing is written; the ranks' messages still go to standard error.
#pragma once
#include <string>
#include <vector>

namespace ddplab {

inline constexpr const char* kJobDirVar = "DDPLAB_JOB_DIR";

// Writes `text` as note `name` (replacing it) in the job folder, atomically (temporary file, then rename), so
// the launcher never reads half a note. No job folder: nothing is written. Never throws: it is called on the
// way to an abort.
void write_job_note(const std::string& name, const std::string& text);

struct JobNote {
  std::string name, text;
};
// The notes in `dir` whose names start with `prefix`, by name (shorter first: rank 2 before rank 10).
std::vector<JobNote> read_job_notes(const std::string& dir, const std::string& prefix);

// A graceful stop: the launcher asks the ranks of the job in `dir` to stop after the step they are at
// (training flushes its rows, checkpoints and stores the run interrupted), and the ranks look for the request.
// No job folder: never requested.
void request_stop(const std::string& dir);
bool stop_requested();

// This rank's note names: "started-rank-R" and "failure-rank-R" (R from OMPI_COMM_WORLD_RANK or PMI_RANK,
// else the pid).
std::string rank_note(const std::string& kind);

}  // namespace ddplab
