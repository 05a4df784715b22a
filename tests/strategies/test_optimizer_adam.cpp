// adam and adamw against torch.optim.Adam / AdamW's formulas in double. Adam's first update from zero
// moments has a closed form: the bias corrections undo (1 - beta), so p moves by lr d / (|d| + eps).
#include "optimizer_harness.hpp"
#include "ddplab/core/error.hpp"

namespace ddplab {
namespace {

std::vector<std::vector<double>> adam_reference(const test::UpdateSetup& s, bool decoupled, double b1 = 0.9,
                                                double b2 = 0.999, double eps = 1e-8) {
  std::vector<double> p(s.p0.begin(), s.p0.end()), m(s.n(), 0.0), v(s.n(), 0.0);
  std::vector<std::vector<double>> out;
  for (std::size_t t = 1; t <= s.grads.size(); ++t) {
    for (std::size_t i = 0; i < s.n(); ++i) {
      double g = s.grads[t - 1][i];
      if (decoupled)
        p[i] *= 1 - s.lr * s.weight_decay;
      else
        g += s.weight_decay * p[i];
      m[i] = b1 * m[i] + (1 - b1) * g;
      v[i] = b2 * v[i] + (1 - b2) * g * g;
      const double mhat = m[i] / (1 - std::pow(b1, t)), vhat = v[i] / (1 - std::pow(b2, t));
      p[i] -= s.lr * mhat / (std::sqrt(vhat) + eps);
    }
    out.push_back(p);
  }
  return out;
}

TEST(OptimizerAdam, FirstUpdateClosedFormThenTheRecurrence) {
  test::UpdateSetup s;
  s.lr = 1e-2f;
  const auto got = test::run_updates("adam", {{"eps", "1e-3"}}, s);  // eps large enough to matter
  const auto want = adam_reference(s, false, 0.9, 0.999, 1e-3);
  for (std::size_t i = 0; i < s.n(); ++i) {
    const double d = s.grads[0][i] + s.weight_decay * static_cast<double>(s.p0[i]);
    EXPECT_NEAR(want[0][i], s.p0[i] - s.lr * d / (std::abs(d) + 1e-3), 1e-12) << "closed form, element " << i;
  }
  for (int t = 0; t < 3; ++t) test::expect_params(got[t], want[t], t + 1);
}

TEST(OptimizerAdam, AdamWDecaysTheParametersApart) {
  test::UpdateSetup s;
  s.lr = 1e-2f;
  s.weight_decay = 0.1f;
  const auto adamw = test::run_updates("adamw", {{"beta1", "0.8"}, {"beta2", "0.99"}}, s);
  const auto want = adam_reference(s, true, 0.8, 0.99);
  for (int t = 0; t < 3; ++t) test::expect_params(adamw[t], want[t], t + 1);
  // And it is not Adam: the L2 term would have passed through the moments.
  const auto adam = test::run_updates("adam", {{"beta1", "0.8"}, {"beta2", "0.99"}}, s);
  EXPECT_GT(std::abs(adam[2][0] - adamw[2][0]), 1e-5);
}

TEST(OptimizerAdam, BetaOfOneIsRefused) {
  EXPECT_THROW(make_optimizer("adam", {{"beta1", "1"}}), ddplab::InputError);  // 1 - beta1^t = 0
  EXPECT_THROW(make_optimizer("adamw", {{"eps", "0"}}), ddplab::InputError);
}

}  // namespace
}  // namespace ddplab
