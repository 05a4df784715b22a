#include "ddplab/runtime/model_optimizer.hpp"

#include "ddplab/strategies/codec_compute.hpp"
#include "ddplab/strategies/model_spec.hpp"

namespace ddplab {

OptimizerState::OptimizerState(Ops& ops, const OptimizerConfig& opt, std::size_t n)
    : ops_(ops), weight_decay_(opt.weight_decay), optimizer_(make_optimizer(opt.name, opt.options)) {
  const OptimizerInfo& info = *find_optimizer(opt.name);
  for (int i = 0; i < info.state_slots; ++i) state_.emplace_back(ops, n);
  if (info.scratch) scratch_ = DeviceBuffer(ops, n);
}

void OptimizerState::update(float* params, float* grads, std::size_t offset, std::size_t count,
                            std::vector<TensorSlice> tensors, std::int64_t t, float lr, float grad_scale) {
  OptimizerUpdate u;
  u.params = params + offset;
  u.grads = grads + offset;
  for (DeviceBuffer& s : state_) u.state.push_back(s.data() + offset);
  if (scratch_.size()) u.scratch = scratch_.data() + offset;
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
