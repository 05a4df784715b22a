// Starting and joining MPI jobs: `ddplab run` on one machine spawns `mpirun -np N` of itself;
// under mpirun or srun it joins the job directly.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ddplab/core/error.hpp"
#include "ddplab/core/store.hpp"

namespace ddplab {

// True when this process was started by mpirun (OMPI_COMM_WORLD_SIZE) or srun (SLURM_PROCID + PMI).
bool under_mpi_launcher();

struct LaunchPlan {
  std::vector<std::string> argv;  // mpirun ... <this executable> <args>
  bool oversubscribed = false;
  int attempts = 1;  // launches execute tries while no rank starts (retry_unstarted)
  // > 0: at the first signal the launcher asks the ranks to stop after their step (request_stop, job_notes.hpp)
  // and signals mpirun only if the job is still there this many seconds later (ddplab run).
  double graceful_stop_s = 0;
};

// mpirun -np N, with --allow-run-as-root when root, --oversubscribe when N exceeds the cores, and one BLAS
// thread per rank; runs `self_args` (the ddplab subcommand and its arguments) on every rank. `mpirun_extra`
// goes before the executable (e.g. the test bed's hostfile, launch agent and transport options).
LaunchPlan plan_launch(int np, const std::vector<std::string>& self_args,
                       const std::vector<std::string>& mpirun_extra = {});

// Lets execute try a launch again, up to `attempts` times in all, when it fails before any rank started (no
// rank marked its start in the job folder, job_notes.hpp): nothing ran, so nothing is repeated. For the test
// bed, whose Open MPI daemons, started in network namespaces, fail to come up now and then.
void retry_unstarted(LaunchPlan& plan, int attempts);

// Called by every rank as it starts: tells its launcher the job ran (see retry_unstarted).
void mark_rank_started();

// How a job ended: mpirun's exit status (128 + signal when it was killed), and the SIGINT, SIGTERM or SIGHUP
// the launcher received while it ran (0: none).
struct JobEnd {
  int rc = 0;
  int signal = 0;
  std::vector<std::string> failures;  // the ranks' failure notes (job_notes.hpp), rank order
  std::vector<std::string> flights;   // the ranks' flight recorder dumps (JSON, core/flight.hpp), rank order
  // What the launcher exits with: 128 + the signal it got (130, 143) when interrupted; else the kind of error a
  // rank ended the job with, which mpirun passes on (2: bad input, 70: a bug in ddplab, error.hpp); any other
  // failure (a rank that died, was killed, timed out, or disagreed with the others) is a fault of the run: 1.
  int exit_code() const {
    if (signal) return 128 + signal;
    if (rc == 0 || rc == InputError::kExitCode || rc == InternalError::kExitCode) return rc;
    return RunFault::kExitCode;
  }
};

// Runs the plan in a process group of its own and waits, with a job folder of its own that the ranks find
// through $DDPLAB_JOB_DIR (job_notes.hpp) and that is removed once the job has ended. A first SIGINT, SIGTERM or SIGHUP
// to the launcher is forwarded to mpirun, which stops every rank (with graceful_stop_s, only once the ranks, asked to
// stop, have not within that time); if the job is not gone kStopGraceS later, or at a second signal, mpirun and every
// process it started on this machine are killed (SIGKILL), and so is any rank still alive when mpirun has exited.
// SIGUSR1 is passed to mpirun, which passes it to every rank (their flight recorders dump, watchdog.hpp). The
// launcher's own handlers are restored before it returns.
inline constexpr double kStopGraceS = 5.0;
JobEnd execute(const LaunchPlan& plan);

// The runs one `ddplab run` launch stored: ids above `after_id` whose host_info carries `launch_id` (its ranks
// inherit DDPLAB_LAUNCH_ID; version.cpp). Another job may be writing the same store at the same time.
std::vector<RunRow> launch_runs(Store& store, std::int64_t after_id, const std::string& launch_id);

// Throws InputError naming the store when it could not be written (a read-only or immutable file, or
// a directory where SQLite cannot create its journal), before a job starts that would fail on its first row.
void require_writable_store(const std::string& db);

std::string self_executable();
std::string shell_join(const std::vector<std::string>& argv);

}  // namespace ddplab
