#include "ddplab/runtime/mlp.hpp"

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>

#include "ddplab/core/error.hpp"

namespace ddplab {

std::vector<float> mlp_initial_params(const std::vector<int>& widths, std::uint64_t seed) {
  const ModelSpec spec = ModelSpec::mlp(widths);
  std::mt19937_64 rng(seed);
  std::vector<float> out;
  out.reserve(spec.parameter_count());
  for (std::size_t i = 0; i < spec.params.size(); ++i) {
    const float bound = 1.0f / std::sqrt(static_cast<float>(widths[i / 2]));
    std::uniform_real_distribution<float> dist(-bound, bound);
    for (std::size_t k = 0; k < spec.params[i].count(); ++k) out.push_back(dist(rng));
  }
  return out;
}

namespace {
const std::vector<int>& checked(const std::vector<int>& layers) {
  if (layers.size() < 2) throw InputError("Mlp needs at least an input and an output width");
  return layers;
}
}  // namespace

Mlp::Mlp(Ops& ops, std::vector<int> layers, int max_batch)
    : Model(ops, ModelSpec::mlp(checked(layers)), layers.empty() ? 0 : layers.front(),
            layers.empty() ? 0 : layers.back(), max_batch),
      layers_(std::move(layers)) {
  const int widest = *std::max_element(layers_.begin(), layers_.end());
  for (std::size_t l = 0; l + 1 < layers_.size(); ++l)
    acts_.emplace_back(ops_, static_cast<std::size_t>(max_batch) * static_cast<std::size_t>(layers_[l + 1]));
  delta_a_ = DeviceBuffer(ops_, static_cast<std::size_t>(max_batch) * widest);
  delta_b_ = DeviceBuffer(ops_, static_cast<std::size_t>(max_batch) * widest);
}

void Mlp::init(std::uint64_t seed) { load_ordered_params(mlp_initial_params(layers_, seed)); }

void Mlp::run_layers(int first, int end) {
  const float* in = first == 0 ? input_ : acts_[static_cast<std::size_t>(first) - 1].data();
  const std::size_t n_layers = layers_.size() - 1;
  for (auto l = static_cast<std::size_t>(first); l < static_cast<std::size_t>(end); ++l) {
    const int fan_in = layers_[l], fan_out = layers_[l + 1];
    float* out = acts_[l].data();
    // Y = X W^T + b, with W stored out x in as in PyTorch.
    ops_.gemm(false, true, batch_, fan_out, fan_in, 1.0f, in, fan_in, param(static_cast<int>(2 * l)), fan_in, 0.0f, out,
              fan_out);
    ops_.add_bias(out, param(static_cast<int>(2 * l + 1)), batch_, fan_out);
    if (l + 1 < n_layers) ops_.relu(out, static_cast<std::size_t>(batch_) * fan_out);
    in = out;
  }
}

float* Mlp::start_backward() {
  delta_ = delta_a_.data();
  next_ = delta_b_.data();
  return delta_;
}

void Mlp::backward_layer(int l, bool accumulate) {
  const int fan_in = layers_[static_cast<std::size_t>(l)], fan_out = layers_[static_cast<std::size_t>(l) + 1];
  const float* x = l == 0 ? input_ : acts_[static_cast<std::size_t>(l) - 1].data();
  // dW = dY^T X (out x in), db = column sums of dY.
  ops_.gemm(true, false, fan_out, fan_in, batch_, 1.0f, delta_, fan_out, x, fan_in, accumulate ? 1.0f : 0.0f,
            grad(2 * l), fan_in);
  ops_.bias_grad(delta_, grad(2 * l + 1), batch_, fan_out, accumulate);
  if (l == 0) return;  // no gradient needed for the input
  // dX = dY W, then through the previous layer's ReLU.
  ops_.gemm(false, false, batch_, fan_in, fan_out, 1.0f, delta_, fan_out, param(2 * l), fan_in, 0.0f, next_, fan_in);
  ops_.relu_backward(next_, acts_[static_cast<std::size_t>(l) - 1].data(), static_cast<std::size_t>(batch_) * fan_in);
  std::swap(delta_, next_);
}

}  // namespace ddplab
