// Every CUDA op against the reference backend on random inputs (label gpu). Without a device each test
// is skipped with the reason, so a CPU-only CI shows them as skipped, not passed.
#include "check_ops.hpp"

namespace ddplab {
namespace {

class CudaVsReference : public test::CudaAndReference {};

// fp32 on cuBLAS (different summation order, FMA): atol 2e-5 * sqrt(k), rtol 1e-4.
// Element-wise kernels: expf/logf are within 2 ulp, so rtol 1e-5 with a small atol.
constexpr test::Tol kGemm{2e-5, 1e-4};
constexpr test::Tol kElementwise{1e-6, 1e-5};
DDPLAB_OP_TESTS(CudaVsReference, kGemm, kElementwise)

class Tf32VsReference : public CudaVsReference {
 protected:
  void SetUp() override {
    CudaVsReference::SetUp();
    if (!IsSkipped()) ops = make_cuda_ops(true);
  }
};

// TF32 keeps 10 mantissa bits of each input: relative error per product ~2^-11, so atol 2e-3 * sqrt(k).
TEST_F(Tf32VsReference, GemmWithinTf32Precision) {
  EXPECT_EQ(ops->name(), "cuda-tf32");
  EXPECT_LE(test::compare_gemm(*ops, *ref, false, true, 64, 1024, 784, {2e-3 * std::sqrt(784.0), 1e-2}, 21), 1.0);
}

}  // namespace
}  // namespace ddplab
