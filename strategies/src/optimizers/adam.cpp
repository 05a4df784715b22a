// torch.optim.Adam and AdamW. Adam adds L2 weight decay to the gradient; AdamW decays the parameters
// apart (p *= 1 - lr * wd, Loshchilov & Hutter). Then m = b1 m + (1 - b1) g, v = b2 v + (1 - b2) g^2, and
// p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps).
#include "optimizers/optimizer_impl.hpp"

namespace ddplab::optimizer_detail {
namespace {

class Adam final : public Optimizer {
 public:
  Adam(float beta1, float beta2, float eps, bool decoupled) : b1_(beta1), b2_(beta2), eps_(eps), decoupled_(decoupled) {}
  void update(const OptimizerUpdate& u, CodecCompute& c) const override {
    scale_grads(u, c);
    if (!decoupled_)
      add_weight_decay(u, c);
    else if (u.weight_decay != 0.0f)
      c.scale(u.params, u.count, 1.0f - u.lr * u.weight_decay);
    float *m = u.state.at(0), *v = u.state.at(1);
    const double t = static_cast<double>(u.t);
    const double c1 = 1.0 - std::pow(static_cast<double>(b1_), t), c2 = 1.0 - std::pow(static_cast<double>(b2_), t);
    c.axpby(m, u.grads, u.count, 1.0f - b1_, b1_);
    c.ema_square(v, u.grads, u.count, b2_);
    c.add_rms_ratio(u.params, m, v, u.count, static_cast<float>(-u.lr / c1), 1.0f, static_cast<float>(std::sqrt(c2)), eps_);
  }

 private:
  float b1_, b2_, eps_;
  bool decoupled_;
};

std::unique_ptr<Optimizer> make(const char* name, const OptionValues& o, bool decoupled) {
  const auto& specs = find_optimizer(name)->options;
  return std::make_unique<Adam>(static_cast<float>(option_number(specs, o, "beta1")),
                                static_cast<float>(option_number(specs, o, "beta2")),
                                static_cast<float>(option_number(specs, o, "eps")), decoupled);
}

}  // namespace

std::unique_ptr<Optimizer> make_adam(const OptionValues& o) { return make("adam", o, false); }
std::unique_ptr<Optimizer> make_adamw(const OptionValues& o) { return make("adamw", o, true); }

}  // namespace ddplab::optimizer_detail
