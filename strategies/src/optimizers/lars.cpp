// LARS (You, Gitman & Ginsburg 2017), with momentum as Goyal et al. and MLPerf run it. Per tensor:
// local_lr = eta ||w|| / (||g|| + wd ||w|| + eps) (1 when either norm is 0), d = (g + wd w) local_lr;
// then buf = momentum buf + d (d at the first update) and w -= lr buf. With exclude_vectors, biases (and
// any vector) keep local_lr = 1 and no weight decay, as those implementations do.
#include "optimizers/optimizer_impl.hpp"

namespace ddplab::optimizer_detail {
namespace {

class Lars final : public Optimizer {
 public:
  Lars(float momentum, float eta, float eps, bool exclude_vectors)
      : momentum_(momentum), eta_(eta), eps_(eps), exclude_vectors_(exclude_vectors) {}
  void update(const OptimizerUpdate& u, CodecCompute& c) const override {
    require_tensors(u, "lars");
    scale_grads(u, c);
    for (const TensorSlice& t : u.tensors) {
      if (exclude_vectors_ && t.cols == 1) continue;
      float *p = u.params + t.offset, *g = u.grads + t.offset;
      const double wn = norm(c, u.params, t), gn = norm(c, u.grads, t), wd = u.weight_decay;
      const double local = wn > 0 && gn > 0 ? eta_ * wn / (gn + wd * wn + eps_) : 1.0;
      if (u.weight_decay != 0.0f) c.axpby(g, p, t.count(), u.weight_decay, 1.0f);
      c.scale(g, t.count(), static_cast<float>(local));
    }
    float* buf = u.state.at(0);
    update_momentum(u, c, buf, momentum_, 0.0f);
    c.axpby(u.params, buf, u.count, -u.lr, 1.0f);
  }

 private:
  float momentum_, eta_, eps_;
  bool exclude_vectors_;
};

}  // namespace

std::unique_ptr<Optimizer> make_lars(const OptionValues& o) {
  const auto& specs = find_optimizer("lars")->options;
  return std::make_unique<Lars>(
      static_cast<float>(option_number(specs, o, "momentum")), static_cast<float>(option_number(specs, o, "eta")),
      static_cast<float>(option_number(specs, o, "eps")), option_bool(specs, o, "exclude_vectors"));
}

}  // namespace ddplab::optimizer_detail
