// lamb against its formula (You et al. 2019, Algorithm 2): Adam's bias-corrected step plus decoupled
// weight decay, scaled per tensor by ||w|| / ||step||.
#include "optimizer_harness.hpp"

namespace ddplab {
namespace {

std::vector<std::vector<double>> lamb_reference(const test::UpdateSetup& s, double b1, double b2, double eps) {
  std::vector<double> p(s.p0.begin(), s.p0.end()), m(s.n(), 0.0), v(s.n(), 0.0), step(s.n());
  std::vector<std::vector<double>> out;
  for (std::size_t t = 1; t <= s.grads.size(); ++t) {
    for (std::size_t i = 0; i < s.n(); ++i) {
      const double g = s.grads[t - 1][i];
      m[i] = b1 * m[i] + (1 - b1) * g;
      v[i] = b2 * v[i] + (1 - b2) * g * g;
      step[i] =
          (m[i] / (1 - std::pow(b1, t))) / (std::sqrt(v[i] / (1 - std::pow(b2, t))) + eps) + s.weight_decay * p[i];
    }
    for (const TensorSlice& ts : s.tensors) {
      const double ratio = test::norm_of(p, ts) / test::norm_of(step, ts);
      for (std::size_t i = ts.offset; i < ts.offset + ts.count(); ++i) p[i] -= s.lr * ratio * step[i];
    }
    out.push_back(p);
  }
  return out;
}

TEST(OptimizerLamb, TrustRatioOfAdamsStepPerTensor) {
  test::UpdateSetup s;
  s.lr = 1e-2f;
  const auto got = test::run_updates("lamb", {}, s);
  const auto want = lamb_reference(s, 0.9, 0.999, 1e-6);
  for (int t = 0; t < 3; ++t) test::expect_params(got[t], want[t], t + 1);
  // Each tensor moves by lr ||w|| in norm at every update, whatever the gradient's scale.
  const TensorSlice& matrix = s.tensors[0];
  std::vector<double> before(s.p0.begin(), s.p0.end()), after(got[0].begin(), got[0].end()), moved(s.n());
  for (std::size_t i = 0; i < s.n(); ++i) moved[i] = after[i] - before[i];
  EXPECT_NEAR(test::norm_of(moved, matrix), s.lr * test::norm_of(before, matrix), 1e-7);
}

}  // namespace
}  // namespace ddplab
