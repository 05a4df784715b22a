// sgd against torch.optim.SGD's formula, written out in double: plain, with momentum and dampening, and
// with Nesterov; accumulation's grad_scale applies before the weight decay.
#include "optimizer_harness.hpp"
#include "ddplab/core/error.hpp"

namespace ddplab {
namespace {

std::vector<std::vector<double>> sgd_reference(const test::UpdateSetup& s, double momentum, double dampening,
                                               bool nesterov) {
  std::vector<double> p(s.p0.begin(), s.p0.end()), buf(s.n(), 0.0);
  std::vector<std::vector<double>> out;
  for (std::size_t t = 0; t < s.grads.size(); ++t) {
    for (std::size_t i = 0; i < s.n(); ++i) {
      double d = s.grad_scale * s.grads[t][i] + s.weight_decay * p[i];
      if (momentum > 0) {
        buf[i] = t == 0 ? d : momentum * buf[i] + (1 - dampening) * d;
        d = nesterov ? d + momentum * buf[i] : buf[i];
      }
      p[i] -= s.lr * d;
    }
    out.push_back(p);
  }
  return out;
}

TEST(OptimizerSgd, FollowsTorchSgdWithAndWithoutMomentum) {
  test::UpdateSetup s;
  struct Case {
    OptionValues options;
    double momentum, dampening;
    bool nesterov;
  };
  for (const Case& c : {Case{{{"momentum", "0"}}, 0, 0, false}, Case{{}, 0.9, 0, false},
                        Case{{{"momentum", "0.8"}, {"dampening", "0.3"}}, 0.8, 0.3, false},
                        Case{{{"nesterov", "true"}}, 0.9, 0, true}}) {
    const auto got = test::run_updates("sgd", c.options, s);
    const auto want = sgd_reference(s, c.momentum, c.dampening, c.nesterov);
    for (int t = 0; t < 3; ++t) {
      SCOPED_TRACE(::testing::Message() << "momentum " << c.momentum << " dampening " << c.dampening << " nesterov "
                                        << c.nesterov);
      test::expect_params(got[t], want[t], t + 1);
    }
  }
}

TEST(OptimizerSgd, GradScaleIsTheMeanOfAccumulatedGradients) {
  test::UpdateSetup s;
  s.grad_scale = 0.25f;  // four micro-steps summed
  const auto got = test::run_updates("sgd", {}, s);
  const auto want = sgd_reference(s, 0.9, 0, false);
  for (int t = 0; t < 3; ++t) test::expect_params(got[t], want[t], t + 1);
}

TEST(OptimizerSgd, NesterovNeedsMomentumWithoutDampening) {
  EXPECT_THROW(make_optimizer("sgd", {{"nesterov", "true"}, {"momentum", "0"}}), ddplab::InputError);
  EXPECT_THROW(make_optimizer("sgd", {{"nesterov", "true"}, {"dampening", "0.1"}}), ddplab::InputError);
  EXPECT_NO_THROW(make_optimizer("sgd", {{"nesterov", "true"}}));
}

}  // namespace
}  // namespace ddplab
