// LAMB (You et al. 2019, Algorithm 2): Adam's bias-corrected moments give u = m^ / (sqrt(v^) + eps) + wd w;
// per tensor, the trust ratio r = ||w|| / ||u|| (1 when either norm is 0) and w -= lr r u.
#include "optimizers/optimizer_impl.hpp"

namespace ddplab::optimizer_detail {
namespace {

class Lamb final : public Optimizer {
 public:
  Lamb(float beta1, float beta2, float eps) : b1_(beta1), b2_(beta2), eps_(eps) {}
  void update(const OptimizerUpdate& u, CodecCompute& c) const override {
    require_tensors(u, "lamb");
    scale_grads(u, c);
    float *m = u.state.at(0), *v = u.state.at(1), *step = u.scratch;
    const double t = static_cast<double>(u.t);
    const double c1 = 1.0 - std::pow(static_cast<double>(b1_), t), c2 = 1.0 - std::pow(static_cast<double>(b2_), t);
    c.axpby(m, u.grads, u.count, 1.0f - b1_, b1_);
    c.ema_square(v, u.grads, u.count, b2_);
    c.add_rms_ratio(step, m, v, u.count, static_cast<float>(1.0 / c1), 0.0f, static_cast<float>(std::sqrt(c2)), eps_);
    if (u.weight_decay != 0.0f) c.axpby(step, u.params, u.count, u.weight_decay, 1.0f);
    for (const TensorSlice& ts : u.tensors) {
      const double wn = norm(c, u.params, ts), sn = norm(c, step, ts);
      const double ratio = wn > 0 && sn > 0 ? wn / sn : 1.0;
      c.axpby(u.params + ts.offset, step + ts.offset, ts.count(), static_cast<float>(-u.lr * ratio), 1.0f);
    }
  }

 private:
  float b1_, b2_, eps_;
};

}  // namespace

std::unique_ptr<Optimizer> make_lamb(const OptionValues& o) {
  const auto& specs = find_optimizer("lamb")->options;
  return std::make_unique<Lamb>(static_cast<float>(option_number(specs, o, "beta1")),
                                static_cast<float>(option_number(specs, o, "beta2")),
                                static_cast<float>(option_number(specs, o, "eps")));
}

}  // namespace ddplab::optimizer_detail
