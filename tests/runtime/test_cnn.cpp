// The CNN ([model] type = "cnn"): its layer table, the convolution / pooling / batch-norm ops against
// direct definitions, and every parameter's gradient against central finite differences, with and without
// batch normalisation.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>
#include <random>

#include "normal_floats.hpp"
#include "ddplab/core/error.hpp"
#include "ddplab/runtime/cnn.hpp"
#include "ddplab/strategies/model_library.hpp"
#include "finite_differences.hpp"
#include "small_cnn.hpp"

namespace ddplab {
namespace {

ModelConfig small_cnn(const std::string& bn) { return test::small_cnn(2, 5, 3, bn); }

TEST(Cnn, DefaultLayoutHasPyTorchShapesAndOrder) {
  ModelConfig m;
  m.type = ModelType::Cnn;  // defaults: image 28 x 28 x 1, conv [32, 64], kernel 5, hidden [128], 10 classes
  const ModelSpec spec = model_spec_for(m);
  ASSERT_EQ(spec.params.size(), 8u);
  EXPECT_EQ(spec.params[0].name, "conv1.weight");
  EXPECT_EQ(spec.params[0].shape, (std::vector<std::size_t>{32, 1, 5, 5}));
  EXPECT_EQ(spec.params[2].shape, (std::vector<std::size_t>{64, 32, 5, 5}));
  EXPECT_EQ(spec.params[4].name, "fc1.weight");
  EXPECT_EQ(spec.params[4].shape, (std::vector<std::size_t>{128, 7 * 7 * 64}));
  // 32*25+32 + 64*32*25+64 + 3136*128+128 + 128*10+10, as torch counts the same network.
  EXPECT_EQ(spec.parameter_count(), 832u + 51264u + 401536u + 1290u);
  // conv1 forward: 28*28 pixels x 32 outputs x 25 multiply-adds; it needs no input gradient in backward.
  EXPECT_DOUBLE_EQ(spec.layers[0].forward_flops, 2.0 * 784 * 32 * 25 + 784 * 32 + 2 * 784 * 32);
  EXPECT_LT(spec.layers[0].backward_flops, 2 * spec.layers[0].forward_flops);
  EXPECT_EQ(spec.layers[1].activation_bytes, 4.0 * 7 * 7 * 64);  // pooled
  // Batch norm: the convolutions lose their bias, each block gains a norm layer with weight and bias.
  m.bn = "local";
  const ModelSpec bn = model_spec_for(m);
  ASSERT_EQ(bn.layers.size(), 6u);
  EXPECT_EQ(bn.params[1].name, "bn1.weight");
  EXPECT_EQ(bn.params[1].layer, 1);
  EXPECT_EQ(bn.parameter_count(), spec.parameter_count() - 32 - 64 + 2 * 32 + 2 * 64);
}

class CnnOps : public testing::TestWithParam<std::string> {};

TEST_P(CnnOps, Im2colGemmIsTheDirectConvolution) {
  auto ops = make_ops(GetParam());
  const int n = 2, h = 5, w = 4, c = 3, k = 3, out = 2, ckk = c * k * k;
  const std::vector<float> x = test::normal_floats(static_cast<std::size_t>(n * h * w * c), 1),
                           wt = test::normal_floats(static_cast<std::size_t>(out * ckk), 2);
  std::vector<float> col(static_cast<std::size_t>(n * h * w * ckk)), y(static_cast<std::size_t>(n * h * w * out));
  ops->im2col(x.data(), col.data(), n, h, w, c, k);
  ops->gemm(false, true, n * h * w, out, ckk, 1.0f, col.data(), ckk, wt.data(), ckk, 0.0f, y.data(), out);
  for (int i = 0; i < n; ++i)
    for (int py = 0; py < h; ++py)
      for (int px = 0; px < w; ++px)
        for (int o = 0; o < out; ++o) {
          double want = 0;  // torch's conv2d: weight[o][ch][ky][kx] * x[i][ch][py+ky-1][px+kx-1], zero outside
          for (int ch = 0; ch < c; ++ch)
            for (int ky = 0; ky < k; ++ky)
              for (int kx = 0; kx < k; ++kx) {
                const int sy = py + ky - 1, sx = px + kx - 1;
                if (sy < 0 || sy >= h || sx < 0 || sx >= w) continue;
                want += static_cast<double>(wt[static_cast<std::size_t>(((o * c + ch) * k + ky) * k + kx)]) *
                        x[static_cast<std::size_t>(((i * h + sy) * w + sx) * c + ch)];
              }
          EXPECT_NEAR(y[static_cast<std::size_t>(((i * h + py) * w + px) * out + o)], want, 1e-5);
        }
}

TEST_P(CnnOps, Col2imIsTheAdjointOfIm2col) {
  auto ops = make_ops(GetParam());
  const int n = 2, h = 4, w = 6, c = 2, k = 5;
  const std::size_t nx = static_cast<std::size_t>(n * h * w * c), ncol = nx * k * k;
  const std::vector<float> x = test::normal_floats(nx, 3), g = test::normal_floats(ncol, 4);
  std::vector<float> col(ncol), dx(nx);
  ops->im2col(x.data(), col.data(), n, h, w, c, k);
  ops->col2im(g.data(), dx.data(), n, h, w, c, k);
  double lhs = 0, rhs = 0;  // <im2col(x), g> == <x, col2im(g)>
  for (std::size_t i = 0; i < ncol; ++i) lhs += static_cast<double>(col[i]) * g[i];
  for (std::size_t i = 0; i < nx; ++i) rhs += static_cast<double>(x[i]) * dx[i];
  EXPECT_NEAR(lhs, rhs, 1e-4 * std::abs(lhs) + 1e-4);
}

TEST_P(CnnOps, MaxPoolTakesTheFirstMaximumBothWays) {
  auto ops = make_ops(GetParam());
  // One image 2 x 4, one channel: windows {1, 3 | 3, 2} (a tie: the first 3 wins) and {-1, -5 | -2, -1}.
  const std::vector<float> x{1, 3, -1, -5, 3, 2, -2, -1}, dy{10, 20};
  std::vector<float> y(2), dx(8, 7.0f);
  ops->max_pool(x.data(), y.data(), 1, 2, 4, 1);
  EXPECT_EQ(y, (std::vector<float>{3, -1}));
  ops->max_pool_backward(x.data(), y.data(), dy.data(), dx.data(), 1, 2, 4, 1);
  EXPECT_EQ(dx, (std::vector<float>{0, 10, 20, 0, 0, 0, 0, 0}));
}

TEST_P(CnnOps, BatchNormNormalisesEachChannelAndKeepsRunningStatistics) {
  auto ops = make_ops(GetParam());
  const int rows = 50, cols = 3;
  std::vector<float> x = test::normal_floats(static_cast<std::size_t>(rows * cols), 5);
  for (int i = 0; i < rows; ++i)
    x[static_cast<std::size_t>(i * cols + 2)] = 4.0f + 3.0f * x[static_cast<std::size_t>(i * cols + 2)];
  std::vector<float> moments(2 * cols + 1), mean(cols), var(cols), rm(cols, 0.0f), rv(cols, 1.0f), y(x.size());
  const std::vector<float> gamma{1, 2, 0.5f}, beta{0, -1, 3};
  ops->channel_moments(x.data(), rows, cols, moments.data());
  EXPECT_EQ(moments[2 * cols], static_cast<float>(rows));
  ops->batch_norm_statistics(moments.data(), cols, mean.data(), var.data(), rm.data(), rv.data(), 0.1f);
  ops->batch_norm(x.data(), y.data(), rows, cols, mean.data(), var.data(), gamma.data(), beta.data(), 1e-5f);
  for (int j = 0; j < cols; ++j) {
    double s = 0, s2 = 0, m = 0, v = 0;
    for (int i = 0; i < rows; ++i) m += x[static_cast<std::size_t>(i * cols + j)] / double(rows);
    for (int i = 0; i < rows; ++i) v += std::pow(x[static_cast<std::size_t>(i * cols + j)] - m, 2) / rows;
    for (int i = 0; i < rows; ++i)
      s += y[static_cast<std::size_t>(i * cols + j)],
          s2 += std::pow(y[static_cast<std::size_t>(i * cols + j)] - beta[j], 2);
    EXPECT_NEAR(mean[j], m, 1e-5);
    EXPECT_NEAR(var[j], v, 1e-4 * v);
    EXPECT_NEAR(s / rows, beta[j], 1e-5);                                // mean beta
    EXPECT_NEAR(s2 / rows, gamma[j] * gamma[j] * v / (v + 1e-5), 1e-4);  // variance gamma^2
    EXPECT_NEAR(rm[j], 0.1 * m, 1e-6);                                   // PyTorch: momentum 0.1, unbiased variance
    EXPECT_NEAR(rv[j], 0.9 + 0.1 * v * rows / (rows - 1), 1e-5);
  }
}

INSTANTIATE_TEST_SUITE_P(HostBackends, CnnOps, testing::Values("cpu", "reference"));

// The mean loss of a forward pass; parameters perturbed in place.
struct Net {
  explicit Net(const std::string& backend, const std::string& bn, int batch = 3)
      : ops(make_ops(backend)),
        model(*ops, small_cnn(bn), batch),
        batch(batch),
        x(test::normal_floats(static_cast<std::size_t>(batch) * 128, 11)) {
    model.init(7);
  }
  double loss() {
    model.forward(x.data(), batch);
    return model.loss(y.data());
  }
  std::unique_ptr<Ops> ops;
  Cnn model;
  int batch;
  std::vector<float> x;
  std::vector<std::int32_t> y{0, 2, 1};
};

class CnnGradients : public testing::TestWithParam<std::string> {};

TEST_P(CnnGradients, EveryParameterMatchesFiniteDifferences) {
  Net net("reference", GetParam());
  net.model.forward(net.x.data(), net.batch);
  std::vector<int> order;
  net.model.backward(net.y.data(), [&](int p) { order.push_back(p); });
  EXPECT_EQ(order, net.model.spec().expected_ready_order());
  const std::vector<float> analytic(net.model.grads(), net.model.grads() + net.model.num_params());
  // Batch norm's batch statistics change with every parameter before it: the finite differences see that too.
  for (const ParamInfo& p : net.model.param_info()) {
    const test::FdResult r = test::finite_differences(net.model, p, analytic, 1e-3f, [&] { return net.loss(); });
    EXPECT_GT(r.max_grad, 1e-4) << p.name << " has no gradient signal";
    EXPECT_LT(r.max_err, 2e-4 + 1e-2 * r.max_grad) << p.name << " (largest gradient " << r.max_grad << ")";
  }
}

TEST_P(CnnGradients, CpuAgreesWithReferenceAndAccumulationAdds) {
  Net cpu("cpu", GetParam()), ref("reference", GetParam());
  test::expect_backends_agree_and_accumulation_adds(cpu.model, ref.model, cpu.x.data(), cpu.y.data(), cpu.batch, 1e-4,
                                                    1e-3, 1e-5, 1e-4);
}

INSTANTIATE_TEST_SUITE_P(Bn, CnnGradients, testing::Values("none", "local"));

TEST(Cnn, EvaluationUsesRunningStatistics) {
  Net net("cpu", "local");
  const std::vector<float> fresh(net.model.buffers(), net.model.buffers() + net.model.num_buffers());
  // Running means 0, variances 1 (bn1: 3 channels, bn2: 4).
  ASSERT_EQ(fresh.size(), 2u * (3 + 4));
  EXPECT_EQ(fresh[0], 0.0f);
  EXPECT_EQ(fresh[3], 1.0f);
  net.model.set_training(false);
  const float* eval_logits = net.model.forward(net.x.data(), 1);
  const std::vector<float> alone(eval_logits, eval_logits + 3);
  // In evaluation one sample's logits do not depend on the rest of its batch; in training they do.
  net.model.forward(net.x.data(), 3);
  for (int j = 0; j < 3; ++j) EXPECT_EQ(net.model.forward(net.x.data(), 3)[j], alone[static_cast<std::size_t>(j)]);
  const std::vector<float> unchanged(net.model.buffers(), net.model.buffers() + net.model.num_buffers());
  EXPECT_EQ(unchanged, fresh) << "evaluation moved the running statistics";
  net.model.set_training(true);
  net.model.forward(net.x.data(), 3);
  bool moved = false;
  for (std::size_t i = 0; i < fresh.size(); ++i) moved = moved || net.model.buffers()[i] != fresh[i];
  EXPECT_TRUE(moved);
  EXPECT_THROW(net.model.forward(net.x.data(), 4), ddplab::InternalError);
}

}  // namespace
}  // namespace ddplab
