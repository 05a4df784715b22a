// The reference backend against the OpenBLAS one (label unit), so it can be trusted as the yardstick
// for the CUDA backend on machines without OpenBLAS.
#include "check_ops.hpp"
#include "ddplab/core/error.hpp"

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

TEST(ReferenceOps, MakeOpsKnowsEveryBackend) {
  EXPECT_EQ(make_ops("reference")->name(), "reference");
  try {
    make_ops("tpu");
    FAIL() << "no exception";
  } catch (const ddplab::InputError& e) {
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
