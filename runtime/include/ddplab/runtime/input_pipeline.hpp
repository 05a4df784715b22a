// Double-buffered input: batch s + 1 is gathered into page-locked host memory and uploaded on the
// backend's copy stream while step s computes (Ops::prefetch); ready() orders the next compute after
// the upload. Two slots, alternated by step: a slot is refilled only after the step that read it ended.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "ddplab/runtime/data.hpp"
#include "ddplab/runtime/ops.hpp"

namespace ddplab {

class InputPipeline {
 public:
  InputPipeline(Ops& ops, const Dataset& data, int batch_size);
  ~InputPipeline();
  InputPipeline(const InputPipeline&) = delete;
  InputPipeline& operator=(const InputPipeline&) = delete;

  // Gathers samples idx[first, first + count) into `slot` (0 or 1) and starts their upload.
  void load(std::size_t slot, const std::vector<std::size_t>& idx, std::size_t first, int count);
  // Compute queued from now on waits for the uploads started so far.
  void ready() { ops_.wait_prefetch(); }
  const float* x(std::size_t slot) const { return x_[slot].data(); }
  const std::int32_t* y(std::size_t slot) const { return y_[slot]; }

 private:
  Ops& ops_;
  const Dataset& data_;
  std::size_t batch_;
  DeviceBuffer x_[2];
  std::int32_t* y_[2] = {nullptr, nullptr};
  float* host_x_[2] = {nullptr, nullptr};
  std::int32_t* host_y_[2] = {nullptr, nullptr};
};

}  // namespace ddplab
