#include "ddplab/runtime/model_optimizer.hpp"

#include "ddplab/strategies/codec_compute.hpp"
#include "ddplab/strategies/model_spec.hpp"

namespace ddplab {

ModelOptimizer::ModelOptimizer(Ops& ops, Mlp& model, const OptimizerConfig& opt)
    : ops_(ops), opt_(opt), optimizer_(make_optimizer(opt.name, opt.options)) {
  const OptimizerInfo& info = *find_optimizer(opt.name);
  for (int i = 0; i < info.state_slots; ++i) state_.emplace_back(ops, model.num_params());
  if (info.scratch) scratch_ = DeviceBuffer(ops, model.num_params());
  update_.params = model.params();
  update_.grads = model.grads();
  for (DeviceBuffer& s : state_) update_.state.push_back(s.data());
  update_.scratch = scratch_.data();
  update_.count = model.num_params();
  const auto& params = model.param_info();
  const ModelSpec spec = ModelSpec::mlp(model.layers());
  for (std::size_t i = 0; i < params.size(); ++i)
    update_.tensors.push_back({params[i].offset, spec.params.at(i).rows, spec.params.at(i).cols});
  update_.weight_decay = opt.weight_decay;
}

void ModelOptimizer::step(std::int64_t t) { step(t, static_cast<float>(opt_.lr.lr(t - 1))); }

void ModelOptimizer::step(std::int64_t t, float lr) {
  update_.t = t;
  update_.lr = lr;
  optimizer_->update(update_, ops_.codec_compute());
}

}  // namespace ddplab
