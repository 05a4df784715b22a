#include "ddplab/runtime/mlp.hpp"

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>

namespace ddplab {

Mlp::Mlp(Ops& ops, std::vector<int> layers, int max_batch) : ops_(ops), layers_(std::move(layers)), max_batch_(max_batch) {
  if (layers_.size() < 2) throw std::invalid_argument("Mlp needs at least an input and an output width");
  std::size_t offset = 0;
  int widest = 0;
  for (std::size_t l = 0; l + 1 < layers_.size(); ++l) {
    const std::size_t in = static_cast<std::size_t>(layers_[l]), out = static_cast<std::size_t>(layers_[l + 1]);
    info_.push_back({"layers." + std::to_string(l) + ".weight", offset, in * out});
    offset += in * out;
    info_.push_back({"layers." + std::to_string(l) + ".bias", offset, out});
    offset += out;
    acts_.emplace_back(ops_, static_cast<std::size_t>(max_batch) * out);
    widest = std::max(widest, layers_[l + 1]);
  }
  widest = std::max(widest, *std::max_element(layers_.begin(), layers_.end()));
  params_ = DeviceBuffer(ops_, offset);
  grads_ = DeviceBuffer(ops_, offset);
  delta_a_ = DeviceBuffer(ops_, static_cast<std::size_t>(max_batch) * widest);
  delta_b_ = DeviceBuffer(ops_, static_cast<std::size_t>(max_batch) * widest);
}

void Mlp::init(std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::vector<float> host(num_params());
  for (std::size_t i = 0; i < info_.size(); ++i) {
    const float bound = 1.0f / std::sqrt(static_cast<float>(layers_[i / 2]));
    std::uniform_real_distribution<float> dist(-bound, bound);
    for (std::size_t k = 0; k < info_[i].count; ++k) host[info_[i].offset + k] = dist(rng);
  }
  ops_.to_device(params(), host.data(), host.size());
}

const float* Mlp::forward(const float* x, int batch) {
  if (batch < 1 || batch > max_batch_)
    throw std::invalid_argument("Mlp::forward: batch " + std::to_string(batch) + " outside [1, " +
                                std::to_string(max_batch_) + "]");
  batch_ = batch;
  input_ = x;
  const float* in = x;
  const std::size_t n_layers = layers_.size() - 1;
  for (std::size_t l = 0; l < n_layers; ++l) {
    const int fan_in = layers_[l], fan_out = layers_[l + 1];
    float* out = acts_[l].data();
    // Y = X W^T + b, with W stored out x in as in PyTorch.
    ops_.gemm(false, true, batch, fan_out, fan_in, 1.0f, in, fan_in, params() + info_[2 * l].offset, fan_in, 0.0f,
              out, fan_out);
    ops_.add_bias(out, params() + info_[2 * l + 1].offset, batch, fan_out);
    if (l + 1 < n_layers) ops_.relu(out, static_cast<std::size_t>(batch) * fan_out);
    in = out;
  }
  return acts_.back().data();
}

double Mlp::loss(const std::int32_t* labels) {
  return ops_.softmax_xent(acts_.back().data(), labels, batch_, classes(), nullptr);
}

double Mlp::loss_grad(const std::int32_t* labels) {
  delta_ = delta_a_.data();
  next_ = delta_b_.data();
  return ops_.softmax_xent(acts_.back().data(), labels, batch_, classes(), delta_,
                           class_weights_.size() ? class_weights_.data() : nullptr);
}

void Mlp::set_class_weights(const std::vector<float>& w) {
  if (w.empty()) {
    class_weights_ = DeviceBuffer();
    return;
  }
  if (w.size() != static_cast<std::size_t>(classes()))
    throw std::invalid_argument("Mlp::set_class_weights: " + std::to_string(w.size()) + " weights for " +
                                std::to_string(classes()) + " classes");
  class_weights_ = DeviceBuffer(ops_, w.size());
  ops_.to_device(class_weights_.data(), w.data(), w.size());
}

void Mlp::backward_layer(int l, bool accumulate) {
  const int fan_in = layers_[static_cast<std::size_t>(l)], fan_out = layers_[static_cast<std::size_t>(l) + 1];
  const float* x = l == 0 ? input_ : acts_[static_cast<std::size_t>(l) - 1].data();
  const ParamInfo& w = info_[2 * static_cast<std::size_t>(l)];
  const ParamInfo& b = info_[2 * static_cast<std::size_t>(l) + 1];
  // dW = dY^T X (out x in), db = column sums of dY.
  ops_.gemm(true, false, fan_out, fan_in, batch_, 1.0f, delta_, fan_out, x, fan_in, accumulate ? 1.0f : 0.0f,
            grads() + w.offset, fan_in);
  ops_.bias_grad(delta_, grads() + b.offset, batch_, fan_out, accumulate);
  if (l == 0) return;  // no gradient needed for the input
  // dX = dY W, then through the previous layer's ReLU.
  ops_.gemm(false, false, batch_, fan_in, fan_out, 1.0f, delta_, fan_out, params() + w.offset, fan_in, 0.0f, next_,
            fan_in);
  ops_.relu_backward(next_, acts_[static_cast<std::size_t>(l) - 1].data(), static_cast<std::size_t>(batch_) * fan_in);
  std::swap(delta_, next_);
}

double Mlp::backward(const std::int32_t* labels, const GradReadyFn& on_ready) {
  const double loss = loss_grad(labels);
  for (int l = num_layers() - 1; l >= 0; --l) {
    backward_layer(l);
    if (on_ready) {
      on_ready(2 * l);
      on_ready(2 * l + 1);
    }
  }
  return loss;
}

void Mlp::set_offsets(const std::vector<std::size_t>& offsets) {
  if (offsets.size() != info_.size())
    throw std::invalid_argument("Mlp::set_offsets: " + std::to_string(offsets.size()) + " offsets for " +
                                std::to_string(info_.size()) + " parameters");
  std::vector<float> before(num_params()), after(num_params());
  ops_.to_host(before.data(), params(), before.size());
  std::vector<bool> covered(num_params(), false);
  for (std::size_t i = 0; i < info_.size(); ++i) {
    if (offsets[i] + info_[i].count > num_params()) throw std::invalid_argument("Mlp::set_offsets: parameter out of range");
    for (std::size_t k = 0; k < info_[i].count; ++k) {
      if (covered[offsets[i] + k]) throw std::invalid_argument("Mlp::set_offsets: parameters overlap");
      covered[offsets[i] + k] = true;
      after[offsets[i] + k] = before[info_[i].offset + k];
    }
    info_[i].offset = offsets[i];
  }
  ops_.to_device(params(), after.data(), after.size());
}

}  // namespace ddplab
