// Shared by the optimizer files: the steps every optimizer starts with, and per-tensor norms.
#pragma once
#include <cmath>
#include <stdexcept>
#include <string>

#include "ddplab/core/error.hpp"
#include "ddplab/strategies/codec_compute.hpp"
#include "ddplab/strategies/optimizer.hpp"

namespace ddplab::optimizer_detail {

// g *= grad_scale (accumulation's 1 / K and the clipping factor), when it is not 1.
inline void scale_grads(const OptimizerUpdate& u, CodecCompute& c) {
  if (u.grad_scale != 1.0f) c.scale(u.grads, u.count, u.grad_scale);
}
// PyTorch's L2 weight decay, added to the gradient: g = wd * p + g.
inline void add_weight_decay(const OptimizerUpdate& u, CodecCompute& c) {
  if (u.weight_decay != 0.0f) c.axpby(u.grads, u.params, u.count, u.weight_decay, 1.0f);
}
// The momentum buffer's update: buf = g at the first update, else momentum * buf + (1 - dampening) * g.
inline void update_momentum(const OptimizerUpdate& u, CodecCompute& c, float* buf, float momentum, float dampening) {
  if (u.t == 1)
    c.copy(buf, u.grads, u.count * sizeof(float));
  else
    c.axpby(buf, u.grads, u.count, 1.0f - dampening, momentum);
}

// Adam's moments (m = b1 m + (1 - b1) g, v = b2 v + (1 - b2) g^2) and their bias corrections 1 - b^t.
struct AdamBetas {
  float beta1, beta2, eps;
};
AdamBetas adam_betas(const std::string& optimizer, const OptionValues& options);
struct BiasCorrection {
  double first, second;  // 1 - beta1^t, 1 - beta2^t
};
inline BiasCorrection update_moments(const OptimizerUpdate& u, CodecCompute& c, const AdamBetas& b) {
  float *m = u.state.at(0), *v = u.state.at(1);
  c.axpby(m, u.grads, u.count, 1.0f - b.beta1, b.beta1);
  c.ema_square(v, u.grads, u.count, b.beta2);
  const double t = static_cast<double>(u.t);
  return {1.0 - std::pow(static_cast<double>(b.beta1), t), 1.0 - std::pow(static_cast<double>(b.beta2), t)};
}

inline double norm(CodecCompute& c, const float* x, const TensorSlice& t) {
  return std::sqrt(c.sum_squares(x + t.offset, t.count()));
}
// The per-tensor rules need the tensors the update holds, whole.
inline void require_tensors(const OptimizerUpdate& u, const char* optimizer) {
  std::size_t covered = 0;
  for (const TensorSlice& t : u.tensors) covered += t.count();
  if (u.tensors.empty() || covered != u.count)
    throw InternalError(std::string(optimizer) + ": an update must list the whole tensors it holds (" +
                        std::to_string(covered) + " of " + std::to_string(u.count) + " elements listed)");
}

std::unique_ptr<Optimizer> make_sgd(const OptionValues&);
std::unique_ptr<Optimizer> make_adam(const OptionValues&);
std::unique_ptr<Optimizer> make_adamw(const OptionValues&);
std::unique_ptr<Optimizer> make_rmsprop(const OptionValues&);
std::unique_ptr<Optimizer> make_lars(const OptionValues&);
std::unique_ptr<Optimizer> make_lamb(const OptionValues&);

}  // namespace ddplab::optimizer_detail
