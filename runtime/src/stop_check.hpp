// Private to the trainer: graceful stops. A stop is asked for by the launcher (a note in the job folder,
// job_notes.hpp, which rank 0 reads) or, without a job folder (srun, a hand-run mpirun), by a SIGINT, SIGTERM
// or SIGHUP to any rank itself: scancel and srun deliver SIGTERM to every task. The ranks look together, at
// the steps rank 0 names about every 0.1 s of its training and at the end of an accumulation window: one
// small allreduce per look, and every rank stops after the same step. With a job folder the ranks keep the
// signals' default action, so that a rank the launcher signals through mpirun (one that did not stop) ends.
#pragma once
#include <algorithm>
#include <atomic>
#include <climits>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <cstdlib>

#include "ddplab/core/job_notes.hpp"
#include "ddplab/runtime/communicator.hpp"

namespace ddplab {

// The first stop signal this rank received (0: none).
inline std::atomic<int> g_stop_signal{0};

extern "C" inline void on_stop_signal(int sig) {
  if (g_stop_signal.exchange(sig) != 0) {  // a second one: end now, as the signal would have
    std::signal(sig, SIG_DFL);
    std::raise(sig);
  }
}

// Without a job folder, SIGINT, SIGTERM and SIGHUP ask this rank's job to stop; a second one ends the rank.
inline void install_stop_signals() {
  if (std::getenv(kJobDirVar)) return;
  struct sigaction act {};
  act.sa_handler = on_stop_signal;
  sigemptyset(&act.sa_mask);
  act.sa_flags = SA_RESTART;
  for (const int sig : {SIGINT, SIGTERM, SIGHUP}) sigaction(sig, &act, nullptr);
}

// This rank's own view: the launcher's note (rank 0 reads it) or a signal it received.
inline bool stop_asked_here(const Communicator& comm) {
  return g_stop_signal.load() != 0 || (comm.rank() == 0 && stop_requested());
}

// Collective: whether any rank was asked to stop.
inline bool stop_requested_everywhere(Communicator& comm) {
  int go_on = stop_asked_here(comm) ? 0 : 1;
  comm.allreduce_min(&go_on, 1);
  return go_on == 0;
}

class StopCheck {
 public:
  // `window`: micro-steps per accumulation window; `first`: the step the run starts at (a window's start).
  StopCheck(int window, std::int64_t first) : window_(window), last_(first), next_(first + window) {}

  // After `steps` steps, this one taking `step_s` here; collective at the steps it named. True: stop now.
  bool stop_after(Communicator& comm, std::int64_t steps, double step_s) {
    elapsed_ += step_s;
    if (steps < next_) return false;
    // min over ranks: {0 when a rank was asked to stop, rank 0's gap to the next look}.
    int msg[2] = {stop_asked_here(comm) ? 0 : 1, INT_MAX};
    if (comm.rank() == 0) {
      const double per_step = elapsed_ / static_cast<double>(std::max<std::int64_t>(1, steps - last_));
      auto gap = static_cast<int>(std::clamp(std::floor(kLookEveryS / std::max(per_step, 1e-9)), 1.0, 1000.0));
      msg[1] = (gap + window_ - 1) / window_ * window_;
    }
    comm.allreduce_min(msg, 2);
    last_ = steps, elapsed_ = 0, next_ = steps + msg[1];
    return msg[0] == 0;
  }

 private:
  static constexpr double kLookEveryS = 0.1;
  int window_;
  std::int64_t last_, next_;
  double elapsed_ = 0;
};

}  // namespace ddplab
