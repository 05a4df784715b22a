#include "ddplab/runtime/input_pipeline.hpp"

#include <algorithm>
#include <chrono>
#include <string>
#include <stdexcept>

#include "ddplab/core/error.hpp"

namespace ddplab {

InputPipeline::InputPipeline(Ops& ops, const Dataset& data, int batch_size)
    : ops_(ops), data_(data), batch_(static_cast<std::size_t>(batch_size)) {
  const std::size_t features = static_cast<std::size_t>(data.features);
  const std::size_t labels = batch_ * static_cast<std::size_t>(data.labels_per_sample);
  for (int s = 0; s < 2; ++s) {
    x_[s] = DeviceBuffer(ops, batch_ * features);
    y_[s] = ops.alloc_labels(labels);
    host_x_[s] = static_cast<float*>(ops.alloc_host(batch_ * features * sizeof(float)));
    host_y_[s] = static_cast<std::int32_t*>(ops.alloc_host(labels * sizeof(std::int32_t)));
  }
  loader_ = std::thread([this] { loader_loop(); });
}

InputPipeline::~InputPipeline() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  loader_.join();      // finishes the load it has
  ops_.synchronize();  // no upload may still read the host buffers
  for (int s = 0; s < 2; ++s) {
    ops_.free_labels(y_[s]);
    ops_.free_host(host_x_[s]);
    ops_.free_host(host_y_[s]);
  }
}

void InputPipeline::load(std::size_t slot, const std::vector<std::size_t>& idx, std::size_t first, int count) {
  if (slot > 1 || count < 0 || static_cast<std::size_t>(count) > batch_)
    throw InternalError("InputPipeline::load: slot or batch size out of range");
  join_load();
  do_load(Load{slot, first, count, -1}, idx);  // no epoch: not augmented
}

void InputPipeline::set_augment(const AugmentConfig& config, int side, float background, std::uint64_t seed) {
  if (config.active() && static_cast<long long>(side) * side != data_.features)
    throw InputError("InputPipeline::set_augment: samples of " + std::to_string(data_.features) + " features are not " +
                     std::to_string(side) + " x " + std::to_string(side) + " images");
  join_load();
  augment_ = config, side_ = side, background_ = background, augment_seed_ = seed;
}

double InputPipeline::augment_seconds() const {
  std::lock_guard<std::mutex> lock(mu_);
  return augment_s_;
}

void InputPipeline::do_load(const Load& l, const std::vector<std::size_t>& idx) {
  gather_batch(data_, idx, l.first, l.count, host_x_[l.slot], host_y_[l.slot]);
  if (augment_.active() && l.count > 0 && l.epoch >= 0) {
    const auto t0 = std::chrono::steady_clock::now();
    augment_images(host_x_[l.slot], l.count, side_, idx.data() + l.first, l.first, l.epoch, augment_seed_, augment_,
                   background_);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::lock_guard<std::mutex> lock(mu_);
    augment_s_ += s;
  }
  const std::size_t n = static_cast<std::size_t>(l.count);
  ops_.prefetch(x_[l.slot].data(), host_x_[l.slot], n * static_cast<std::size_t>(data_.features) * sizeof(float));
  ops_.prefetch(y_[l.slot], host_y_[l.slot],
                n * static_cast<std::size_t>(data_.labels_per_sample) * sizeof(std::int32_t));
}

void InputPipeline::loader_loop() {
  std::unique_lock<std::mutex> lock(mu_);
  for (;;) {
    cv_.wait(lock, [&] { return stop_ || pending_; });
    if (!pending_) return;  // stopping, nothing left to load
    const Load l = next_;
    lock.unlock();
    std::exception_ptr err;
    try {
      ops_.bind_thread();
      do_load(l, idx_);  // idx_ stays as it is until join_load() returned
    } catch (...) {
      err = std::current_exception();
    }
    lock.lock();
    error_ = err;
    pending_ = false;
    cv_.notify_all();
  }
}

void InputPipeline::join_load() {
  std::unique_lock<std::mutex> lock(mu_);
  cv_.wait(lock, [&] { return !pending_; });
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
}

std::int64_t InputPipeline::batches(std::size_t per_rank, std::size_t batch, std::size_t min_batch) {
  const std::size_t tail = per_rank % batch;
  return static_cast<std::int64_t>(per_rank / batch + (tail >= std::max<std::size_t>(min_batch, 1) ? 1 : 0));
}

void InputPipeline::plan(const Sampler& sampler, int epochs, std::int64_t max_steps, std::int64_t steps_per_epoch,
                         std::size_t min_batch) {
  join_load();  // a new plan starts after the load in flight
  sampler_ = &sampler;
  steps_.clear();
  idx_epoch_ = -1;
  auto full = [&] { return max_steps > 0 && static_cast<std::int64_t>(steps_.size()) >= max_steps; };
  for (int epoch = 0; epoch < epochs && !full(); ++epoch) {
    std::int64_t taken = 0;
    const auto own = batches(sampler.per_rank(), batch_, min_batch);
    for (std::size_t at = 0; taken < own && !full(); at += batch_, ++taken) steps_.emplace_back(epoch, at);
    for (; taken < steps_per_epoch && !full(); ++taken) steps_.emplace_back(epoch, sampler.per_rank());  // no samples
  }
}

int InputPipeline::load_step(std::size_t step, bool upload) {
  join_load();  // the loader reads idx_, and one load at a time
  const auto [epoch, at] = steps_.at(step);
  if (epoch != idx_epoch_) idx_ = sampler_->indices(epoch), idx_epoch_ = epoch;
  const int count = static_cast<int>(std::min(batch_, idx_.size() - at));
  if (upload) {
    {
      std::lock_guard<std::mutex> lock(mu_);
      next_ = Load{step % 2, at, count, epoch};
      pending_ = true;
    }
    cv_.notify_all();
  }
  return count;
}

}  // namespace ddplab
