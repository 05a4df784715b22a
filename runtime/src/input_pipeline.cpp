#include "ddplab/runtime/input_pipeline.hpp"

#include <algorithm>
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

void InputPipeline::plan(const DistributedSampler& sampler, int epochs, std::int64_t max_steps) {
  sampler_ = &sampler;
  steps_.clear();
  idx_epoch_ = -1;
  auto full = [&] { return max_steps > 0 && static_cast<std::int64_t>(steps_.size()) >= max_steps; };
  for (int epoch = 0; epoch < epochs && !full(); ++epoch)
    for (std::size_t at = 0; at < sampler.per_rank() && !full(); at += batch_) steps_.emplace_back(epoch, at);
}

int InputPipeline::load_step(std::size_t step, bool upload) {
  const auto [epoch, at] = steps_.at(step);
  if (epoch != idx_epoch_) idx_ = sampler_->indices(epoch), idx_epoch_ = epoch;
  const int count = static_cast<int>(std::min(batch_, idx_.size() - at));
  if (upload) load(step % 2, idx_, at, count);
  return count;
}

}  // namespace ddplab
