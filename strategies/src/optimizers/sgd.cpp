// torch.optim.SGD: g += wd * p; buf = g at the first update, else momentum * buf + (1 - dampening) * g;
// the step is buf, or g + momentum * buf with Nesterov; p -= lr * step.
#include "optimizers/optimizer_impl.hpp"
#include "ddplab/core/error.hpp"

namespace ddplab::optimizer_detail {
namespace {

class Sgd final : public Optimizer {
 public:
  Sgd(float momentum, float dampening, bool nesterov)
      : momentum_(momentum), dampening_(dampening), nesterov_(nesterov) {}
  void update(const OptimizerUpdate& u, CodecCompute& c) const override {
    scale_grads(u, c);
    add_weight_decay(u, c);
    if (momentum_ == 0.0f) return c.axpby(u.params, u.grads, u.count, -u.lr, 1.0f);
    float* buf = u.state.at(0);
    update_momentum(u, c, buf, momentum_, dampening_);
    if (!nesterov_) return c.axpby(u.params, buf, u.count, -u.lr, 1.0f);
    c.axpby(u.grads, buf, u.count, momentum_, 1.0f);
    c.axpby(u.params, u.grads, u.count, -u.lr, 1.0f);
  }

 private:
  float momentum_, dampening_;
  bool nesterov_;
};

}  // namespace

std::unique_ptr<Optimizer> make_sgd(const OptionValues& o) {
  const auto& specs = find_optimizer("sgd")->options;
  const double momentum = option_number(specs, o, "momentum"), dampening = option_number(specs, o, "dampening");
  const bool nesterov = option_bool(specs, o, "nesterov");
  if (nesterov && (momentum == 0 || dampening != 0))
    throw InputError("nesterov needs momentum > 0 and dampening = 0, as in torch.optim.SGD");
  return std::make_unique<Sgd>(static_cast<float>(momentum), static_cast<float>(dampening), nesterov);
}

}  // namespace ddplab::optimizer_detail
