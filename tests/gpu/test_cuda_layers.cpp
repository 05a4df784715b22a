// The CUDA backend's convolution, pooling and batch-norm kernels, and a whole CNN step, against the
// reference backend (label gpu; skipped with the reason when no device is visible).
#include <gtest/gtest.h>

#include "ddplab/runtime/cnn.hpp"
#include "check_ops.hpp"

namespace ddplab {
namespace {

using test::compare;
using test::random_floats;
using Bufs = std::vector<float*>;

class CudaLayers : public test::CudaAndReference {};

constexpr test::Tol kExact{1e-30, 0};   // data movement: bit-identical
constexpr test::Tol kSums{1e-5, 1e-5};  // float sums in another order
const int n = 3, h = 6, w = 4, c = 5;   // NHWC
const std::size_t kPixels = std::size_t(n) * h * w;

TEST_F(CudaLayers, Im2colAndCol2im) {
  for (int k : {1, 3, 5}) {
    const std::size_t cols = kPixels * c * k * k;
    EXPECT_LE(compare(*ops, *ref, {random_floats(kPixels * c, 1), std::vector<float>(cols)}, kExact,
                      [&](Ops& o, Bufs& p) { o.im2col(p[0], p[1], n, h, w, c, k); }),
              1.0)
        << "k=" << k;
    EXPECT_LE(compare(*ops, *ref, {random_floats(cols, 2), std::vector<float>(kPixels * c)}, kSums,
                      [&](Ops& o, Bufs& p) { o.col2im(p[0], p[1], n, h, w, c, k); }),
              1.0)
        << "k=" << k;
  }
}

TEST_F(CudaLayers, MaxPoolAndBackwardWithTies) {
  auto x = random_floats(kPixels * c, 3);
  for (std::size_t i = 0; i < x.size(); i += 7) x[i] = 0.5f;  // ties inside windows
  std::vector<float> y(kPixels * c / 4);
  EXPECT_LE(compare(*ops, *ref, {x, y}, kExact, [&](Ops& o, Bufs& p) { o.max_pool(p[0], p[1], n, h, w, c); }), 1.0);
  ref->max_pool(x.data(), y.data(), n, h, w, c);
  EXPECT_LE(compare(*ops, *ref, {x, y, random_floats(y.size(), 4), std::vector<float>(x.size())}, kExact,
                    [&](Ops& o, Bufs& p) { o.max_pool_backward(p[0], p[1], p[2], p[3], n, h, w, c); }),
            1.0);
}

TEST_F(CudaLayers, BatchNormForwardStatisticsAndBackward) {
  const int rows = 1000, cols = 7;
  const auto x = random_floats(std::size_t(rows) * cols, 5, -2.0f, 3.0f), dy = random_floats(x.size(), 6);
  const auto gamma = random_floats(cols, 7, 0.5f, 2.0f), beta = random_floats(cols, 8);
  std::vector<float> moments(2 * cols + 1), mean(cols), var(cols), rm(cols, 0.2f), rv(cols, 1.5f);
  EXPECT_LE(compare(*ops, *ref, {x, moments}, {1e-4 * rows, 1e-5},
                    [&](Ops& o, Bufs& p) { o.channel_moments(p[0], rows, cols, p[1]); }),
            1.0);
  ref->channel_moments(x.data(), rows, cols, moments.data());
  EXPECT_LE(compare(*ops, *ref, {moments, mean, var, rm, rv}, kSums,
                    [&](Ops& o, Bufs& p) { o.batch_norm_statistics(p[0], cols, p[1], p[2], p[3], p[4], 0.1f); }),
            1.0);
  ref->batch_norm_statistics(moments.data(), cols, mean.data(), var.data(), nullptr, nullptr, 0.1f);
  EXPECT_LE(compare(*ops, *ref, {x, std::vector<float>(x.size()), mean, var, gamma, beta}, kSums,
                    [&](Ops& o, Bufs& p) { o.batch_norm(p[0], p[1], rows, cols, p[2], p[3], p[4], p[5], 1e-5f); }),
            1.0);
  std::vector<float> sums(2 * cols);
  EXPECT_LE(
      compare(*ops, *ref, {dy, x, mean, var, sums}, {1e-4 * rows, 1e-5},
              [&](Ops& o, Bufs& p) { o.batch_norm_backward_sums(p[0], p[1], rows, cols, p[2], p[3], 1e-5f, p[4]); }),
      1.0);
  ref->batch_norm_backward_sums(dy.data(), x.data(), rows, cols, mean.data(), var.data(), 1e-5f, sums.data());
  EXPECT_LE(compare(*ops, *ref, {dy, x, mean, var, gamma, sums, {float(rows)}, std::vector<float>(x.size())}, kSums,
                    [&](Ops& o, Bufs& p) {
                      o.batch_norm_backward(p[0], p[1], rows, cols, p[2], p[3], p[4], 1e-5f, p[5], p[6], p[7]);
                    }),
            1.0);
}

// One forward and backward of a CNN with batch norm: logits and every gradient against the reference.
TEST_F(CudaLayers, CnnStepMatchesReference) {
  ModelConfig m;
  m.type = ModelType::Cnn;
  m.conv = {8, 16};
  m.hidden = {32};
  m.bn = "local";
  const int batch = 16;
  const auto x = random_floats(std::size_t(batch) * 784, 9);
  std::vector<std::int32_t> y(batch);
  for (int i = 0; i < batch; ++i) y[std::size_t(i)] = i % 10;
  std::vector<std::vector<float>> grads;
  for (Ops* o : {ops.get(), ref.get()}) {
    Cnn net(*o, m, batch);
    net.init(3);
    test::Dev dx(*o, x);
    std::int32_t* dy = o->alloc_labels(batch);
    o->labels_to_device(dy, y.data(), batch);
    net.forward(dx.get(), batch);
    net.backward(dy);
    std::vector<float> g(net.num_params());
    o->to_host(g.data(), net.grads(), g.size());
    grads.push_back(g);
    o->free_labels(dy);
  }
  EXPECT_LE(test::worst(grads[0], grads[1], {1e-4, 1e-3}), 1.0);
}

}  // namespace
}  // namespace ddplab
