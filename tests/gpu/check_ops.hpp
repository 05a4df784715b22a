// The op-by-op checks both backend comparisons run: TEST_P-free, so each test file instantiates them for
// its pair of backends through DDPLAB_OP_TESTS(Fixture, gemm_tol, elementwise_tol).
#pragma once
#include <gtest/gtest.h>

#include "op_compare.hpp"

namespace ddplab::test {
// The CUDA backend (ops) beside the reference (ref); skipped with the reason when no device is visible.
class CudaAndReference : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string why = cuda_unavailable_reason();
    if (!why.empty()) GTEST_SKIP() << why;
    ops = make_cuda_ops(false);
    ref = make_reference_ops();
  }
  std::unique_ptr<Ops> ops, ref;
};
}  // namespace ddplab::test

#define DDPLAB_OP_TESTS(Fixture, GEMM_TOL, EW_TOL)                                                                    \
  TEST_F(Fixture, GemmAllTransposesAndShapes) {                                                                       \
    const int shapes[][3] = {                                                                                         \
        {64, 1024, 784}, {1024, 784, 64}, {64, 10, 1024}, {10, 1024, 64}, {1, 1, 1}, {37, 53, 71}};                   \
    std::uint64_t seed = 1;                                                                                           \
    for (const auto& s : shapes)                                                                                      \
      for (int ta = 0; ta < 2; ++ta)                                                                                  \
        for (int tb = 0; tb < 2; ++tb) {                                                                              \
          const ::ddplab::test::Tol t{GEMM_TOL.atol * std::sqrt(double(s[2])), GEMM_TOL.rtol};                        \
          EXPECT_LE(::ddplab::test::compare_gemm(*ops, *ref, ta, tb, s[0], s[1], s[2], t, seed++), 1.0)               \
              << "m=" << s[0] << " n=" << s[1] << " k=" << s[2] << " ta=" << ta << " tb=" << tb;                      \
        }                                                                                                             \
  }                                                                                                                   \
  TEST_F(Fixture, AddBias) {                                                                                          \
    for (auto [r, c] : {std::pair{64, 1024}, {3, 10}, {1000, 33}})                                                    \
      EXPECT_LE(::ddplab::test::compare(                                                                              \
                    *ops, *ref,                                                                                       \
                    {::ddplab::test::random_floats(size_t(r) * c, 5), ::ddplab::test::random_floats(size_t(c), 6)},   \
                    EW_TOL, [&](::ddplab::Ops& o, std::vector<float*>& p) { o.add_bias(p[0], p[1], r, c); }),         \
                1.0);                                                                                                 \
  }                                                                                                                   \
  TEST_F(Fixture, BiasGradReplaceAndAccumulate) {                                                                     \
    for (bool acc : {false, true})                                                                                    \
      for (auto [r, c] : {std::pair{64, 1024}, {3, 10}, {1000, 33}})                                                  \
        EXPECT_LE(::ddplab::test::compare(                                                                            \
                      *ops, *ref,                                                                                     \
                      {::ddplab::test::random_floats(size_t(r) * c, 7), ::ddplab::test::random_floats(size_t(c), 8)}, \
                      ::ddplab::test::Tol{EW_TOL.atol * std::sqrt(double(r)), EW_TOL.rtol},                           \
                      [&](::ddplab::Ops& o, std::vector<float*>& p) { o.bias_grad(p[0], p[1], r, c, acc); }),         \
                  1.0)                                                                                                \
            << "rows=" << r << " cols=" << c << " accumulate=" << acc;                                                \
  }                                                                                                                   \
  TEST_F(Fixture, ReluAndBackward) {                                                                                  \
    const auto y = ::ddplab::test::random_floats(100003, 9), dx = ::ddplab::test::random_floats(100003, 10);          \
    EXPECT_LE(::ddplab::test::compare(*ops, *ref, {y}, EW_TOL,                                                        \
                                      [&](::ddplab::Ops& o, std::vector<float*>& p) { o.relu(p[0], y.size()); }),     \
              1.0);                                                                                                   \
    EXPECT_LE(::ddplab::test::compare(                                                                                \
                  *ops, *ref, {dx, y}, EW_TOL,                                                                        \
                  [&](::ddplab::Ops& o, std::vector<float*>& p) { o.relu_backward(p[0], p[1], y.size()); }),          \
              1.0);                                                                                                   \
  }                                                                                                                   \
  TEST_F(Fixture, SoftmaxXentLossAndGradient) {                                                                       \
    for (auto [r, c] : {std::pair{64, 10}, {1, 2}, {1000, 10}, {5, 1000}}) {                                          \
      double loss_err = 0;                                                                                            \
      EXPECT_LE(::ddplab::test::compare_softmax(*ops, *ref, r, c, EW_TOL, 11, &loss_err), 1.0)                        \
          << "rows=" << r << " cols=" << c;                                                                           \
      EXPECT_LE(loss_err, 1e-5) << "rows=" << r << " cols=" << c;                                                     \
      EXPECT_LE(::ddplab::test::compare_softmax(*ops, *ref, r, c, EW_TOL, 11, &loss_err, true), 1.0)                  \
          << "weighted, rows=" << r << " cols=" << c;                                                                 \
      EXPECT_LE(loss_err, 1e-5) << "weighted, rows=" << r << " cols=" << c;                                           \
    }                                                                                                                 \
  }                                                                                                                   \
  TEST_F(Fixture, SoftmaxXentRejectsBadLabel) {                                                                       \
    ::ddplab::test::Dev z(*ops, ::ddplab::test::random_floats(20, 12));                                               \
    std::int32_t* y = ops->alloc_labels(2);                                                                           \
    const std::int32_t bad[2] = {3, 10};                                                                              \
    ops->labels_to_device(y, bad, 2);                                                                                 \
    EXPECT_THROW(ops->softmax_xent(z.get(), y, 2, 10, nullptr), std::out_of_range);                                   \
    ops->free_labels(y);                                                                                              \
  }                                                                                                                   \
  TEST_F(Fixture, Scale) {                                                                                            \
    const auto x = ::ddplab::test::random_floats(4097, 13);                                                           \
    EXPECT_LE(                                                                                                        \
        ::ddplab::test::compare(*ops, *ref, {x}, EW_TOL,                                                              \
                                [&](::ddplab::Ops& o, std::vector<float*>& p) { o.scale(p[0], x.size(), 0.25f); }),   \
        1.0);                                                                                                         \
  }
