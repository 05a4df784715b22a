#include "ddplab/runtime/input_pipeline.hpp"

#include <stdexcept>

namespace ddplab {

InputPipeline::InputPipeline(Ops& ops, const Dataset& data, int batch_size)
    : ops_(ops), data_(data), batch_(static_cast<std::size_t>(batch_size)) {
  const std::size_t features = static_cast<std::size_t>(data.features);
  for (int s = 0; s < 2; ++s) {
    x_[s] = DeviceBuffer(ops, batch_ * features);
    y_[s] = ops.alloc_labels(batch_);
    host_x_[s] = static_cast<float*>(ops.alloc_host(batch_ * features * sizeof(float)));
    host_y_[s] = static_cast<std::int32_t*>(ops.alloc_host(batch_ * sizeof(std::int32_t)));
  }
}

InputPipeline::~InputPipeline() {
  ops_.synchronize();  // no upload may still read the host buffers
  for (int s = 0; s < 2; ++s) {
    ops_.free_labels(y_[s]);
    ops_.free_host(host_x_[s]);
    ops_.free_host(host_y_[s]);
  }
}

void InputPipeline::load(std::size_t slot, const std::vector<std::size_t>& idx, std::size_t first, int count) {
  if (slot > 1 || count < 0 || static_cast<std::size_t>(count) > batch_)
    throw std::invalid_argument("InputPipeline::load: slot or batch size out of range");
  gather_batch(data_, idx, first, count, host_x_[slot], host_y_[slot]);
  const std::size_t n = static_cast<std::size_t>(count);
  ops_.prefetch(x_[slot].data(), host_x_[slot], n * static_cast<std::size_t>(data_.features) * sizeof(float));
  ops_.prefetch(y_[slot], host_y_[slot], n * sizeof(std::int32_t));
}

}  // namespace ddplab
