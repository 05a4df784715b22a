// rmsprop against torch.optim.RMSprop's formula (not centered), with and without momentum.
#include "optimizer_harness.hpp"

namespace ddplab {
namespace {

std::vector<std::vector<double>> rmsprop_reference(const test::UpdateSetup& s, double alpha, double eps,
                                                   double momentum) {
  std::vector<double> p(s.p0.begin(), s.p0.end()), v(s.n(), 0.0), buf(s.n(), 0.0);
  std::vector<std::vector<double>> out;
  for (std::size_t t = 0; t < s.grads.size(); ++t) {
    for (std::size_t i = 0; i < s.n(); ++i) {
      const double g = s.grads[t][i] + s.weight_decay * p[i];
      v[i] = alpha * v[i] + (1 - alpha) * g * g;
      const double step = g / (std::sqrt(v[i]) + eps);
      buf[i] = momentum * buf[i] + step;
      p[i] -= s.lr * (momentum > 0 ? buf[i] : step);
    }
    out.push_back(p);
  }
  return out;
}

TEST(OptimizerRmsprop, FollowsTorchRmsprop) {
  test::UpdateSetup s;
  s.lr = 1e-2f;
  const auto plain = test::run_updates("rmsprop", {}, s);
  const auto want_plain = rmsprop_reference(s, 0.99, 1e-8, 0);
  const auto with_momentum = test::run_updates("rmsprop", {{"alpha", "0.9"}, {"momentum", "0.5"}, {"eps", "1e-4"}}, s);
  const auto want_momentum = rmsprop_reference(s, 0.9, 1e-4, 0.5);
  for (int t = 0; t < 3; ++t) {
    test::expect_params(plain[t], want_plain[t], t + 1);
    test::expect_params(with_momentum[t], want_momentum[t], t + 1);
  }
}

}  // namespace
}  // namespace ddplab
