#include "ddplab/runtime/model_optimizer.hpp"

#include <algorithm>
#include <stdexcept>

#include "ddplab/core/error.hpp"
#include "ddplab/strategies/codec_compute.hpp"
#include "ddplab/strategies/model_spec.hpp"

namespace ddplab {

OptimizerState::OptimizerState(Ops& ops, const OptimizerConfig& opt, std::size_t n)
    : OptimizerState(ops, opt, std::vector<Chunk>{Chunk{0, n}}) {}

OptimizerState::OptimizerState(Ops& ops, const OptimizerConfig& opt, std::vector<Chunk> held)
    : ops_(ops), weight_decay_(opt.weight_decay), optimizer_(make_optimizer(opt.name, opt.options)) {
  const OptimizerInfo& info = *find_optimizer(opt.name);
  state_.resize(static_cast<std::size_t>(info.state_slots));
  needs_scratch_ = info.scratch;
  reshard(std::move(held), {});
}

void OptimizerState::allocate() {
  held_count_ = 0;
  for (std::size_t i = 0; i < held_.size(); ++i) {
    if (i > 0 && held_[i].offset < held_[i - 1].offset + held_[i - 1].count)
      throw InternalError("OptimizerState: held ranges must be ascending and disjoint");
    held_count_ += held_[i].count;
  }
  for (DeviceBuffer& s : state_) s = DeviceBuffer();  // the old state goes before the new one is made
  scratch_ = DeviceBuffer();
  if (held_count_ == 0) return;  // a rank that updates nothing keeps nothing
  for (DeviceBuffer& s : state_) s = DeviceBuffer(ops_, held_count_);
  if (needs_scratch_) scratch_ = DeviceBuffer(ops_, held_count_);
}

std::size_t OptimizerState::packed(std::size_t offset, std::size_t count) const {
  std::size_t at = 0;
  for (const Chunk& c : held_) {
    if (offset >= c.offset && offset + count <= c.offset + c.count) return at + (offset - c.offset);
    at += c.count;
  }
  throw InternalError("OptimizerState: an update of [" + std::to_string(offset) + ", " +
                      std::to_string(offset + count) + ") outside the state this rank keeps");
}

std::vector<float> OptimizerState::full(std::size_t slot, std::size_t n) const {
  std::vector<float> packed_host(held_count_), out(n, 0.0f);
  if (held_count_ == 0) return out;
  ops_.to_host(packed_host.data(), state_.at(slot).data(), held_count_);
  std::size_t at = 0;
  for (const Chunk& c : held_) {
    if (c.offset + c.count > n) throw InternalError("OptimizerState::full: a held range beyond the buffer");
    std::copy_n(packed_host.begin() + static_cast<std::ptrdiff_t>(at), c.count,
                out.begin() + static_cast<std::ptrdiff_t>(c.offset));
    at += c.count;
  }
  return out;
}

void OptimizerState::set_full(std::size_t slot, const std::vector<float>& values) {
  std::vector<float> packed_host;
  packed_host.reserve(held_count_);
  for (const Chunk& c : held_) {
    if (c.offset + c.count > values.size()) throw InternalError("OptimizerState::set_full: too few values");
    packed_host.insert(packed_host.end(), values.begin() + static_cast<std::ptrdiff_t>(c.offset),
                       values.begin() + static_cast<std::ptrdiff_t>(c.offset + c.count));
  }
  if (held_count_ == 0) return;
  ops_.to_device(state_.at(slot).data(), packed_host.data(), held_count_);
  ops_.synchronize();  // packed_host is pageable and goes out of scope
}

void OptimizerState::reshard(std::vector<Chunk> held, const std::vector<std::vector<float>>& full_slots) {
  if (!full_slots.empty() && full_slots.size() != state_.size())
    throw InternalError("OptimizerState::reshard: one full copy per slot needed");
  held_ = std::move(held);
  allocate();
  for (std::size_t i = 0; i < full_slots.size(); ++i) set_full(i, full_slots[i]);
}

void OptimizerState::update(float* params, float* grads, std::size_t offset, std::size_t count,
                            std::vector<TensorSlice> tensors, std::int64_t t, float lr, float grad_scale) {
  if (count == 0) return;  // an empty shard
  OptimizerUpdate u;
  u.params = params + offset;
  u.grads = grads + offset;
  const std::size_t at = packed(offset, count);
  for (DeviceBuffer& s : state_) u.state.push_back(s.data() + at);
  if (scratch_.size()) u.scratch = scratch_.data() + at;
  u.count = count;
  u.tensors = std::move(tensors);
  u.t = t;
  u.lr = lr;
  u.weight_decay = weight_decay_;
  u.grad_scale = grad_scale;
  optimizer_->update(u, ops_.codec_compute());
}

ModelOptimizer::ModelOptimizer(Ops& ops, Model& model, const OptimizerConfig& opt)
    : model_(model), lr_(opt.lr), state_(ops, opt, model.num_params()) {
  const auto& params = model.param_info();
  const ModelSpec& spec = model.spec();
  for (std::size_t i = 0; i < params.size(); ++i)
    tensors_.push_back({params[i].offset, spec.params.at(i).rows, spec.params.at(i).cols});
}

void ModelOptimizer::step(std::int64_t t) { step(t, static_cast<float>(lr_.lr(t - 1))); }

void ModelOptimizer::step(std::int64_t t, float lr) {
  state_.update(model_.params(), model_.grads(), 0, model_.num_params(), tensors_, t, lr);
}

}  // namespace ddplab
