#include "ddplab/runtime/model.hpp"

#include <algorithm>
#include <stdexcept>

#include "ddplab/core/error.hpp"
#include "ddplab/runtime/cnn.hpp"
#include "ddplab/runtime/gpt.hpp"
#include "ddplab/runtime/mlp.hpp"

namespace ddplab {

Model::Model(Ops& ops, ModelSpec spec, int features, int classes, int max_batch)
    : ops_(ops), spec_(std::move(spec)), features_(features), classes_(classes), max_batch_(max_batch) {
  if (max_batch < 1) throw InternalError("a model needs a batch of at least 1");
  std::size_t offset = 0;
  layer_params_.resize(spec_.layers.size());
  for (const ParamSpec& p : spec_.params) {
    layer_params_.at(static_cast<std::size_t>(p.layer)).push_back(static_cast<int>(info_.size()));
    info_.push_back({p.name, offset, p.count(), p.layer});
    offset += p.count();
  }
  params_ = DeviceBuffer(ops_, offset);
  grads_ = DeviceBuffer(ops_, offset);
}

const float* Model::forward(const float* x, int batch) {
  begin_forward(x, batch);
  for (int last : spec_.forward_chunks()) forward_through(last);
  return logits_;
}

void Model::begin_forward(const float* x, int batch) {
  if (batch < 1 || batch > max_batch_)
    throw InternalError(spec_.name + "::forward: batch " + std::to_string(batch) + " outside [1, " +
                        std::to_string(max_batch_) + "]");
  batch_ = batch;
  input_ = x;
  logits_ = nullptr;
  next_layer_ = 0;
}

void Model::forward_through(int last) {
  if (last < next_layer_ || last >= num_layers())
    throw InternalError(spec_.name + "::forward_through(" + std::to_string(last) + ") after layer " +
                        std::to_string(next_layer_ - 1) + " of " + std::to_string(num_layers()));
  run_layers(next_layer_, last + 1);
  next_layer_ = last + 1;
  if (next_layer_ == num_layers()) logits_ = logits();
}

float* Model::sync_stats(int layer) {
  throw InternalError(spec_.name + ": layer " + std::to_string(layer) + " has no SyncBatchNorm statistics");
}

void Model::absorb_sync_stats(int layer) {
  throw InternalError(spec_.name + ": layer " + std::to_string(layer) + " has no SyncBatchNorm statistics to absorb");
}

float* Model::sync_grads(int layer) {
  throw InternalError(spec_.name + ": layer " + std::to_string(layer) + " has no SyncBatchNorm gradient sums");
}

double Model::loss(const std::int32_t* labels) {
  return ops_.softmax_xent(logits_, labels, batch_ * labels_per_sample_, classes_, nullptr);
}

double Model::loss_grad(const std::int32_t* labels) {
  return ops_.softmax_xent(logits_, labels, batch_ * labels_per_sample_, classes_, start_backward(),
                           class_weights_.size() ? class_weights_.data() : nullptr);
}

double Model::backward(const std::int32_t* labels, const GradReadyFn& on_ready) {
  const double loss = loss_grad(labels);
  for (int l = num_layers() - 1; l >= 0; --l) {
    backward_layer(l);
    if (on_ready)
      for (int p : layer_params(l)) on_ready(p);
  }
  return loss;
}

void Model::set_class_weights(const std::vector<float>& w) {
  if (w.empty()) {
    class_weights_ = DeviceBuffer();
    return;
  }
  if (w.size() != static_cast<std::size_t>(classes_))
    throw InternalError(spec_.name + "::set_class_weights: " + std::to_string(w.size()) + " weights for " +
                        std::to_string(classes_) + " classes");
  class_weights_ = DeviceBuffer(ops_, w.size());
  ops_.to_device(class_weights_.data(), w.data(), w.size());
}

void Model::load_ordered_params(const std::vector<float>& ordered) {
  if (ordered.size() != num_params())
    throw InternalError(spec_.name + "::load_ordered_params: " + std::to_string(ordered.size()) + " values for " +
                        std::to_string(num_params()) + " parameters");
  std::vector<float> host(num_params());
  std::size_t at = 0;
  for (const ParamInfo& p : info_) {
    std::copy_n(ordered.begin() + static_cast<std::ptrdiff_t>(at), p.count,
                host.begin() + static_cast<std::ptrdiff_t>(p.offset));
    at += p.count;
  }
  ops_.to_device(params(), host.data(), host.size());
}

void Model::set_offsets(const std::vector<std::size_t>& offsets) {
  const std::string who = spec_.name + "::set_offsets: ";
  if (offsets.size() != info_.size())
    throw InternalError(who + std::to_string(offsets.size()) + " offsets for " + std::to_string(info_.size()) +
                        " parameters");
  std::vector<float> before(num_params()), after(num_params());
  ops_.to_host(before.data(), params(), before.size());
  std::vector<bool> covered(num_params(), false);
  for (std::size_t i = 0; i < info_.size(); ++i) {
    if (offsets[i] + info_[i].count > num_params()) throw InternalError(who + "parameter out of range");
    for (std::size_t k = 0; k < info_[i].count; ++k) {
      if (covered[offsets[i] + k]) throw InternalError(who + "parameters overlap");
      covered[offsets[i] + k] = true;
      after[offsets[i] + k] = before[info_[i].offset + k];
    }
    info_[i].offset = offsets[i];
  }
  ops_.to_device(params(), after.data(), after.size());
}

std::unique_ptr<Model> make_model(Ops& ops, const ModelConfig& model, int max_batch) {
  switch (model.type) {
    case ModelType::Mlp:
      return std::make_unique<Mlp>(ops, model.layers, max_batch);
    case ModelType::Cnn:
      return std::make_unique<Cnn>(ops, model, max_batch);
    case ModelType::Gpt:
      return std::make_unique<Gpt>(ops, model.gpt, max_batch);
    case ModelType::Table:
      break;
  }
  throw InputError("the runtime trains model types \"mlp\", \"cnn\" and \"gpt\", not \"" + to_string(model.type) +
                   "\"");
}

}  // namespace ddplab
