// torch.optim.RMSprop (not centered): g += wd * p; v = alpha v + (1 - alpha) g^2; the step is
// g / (sqrt(v) + eps), or with momentum buf = momentum * buf + that; p -= lr * step.
#include "optimizers/optimizer_impl.hpp"

namespace ddplab::optimizer_detail {
namespace {

class RmsProp final : public Optimizer {
 public:
  RmsProp(float alpha, float eps, float momentum) : alpha_(alpha), eps_(eps), momentum_(momentum) {}
  void update(const OptimizerUpdate& u, CodecCompute& c) const override {
    scale_grads(u, c);
    add_weight_decay(u, c);
    float* v = u.state.at(0);
    c.ema_square(v, u.grads, u.count, alpha_);
    if (momentum_ == 0.0f) return c.add_rms_ratio(u.params, u.grads, v, u.count, -u.lr, 1.0f, 1.0f, eps_);
    float* buf = u.state.at(1);
    c.add_rms_ratio(buf, u.grads, v, u.count, 1.0f, momentum_, 1.0f, eps_);
    c.axpby(u.params, buf, u.count, -u.lr, 1.0f);
  }

 private:
  float alpha_, eps_, momentum_;
};

}  // namespace

std::unique_ptr<Optimizer> make_rmsprop(const OptionValues& o) {
  const auto& specs = find_optimizer("rmsprop")->options;
  return std::make_unique<RmsProp>(static_cast<float>(option_number(specs, o, "alpha")),
                                   static_cast<float>(option_number(specs, o, "eps")),
                                   static_cast<float>(option_number(specs, o, "momentum")));
}

}  // namespace ddplab::optimizer_detail
