// LAMB (You et al. 2019, Algorithm 2): Adam's bias-corrected moments give u = m^ / (sqrt(v^) + eps) + wd w;
// per tensor, the trust ratio r = ||w|| / ||u|| (1 when either norm is 0) and w -= lr r u.
#include "optimizers/optimizer_impl.hpp"

namespace ddplab::optimizer_detail {
namespace {

class Lamb final : public Optimizer {
 public:
  explicit Lamb(AdamBetas betas) : b_(betas) {}
  void update(const OptimizerUpdate& u, CodecCompute& c) const override {
    require_tensors(u, "lamb");
    scale_grads(u, c);
    const BiasCorrection bc = update_moments(u, c, b_);
    float* step = u.scratch;
    c.add_rms_ratio(step, u.state.at(0), u.state.at(1), u.count, static_cast<float>(1.0 / bc.first), 0.0f,
                    static_cast<float>(std::sqrt(bc.second)), b_.eps);
    if (u.weight_decay != 0.0f) c.axpby(step, u.params, u.count, u.weight_decay, 1.0f);
    for (const TensorSlice& ts : u.tensors) {
      const double wn = norm(c, u.params, ts), sn = norm(c, step, ts);
      const double ratio = wn > 0 && sn > 0 ? wn / sn : 1.0;
      c.axpby(u.params + ts.offset, step + ts.offset, ts.count(), static_cast<float>(-u.lr * ratio), 1.0f);
    }
  }

 private:
  AdamBetas b_;
};

}  // namespace

std::unique_ptr<Optimizer> make_lamb(const OptionValues& o) { return std::make_unique<Lamb>(adam_betas("lamb", o)); }

}  // namespace ddplab::optimizer_detail
