// Double-buffered input: batch s + 1 is gathered into page-locked host memory by a loader thread and
// uploaded on the backend's copy stream while step s computes (Ops::prefetch); ready() waits for the
// loader and orders the next compute after the upload. Two slots, alternated by step: a slot is refilled
// only after the step that read it was queued, and its upload waits for that step's compute.
#pragma once
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <exception>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "ddplab/runtime/augment.hpp"
#include "ddplab/runtime/data.hpp"
#include "ddplab/runtime/ops.hpp"

namespace ddplab {

class InputPipeline {
 public:
  InputPipeline(Ops& ops, const Dataset& data, int batch_size);
  ~InputPipeline();
  InputPipeline(const InputPipeline&) = delete;
  InputPipeline& operator=(const InputPipeline&) = delete;

  // Each batch of the plan augmented on the loader thread (square images of `side` pixels, `background`
  // outside), each image by its draw for (seed, epoch, its index). Set before plan().
  void set_augment(const AugmentConfig& config, int side, float background, std::uint64_t seed);
  // Seconds the loader spent augmenting, all batches so far.
  double augment_seconds() const;

  // Gathers samples idx[first, first + count) into `slot` (0 or 1) and starts their upload, on this thread
  // (not augmented: no epoch).
  void load(std::size_t slot, const std::vector<std::size_t>& idx, std::size_t first, int count);

  // A run's batches in step order: `epochs` passes over `sampler` (kept by reference) in steps of the batch
  // size, at most max_steps of them (0: no limit).
  // steps_per_epoch > 0 (data.uneven = "join"): each epoch ends with steps of no samples up to that many.
  // An epoch's last batch with fewer than min_batch samples is dropped (a pipeline cuts its batch into that
  // many microbatches).
  void plan(const Sampler& sampler, int epochs, std::int64_t max_steps, std::int64_t steps_per_epoch = 0,
            std::size_t min_batch = 1);
  // The steps of one epoch of `per_rank` samples in batches of `batch`, those under min_batch dropped.
  static std::int64_t batches(std::size_t per_rank, std::size_t batch, std::size_t min_batch = 1);
  std::size_t steps() const { return steps_.size(); }
  // Hands batch `step` of the plan to the loader thread, for slot step % 2 (upload = false: only its
  // size, for a rank that takes no data), and returns its size at once.
  int load_step(std::size_t step, bool upload = true);
  // Waits for the loader; compute queued from now on waits for the uploads started so far. Rethrows an
  // error of the load.
  void ready() {
    join_load();
    ops_.wait_prefetch();
  }
  const float* x(std::size_t slot) const { return x_[slot].data(); }
  const std::int32_t* y(std::size_t slot) const { return y_[slot]; }

 private:
  Ops& ops_;
  const Dataset& data_;
  std::size_t batch_;
  const Sampler* sampler_ = nullptr;
  std::vector<std::pair<int, std::size_t>> steps_;  // (epoch, offset into that epoch's indices)
  std::vector<std::size_t> idx_;                    // the indices of epoch idx_epoch_
  int idx_epoch_ = -1;
  DeviceBuffer x_[2];
  std::int32_t* y_[2] = {nullptr, nullptr};
  float* host_x_[2] = {nullptr, nullptr};
  std::int32_t* host_y_[2] = {nullptr, nullptr};

  // The loader thread: one load at a time (the other slot is the one being computed on).
  struct Load {
    std::size_t slot = 0, first = 0;
    int count = 0;
    int epoch = 0;  // for the augmentation's draws; -1 (load()): none
  };
  void loader_loop();
  void do_load(const Load& l, const std::vector<std::size_t>& idx);
  void join_load();
  mutable std::mutex mu_;
  std::condition_variable cv_;
  Load next_;
  bool pending_ = false, stop_ = false;
  std::exception_ptr error_;
  AugmentConfig augment_;
  int side_ = 0;
  float background_ = 0;
  std::uint64_t augment_seed_ = 0;
  double augment_s_ = 0;  // under mu_
  std::thread loader_;
};

}  // namespace ddplab
