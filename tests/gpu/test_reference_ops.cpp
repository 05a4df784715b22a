// The reference backend against the OpenBLAS one (label unit), so it can be trusted as the yardstick
// for the CUDA backend on machines without OpenBLAS.
#include "check_ops.hpp"

namespace ddplab {
namespace {

class ReferenceVsCpu : public ::testing::Test {
 protected:
  std::unique_ptr<Ops> ops = make_ops("reference"), ref = make_ops("cpu");
};

// fp32 GEMM accumulation error grows like sqrt(k): atol 1e-5 * sqrt(k), rtol 1e-5.
constexpr test::Tol kGemm{1e-5, 1e-5};
constexpr test::Tol kElementwise{1e-6, 1e-5};
DDPLAB_OP_TESTS(ReferenceVsCpu, kGemm, kElementwise)

// Adam's first step from zero moments has a closed form: the bias corrections undo (1 - beta), so
// m_hat = d and sqrt(v_hat) = |d| with d = g + wd * p, and p moves by lr * d / (|d| + eps). The second
// step is checked against the recurrence written out in double.
TEST(Adam, FirstStepClosedFormSecondStepRecurrence) {
  const float lr = 1e-2f, wd = 0.1f, eps = 1e-3f;  // eps large enough to matter
  const std::vector<float> p0 = {1.0f, -2.0f, 0.5f, 0.0f}, g = {0.3f, 0.05f, -1.0f, 0.0f};
  std::vector<double> q(p0.begin(), p0.end()), m(4, 0.0), v(4, 0.0);
  std::vector<std::vector<double>> want;  // after step 1, after step 2
  for (int t = 1; t <= 2; ++t) {
    for (std::size_t i = 0; i < 4; ++i) {
      const double d = g[i] + wd * q[i];
      m[i] = 0.9 * m[i] + 0.1 * d;
      v[i] = 0.999 * v[i] + 0.001 * d * d;
      q[i] -= lr * (m[i] / (1 - std::pow(0.9, t))) / (std::sqrt(v[i] / (1 - std::pow(0.999, t))) + eps);
      if (t == 1) {
        EXPECT_NEAR(q[i], p0[i] - lr * d / (std::abs(d) + eps), 1e-12) << "closed form, element " << i;
      }
    }
    want.push_back(q);
  }
  for (const char* backend : {"cpu", "reference"}) {
    auto ops = make_ops(backend);
    std::vector<float> p = p0, pm(4, 0.0f), pv(4, 0.0f);
    for (int t = 1; t <= 2; ++t) {
      ops->adam(p.data(), g.data(), pm.data(), pv.data(), 4, lr, 0.9f, 0.999f, eps, wd, t);
      for (std::size_t i = 0; i < 4; ++i)
        EXPECT_NEAR(p[i], want[t - 1][i], 1e-6) << backend << " step " << t << " element " << i;
    }
  }
}

TEST(ReferenceOps, MakeOpsKnowsEveryBackend) {
  EXPECT_EQ(make_ops("reference")->name(), "reference");
  try {
    make_ops("tpu");
    FAIL() << "no exception";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("cpu, reference, cuda"), std::string::npos) << e.what();
  }
}

// Device-free: without CUDA (or a device), make_ops("cuda") says why instead of failing later.
TEST(CudaBackend, MakeOpsCudaNamesWhyNot) {
  const std::string why = cuda_unavailable_reason();
  if (why.empty()) GTEST_SKIP() << "a device is visible; the GPU tests cover make_ops(\"cuda\")";
  try {
    make_ops("cuda");
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(why), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ddplab
