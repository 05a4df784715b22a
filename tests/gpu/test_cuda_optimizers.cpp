// Every registry optimizer on the CUDA backend's compute (runtime/cuda/cuda_codec.cu) against the same
// optimizer on the host's (label gpu). The element-wise primitives round as the host loops do, so the
// optimizers without norms match to the bit; LARS and LAMB take norms, which the device sums in another
// order, and agree to float rounding. Without a device every test is skipped with the reason.
#include <gtest/gtest.h>

#include <bit>
#include <cstring>
#include <random>

#include "normal_floats.hpp"
#include "ddplab/runtime/ops.hpp"
#include "ddplab/strategies/codec_compute.hpp"
#include "optimizer_harness.hpp"

namespace ddplab {
namespace {

class CudaOptimizers : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string why = cuda_unavailable_reason();
    if (!why.empty()) GTEST_SKIP() << why;
    ops = make_cuda_ops();
  }
  std::unique_ptr<Ops> ops;
};

TEST_F(CudaOptimizers, PrimitivesRoundAsTheHostDoes) {
  CodecCompute& dev = ops->codec_compute();
  CodecCompute& host = host_codec_compute();
  const std::size_t n = 100003;
  const auto y0 = test::normal_floats(n, 1), x = test::normal_floats(n, 2), v = test::normal_floats(n, 3);
  std::vector<float> vpos(v);
  for (float& e : vpos) e = std::abs(e);
  // Runs f on host vectors and on device copies; the results must be the same bits.
  auto same = [&](const char* what, auto f) {
    std::vector<float> hy = y0;
    f(host, hy.data(), x.data(), vpos.data());
    CodecBuffer dy(dev, n * 4), dx(dev, n * 4), dv(dev, n * 4);
    dev.upload(dy.get(), y0.data(), n * 4), dev.upload(dx.get(), x.data(), n * 4),
        dev.upload(dv.get(), vpos.data(), n * 4);
    f(dev, dy.as<float>(), dx.as<float>(), dv.as<float>());
    std::vector<float> got(n);
    dev.download(got.data(), dy.get(), n * 4);
    EXPECT_EQ(std::memcmp(got.data(), hy.data(), n * 4), 0) << what;
  };
  same("scale", [&](CodecCompute& c, float* y, const float*, const float*) { c.scale(y, n, 0.37f); });
  same("axpby", [&](CodecCompute& c, float* y, const float* a, const float*) { c.axpby(y, a, n, -0.05f, 0.9f); });
  same("axpby b=0", [&](CodecCompute& c, float* y, const float* a, const float*) { c.axpby(y, a, n, 0.3f, 0.0f); });
  same("ema_square", [&](CodecCompute& c, float* y, const float* a, const float*) { c.ema_square(y, a, n, 0.999f); });
  same("add_rms_ratio", [&](CodecCompute& c, float* y, const float* a, const float* w) {
    c.add_rms_ratio(y, a, w, n, -1e-3f, 1.0f, 0.0316f, 1e-8f);
  });
  same("add_rms_ratio b=0", [&](CodecCompute& c, float* y, const float* a, const float* w) {
    c.add_rms_ratio(y, a, w, n, 2.0f, 0.0f, 1.0f, 1e-6f);
  });
  CodecBuffer dx(dev, n * 4);
  dev.upload(dx.get(), x.data(), n * 4);
  const double want = host.sum_squares(x.data(), n), got = dev.sum_squares(dx.as<float>(), n);
  EXPECT_NEAR(got, want, 1e-12 * want);
}

TEST_F(CudaOptimizers, EveryOptimizerMatchesTheHost) {
  for (const OptimizerInfo& o : optimizers()) {
    const test::UpdateSetup s;
    const auto want = test::run_updates(o.name, {}, s);
    const auto got = test::run_updates(o.name, {}, s, ops->codec_compute());
    for (std::size_t t = 0; t < want.size(); ++t)
      for (std::size_t i = 0; i < want[t].size(); ++i) {
        if (o.per_tensor)
          EXPECT_NEAR(got[t][i], want[t][i], 1e-6f * (1 + std::abs(want[t][i])))
              << o.name << " update " << t + 1 << " element " << i;
        else
          EXPECT_EQ(std::bit_cast<std::uint32_t>(got[t][i]), std::bit_cast<std::uint32_t>(want[t][i]))
              << o.name << " update " << t + 1 << " element " << i;
      }
  }
}

}  // namespace
}  // namespace ddplab
