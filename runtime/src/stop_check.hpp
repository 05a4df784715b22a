// Private to the trainer: graceful stops. Whether the launcher asked the job to stop (job_notes.hpp) is
// looked at by every rank at the same steps: rank 0 reads the request and broadcasts the answer with the next
// step to look again, about every 0.1 s of its training and at the end of an accumulation window. So a look
// costs one small broadcast per 0.1 s, and every rank stops after the same step. Without a job folder (srun, a
// hand-run mpirun) it never looks: the job is stopped by its signals alone.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>

#include "ddplab/core/job_notes.hpp"
#include "ddplab/runtime/communicator.hpp"

namespace ddplab {

// Collective: whether the launcher asked the job to stop, as rank 0 sees it (false without a job folder).
inline bool stop_requested_everywhere(Communicator& comm) {
  if (!std::getenv(kJobDirVar)) return false;
  int stop = comm.rank() == 0 && stop_requested() ? 1 : 0;
  comm.broadcast(&stop, sizeof stop, 0);
  return stop != 0;
}

class StopCheck {
 public:
  // `window`: micro-steps per accumulation window; `first`: the step the run starts at (a window's start).
  StopCheck(int window, std::int64_t first)
      : enabled_(std::getenv(kJobDirVar) != nullptr), window_(window), last_(first), next_(first + window) {}

  // After `steps` steps, this one taking `step_s` here; collective at the steps it named. True: stop now.
  bool stop_after(Communicator& comm, std::int64_t steps, double step_s) {
    if (!enabled_) return false;
    elapsed_ += step_s;
    if (steps < next_) return false;
    long long msg[2] = {0, 0};
    if (comm.rank() == 0) {
      msg[0] = stop_requested() ? 1 : 0;
      const double per_step = elapsed_ / static_cast<double>(std::max<std::int64_t>(1, steps - last_));
      auto gap = static_cast<std::int64_t>(std::clamp(std::floor(kLookEveryS / std::max(per_step, 1e-9)), 1.0, 1000.0));
      gap = (gap + window_ - 1) / window_ * window_;
      msg[1] = steps + gap;
    }
    comm.broadcast(msg, sizeof msg, 0);
    last_ = steps, elapsed_ = 0, next_ = msg[1];
    return msg[0] != 0;
  }

 private:
  static constexpr double kLookEveryS = 0.1;
  bool enabled_;
  std::int64_t window_, last_, next_;
  double elapsed_ = 0;
};

}  // namespace ddplab
