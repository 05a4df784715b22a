// torch.optim.Adam and AdamW. Adam adds L2 weight decay to the gradient; AdamW decays the parameters
// apart (p *= 1 - lr * wd, Loshchilov & Hutter). Then m = b1 m + (1 - b1) g, v = b2 v + (1 - b2) g^2, and
// p -= lr / (1 - b1^t) * m / (sqrt(v) / sqrt(1 - b2^t) + eps).
#include "optimizers/optimizer_impl.hpp"

namespace ddplab::optimizer_detail {

AdamBetas adam_betas(const std::string& optimizer, const OptionValues& o) {
  const auto& specs = find_optimizer(optimizer)->options;
  return {static_cast<float>(option_number(specs, o, "beta1")), static_cast<float>(option_number(specs, o, "beta2")),
          static_cast<float>(option_number(specs, o, "eps"))};
}

namespace {

class Adam final : public Optimizer {
 public:
  Adam(AdamBetas betas, bool decoupled) : b_(betas), decoupled_(decoupled) {}
  void update(const OptimizerUpdate& u, CodecCompute& c) const override {
    scale_grads(u, c);
    if (!decoupled_)
      add_weight_decay(u, c);
    else if (u.weight_decay != 0.0f)
      c.scale(u.params, u.count, 1.0f - u.lr * u.weight_decay);
    const BiasCorrection bc = update_moments(u, c, b_);
    c.add_rms_ratio(u.params, u.state.at(0), u.state.at(1), u.count, static_cast<float>(-u.lr / bc.first), 1.0f,
                    static_cast<float>(std::sqrt(bc.second)), b_.eps);
  }

 private:
  AdamBetas b_;
  bool decoupled_;
};

}  // namespace

std::unique_ptr<Optimizer> make_adam(const OptionValues& o) {
  return std::make_unique<Adam>(adam_betas("adam", o), false);
}
std::unique_ptr<Optimizer> make_adamw(const OptionValues& o) {
  return std::make_unique<Adam>(adam_betas("adamw", o), true);
}

}  // namespace ddplab::optimizer_detail
