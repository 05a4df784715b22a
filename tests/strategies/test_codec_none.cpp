// The `none` codec: one float32 allreduce, then divide by the world size; and the shared wire accounting.
#include <gtest/gtest-spi.h>
#include <gtest/gtest.h>

#include <random>

#include "codec_harness.hpp"

namespace ddplab {
namespace {

TEST(CodecNone, AveragesExactlyLikeARankOrderedSum) {
  std::mt19937 gen(3);
  std::uniform_real_distribution<float> uni(-10.0f, 10.0f);
  for (int n : {1, 2, 3, 6}) {
    const std::size_t count = 301;
    std::vector<std::vector<float>> g(static_cast<std::size_t>(n), std::vector<float>(count));
    for (auto& v : g)
      for (float& x : v) x = uni(gen);
    auto ranks = testing::make_ranks("none", {}, n);
    const auto step = testing::run_codec_step(testing::raw(ranks), testing::flat_bucket(count), g, 0);
    ASSERT_TRUE(step.ok);
    ASSERT_EQ(step.plan.size(), 1u);
    EXPECT_EQ(step.plan[0].collective, Collective::Allreduce);
    EXPECT_EQ(step.plan[0].type, ElemType::F32);
    EXPECT_EQ(step.plan[0].count, count);
    EXPECT_TRUE(testing::all_ranks_identical(step));
    for (std::size_t i = 0; i < count; ++i) {
      float s = g[0][i];
      for (int r = 1; r < n; ++r) s += g[static_cast<std::size_t>(r)][i];
      ASSERT_EQ(step.grads[0][i], s / static_cast<float>(n));
    }
  }
}

TEST(CodecNone, WireBytesAndEmptyBuckets) {
  auto codec = make_codec("none", {}, 0);
  EXPECT_EQ(codec->name(), "none");
  EXPECT_EQ(codec->wire_bytes(testing::flat_bucket(1000), 4, 0), 4000u);
  EXPECT_TRUE(codec->plan(testing::flat_bucket(0), 4, 0).empty());
  EXPECT_EQ(elem_bytes(ElemType::F32), 4u);
  EXPECT_EQ(elem_bytes(ElemType::F16), 2u);
  EXPECT_EQ(elem_bytes(ElemType::BF16), 2u);
  EXPECT_EQ(elem_bytes(ElemType::IndexValue), 8u);
  EXPECT_STREQ(elem_name(ElemType::IndexValue), "index_value");
}

TEST(CodecHarness, RejectsACodecThatStraysFromItsPlan) {
  // A codec announcing one call and issuing another must be caught, without hanging the other ranks.
  struct Liar : Codec {
    std::string name() const override { return "liar"; }
    std::vector<CollectiveCall> plan(const BucketLayout& b, int, std::int64_t) const override {
      return {{Collective::Allreduce, ElemType::F32, b.count, "x"}};
    }
    using Codec::run;
    void run(const BucketLayout& b, float* g, int, std::int64_t, const CollectiveFn& c, CodecCompute&) override {
      c({Collective::Allreduce, ElemType::F32, b.count - 1, "x"}, g);
    }
  };
  Liar a, b;
  ::testing::TestPartResultArray failures;
  bool ok = true;
  {
    ::testing::ScopedFakeTestPartResultReporter reporter(
        ::testing::ScopedFakeTestPartResultReporter::INTERCEPT_ALL_THREADS, &failures);
    ok = testing::run_codec_step({&a, &b}, testing::flat_bucket(4), {{1, 2, 3, 4}, {1, 2, 3, 4}}, 0).ok;
  }
  EXPECT_FALSE(ok);
  EXPECT_GE(failures.size(), 1);
}

}  // namespace
}  // namespace ddplab
