// Gradients of every layer against central finite differences, computed in double from the forward pass.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "ddplab/core/error.hpp"
#include "ddplab/runtime/mlp.hpp"
#include "finite_differences.hpp"

namespace ddplab {
namespace {

struct Fixture {
  std::unique_ptr<Ops> ops = make_ops("cpu");
  std::vector<int> layers{6, 5, 4, 3};
  int batch = 4;
  Mlp model{*ops, layers, batch};
  std::vector<float> x;
  std::vector<std::int32_t> y{0, 2, 1, 2};
  Fixture() {
    model.init(7);
    std::mt19937 rng(3);
    std::normal_distribution<float> d;
    x.resize(static_cast<std::size_t>(batch * layers[0]));
    for (float& v : x) v = d(rng);
  }
  double loss() {
    model.forward(x.data(), batch);
    return model.loss(y.data());
  }
};

TEST(Mlp, ParameterLayoutFollowsPyTorchOrder) {
  auto ops = make_ops("cpu");
  Mlp m(*ops, {784, 1024, 1024, 1024, 10}, 2);
  EXPECT_EQ(m.num_params(), 2913290u);  // 784*1024+1024 + 2*(1024*1024+1024) + 1024*10+10
  ASSERT_EQ(m.param_info().size(), 8u);
  EXPECT_EQ(m.param_info()[0].name, "layers.0.weight");
  EXPECT_EQ(m.param_info()[0].count, 784u * 1024u);
  EXPECT_EQ(m.param_info()[1].name, "layers.0.bias");
  EXPECT_EQ(m.param_info()[1].offset, 784u * 1024u);
  EXPECT_EQ(m.param_info()[7].offset + m.param_info()[7].count, m.num_params());
}

TEST(Mlp, InitIsPyTorchUniformAndDeterministic) {
  auto ops = make_ops("cpu");
  Mlp a(*ops, {100, 50, 10}, 1), b(*ops, {100, 50, 10}, 1);
  a.init(42);
  b.init(42);
  for (std::size_t i = 0; i < a.num_params(); ++i) ASSERT_EQ(a.params()[i], b.params()[i]);
  // layer 0 bound 1/sqrt(100) = 0.1, layer 1 bound 1/sqrt(50)
  float max0 = 0, max1 = 0;
  for (std::size_t i = 0; i < 100 * 50 + 50; ++i) max0 = std::max(max0, std::abs(a.params()[i]));
  for (std::size_t i = 100 * 50 + 50; i < a.num_params(); ++i) max1 = std::max(max1, std::abs(a.params()[i]));
  EXPECT_LE(max0, 0.1f);
  EXPECT_GT(max0, 0.09f);
  EXPECT_LE(max1, 1 / std::sqrt(50.0f));
  EXPECT_GT(max1, 0.9f / std::sqrt(50.0f));
}

TEST(Mlp, EveryLayersGradientsMatchFiniteDifferences) {
  Fixture f;
  f.model.forward(f.x.data(), f.batch);
  f.model.backward(f.y.data());
  std::vector<float> analytic(f.model.grads(), f.model.grads() + f.model.num_params());
  for (const ParamInfo& p : f.model.param_info()) {
    const test::FdResult r = test::finite_differences(f.model, p, analytic, 1e-2f, [&] { return f.loss(); });
    EXPECT_GT(r.max_grad, 1e-3) << p.name << " has no gradient signal";
    EXPECT_LT(r.max_err, 2e-3 + 1e-2 * r.max_grad) << p.name;
  }
}

TEST(Mlp, InputGradientFlowsThroughReluAndMatchesFiniteDifferences) {
  // The loss as a function of one hidden pre-activation is checked indirectly: perturb a first-layer bias.
  Fixture f;
  f.model.forward(f.x.data(), f.batch);
  f.model.backward(f.y.data());
  const ParamInfo& b0 = f.model.param_info()[1];
  for (std::size_t k = 0; k < b0.count; ++k) {
    const float g = f.model.grads()[b0.offset + k];
    float& w = f.model.params()[b0.offset + k];
    const float saved = w;
    w = saved + 1e-2f;
    const double up = f.loss();
    w = saved - 1e-2f;
    const double down = f.loss();
    w = saved;
    EXPECT_NEAR((up - down) / 2e-2, g, 2e-3) << "bias " << k;
  }
}

TEST(Mlp, GradientReadyEventsComeInBackwardOrder) {
  Fixture f;
  std::vector<int> order;
  f.model.forward(f.x.data(), f.batch);
  f.model.backward(f.y.data(), [&](int p) { order.push_back(p); });
  EXPECT_EQ(order, (std::vector<int>{4, 5, 2, 3, 0, 1}));
}

TEST(CpuOps, SoftmaxCrossEntropyMatchesReference) {
  auto ops = make_ops("cpu");
  const float logits[6] = {1.0f, 2.0f, 3.0f, 0.5f, 0.5f, 0.5f};
  const std::int32_t labels[2] = {2, 0};
  float d[6];
  const double loss = ops->softmax_xent(logits, labels, 2, 3, d);
  const double l0 = -std::log(std::exp(3.0) / (std::exp(1.0) + std::exp(2.0) + std::exp(3.0)));
  const double l1 = std::log(3.0);
  EXPECT_NEAR(loss, (l0 + l1) / 2, 1e-6);
  EXPECT_NEAR(d[2], (std::exp(3.0) / (std::exp(1.0) + std::exp(2.0) + std::exp(3.0)) - 1) / 2, 1e-6);
  EXPECT_NEAR(d[3], (1.0 / 3 - 1) / 2, 1e-6);
  EXPECT_NEAR(d[4], (1.0 / 3) / 2, 1e-6);
  const std::int32_t bad[2] = {3, 0};
  EXPECT_THROW(ops->softmax_xent(logits, bad, 2, 3, d), std::out_of_range);
}

// torch's CrossEntropyLoss(weight=w): sum_i w[y_i] l_i / sum_i w[y_i], and its gradient, checked against
// the formula and by central differences of the loss.
TEST(CpuOps, WeightedSoftmaxCrossEntropyIsTorchsWeightedMean) {
  auto ops = make_ops("cpu");
  std::vector<float> logits = {1.0f, 2.0f, 3.0f, 0.5f, 0.5f, 0.5f, -1.0f, 0.0f, 2.0f};
  const std::int32_t labels[3] = {2, 0, 0};
  const float w[3] = {3.0f, 1.0f, 0.5f};
  std::vector<float> d(9);
  const double loss = ops->softmax_xent(logits.data(), labels, 3, 3, d.data(), w);
  const auto xent = [](const float* z, int y) {
    double s = 0;
    for (int j = 0; j < 3; ++j) s += std::exp(static_cast<double>(z[j]));
    return std::log(s) - z[y];
  };
  const double want = (0.5 * xent(&logits[0], 2) + 3.0 * xent(&logits[3], 0) + 3.0 * xent(&logits[6], 0)) / 6.5;
  EXPECT_NEAR(loss, want, 1e-6);
  for (std::size_t i = 0; i < logits.size(); ++i) {
    std::vector<float> up = logits, down = logits;
    const float h = 1e-2f;
    up[i] += h, down[i] -= h;
    const double numeric = (ops->softmax_xent(up.data(), labels, 3, 3, nullptr, w) -
                            ops->softmax_xent(down.data(), labels, 3, 3, nullptr, w)) /
                           (2 * h);
    EXPECT_NEAR(d[i], numeric, 1e-4) << "logit " << i;
  }
  // Weights of one are the unweighted mean, to the bit.
  const float ones[3] = {1.0f, 1.0f, 1.0f};
  std::vector<float> d1(9), d0(9);
  EXPECT_EQ(ops->softmax_xent(logits.data(), labels, 3, 3, d1.data(), ones),
            ops->softmax_xent(logits.data(), labels, 3, 3, d0.data()));
  EXPECT_EQ(d1, d0);
}

TEST(CpuOps, GemmTransposesMatchNaiveProduct) {
  auto ops = make_ops("cpu");
  // A 2x3 times B 3x2.
  const float a[6] = {1, 2, 3, 4, 5, 6}, b[6] = {7, 8, 9, 10, 11, 12};
  float c[4];
  ops->gemm(false, false, 2, 2, 3, 1.0f, a, 3, b, 2, 0.0f, c, 2);
  EXPECT_FLOAT_EQ(c[0], 58);
  EXPECT_FLOAT_EQ(c[3], 154);
  // a read as 3x2 and b as 2x3: a^T b^T = [[76, 103], [100, 136]].
  ops->gemm(true, true, 2, 2, 3, 1.0f, a, 2, b, 3, 0.0f, c, 2);
  EXPECT_FLOAT_EQ(c[0], 76);
  EXPECT_FLOAT_EQ(c[1], 103);
  EXPECT_FLOAT_EQ(c[2], 100);
  EXPECT_FLOAT_EQ(c[3], 136);
}

TEST(Mlp, RejectsBatchLargerThanItWasBuiltFor) {
  auto ops = make_ops("cpu");
  Mlp m(*ops, {4, 3}, 2);
  std::vector<float> x(12);
  EXPECT_THROW(m.forward(x.data(), 3), ddplab::InternalError);
  EXPECT_THROW(make_ops("tpu"), ddplab::InputError);
}

}  // namespace
}  // namespace ddplab
