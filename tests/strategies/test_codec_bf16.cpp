// bfloat16 conversions against known bit patterns, and the bf16 codec against a reference average that
// rounds the way the executor does.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <random>

#include "codec_harness.hpp"
#include "ddplab/strategies/half.hpp"

namespace ddplab {
namespace {

TEST(HalfBf16, KnownBitPatternsAndRounding) {
  EXPECT_EQ(float_to_bf16(1.0f), 0x3F80);
  EXPECT_EQ(float_to_bf16(-2.5f), 0xC020);
  EXPECT_EQ(float_to_bf16(0.0f), 0x0000);
  EXPECT_EQ(float_to_bf16(-0.0f), 0x8000);
  EXPECT_EQ(bf16_to_float(0x3F80), 1.0f);
  // 1 + 2^-8 is halfway between 1 and 1 + 2^-7: ties to even (1); 1 + 3 * 2^-8 rounds up to 1 + 2^-6.
  EXPECT_EQ(float_to_bf16(1.0f + std::ldexp(1.0f, -8)), 0x3F80);
  EXPECT_EQ(float_to_bf16(1.0f + 3 * std::ldexp(1.0f, -8)), 0x3F82);
  EXPECT_EQ(float_to_bf16(1.0f + std::ldexp(1.0f, -8) + std::ldexp(1.0f, -20)), 0x3F81);
  EXPECT_EQ(float_to_bf16(1.0f + std::ldexp(1.0f, -9)), 0x3F80);
  // The largest float rounds past the largest bf16 (0x7F7F) to inf; inf and NaN stay what they are.
  EXPECT_EQ(float_to_bf16(std::numeric_limits<float>::max()), 0x7F80);
  EXPECT_EQ(float_to_bf16(std::numeric_limits<float>::infinity()), 0x7F80);
  EXPECT_EQ(float_to_bf16(-std::numeric_limits<float>::infinity()), 0xFF80);
  for (std::uint32_t nan_bits : {0x7fc00000u, 0x7f800001u, 0xffffffffu}) {
    const std::uint16_t b = float_to_bf16(std::bit_cast<float>(nan_bits));
    EXPECT_TRUE(std::isnan(bf16_to_float(b))) << std::hex << nan_bits;
  }
  // Subnormal floats keep bf16's (float's) exponent range.
  EXPECT_EQ(float_to_bf16(std::bit_cast<float>(0x00010000u)), 0x0001);
}

TEST(HalfBf16, EveryPatternRoundTripsAndAddRoundsTheSum) {
  for (std::uint32_t b = 0; b < 0x10000; ++b) {
    const float f = bf16_to_float(static_cast<std::uint16_t>(b));
    if (std::isnan(f)) continue;
    ASSERT_EQ(float_to_bf16(f), b) << std::hex << b;
  }
  const auto h = [](float f) { return float_to_bf16(f); };
  EXPECT_EQ(bf16_add(h(256.0f), h(1.0f)), h(256.0f));  // 257: tie, even wins
  EXPECT_EQ(bf16_add(h(258.0f), h(1.0f)), h(260.0f));  // 259: tie, rounds up to even
  std::vector<std::uint16_t> acc{h(1.0f)}, in{h(2.0f)};
  sum_into(ElemType::BF16, acc.data(), in.data(), 1);
  EXPECT_EQ(acc[0], h(3.0f));
}

TEST(CodecBf16, MatchesTheRoundedReferenceAndStaysWithinBf16Epsilon) {
  std::mt19937 gen(5);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int n : {1, 2, 4, 7}) {
    const std::size_t count = 513;
    std::vector<std::vector<float>> g(static_cast<std::size_t>(n), std::vector<float>(count));
    for (auto& v : g)
      for (float& x : v) x = normal(gen) * 1e30f;  // far outside f16's range: bf16 keeps float's exponent
    auto ranks = testing::make_ranks("bf16", {}, n);
    const auto step = testing::run_codec_step(testing::raw(ranks), testing::flat_bucket(count), g, 3);
    ASSERT_TRUE(step.ok);
    ASSERT_EQ(step.plan.size(), 1u);
    EXPECT_EQ(step.plan[0].type, ElemType::BF16);
    EXPECT_TRUE(testing::all_ranks_identical(step));
    const float w = static_cast<float>(n);
    for (std::size_t i = 0; i < count; ++i) {
      std::uint16_t s = float_to_bf16(g[0][i] / w);
      double exact = g[0][i], mag = std::abs(g[0][i]);
      for (int r = 1; r < n; ++r) {
        s = bf16_add(s, float_to_bf16(g[static_cast<std::size_t>(r)][i] / w));
        exact += g[static_cast<std::size_t>(r)][i];
        mag += std::abs(g[static_cast<std::size_t>(r)][i]);
      }
      ASSERT_EQ(std::bit_cast<std::uint32_t>(step.grads[0][i]), std::bit_cast<std::uint32_t>(bf16_to_float(s))) << i;
      EXPECT_LE(std::abs(step.grads[0][i] - exact / n), (n + 1) * std::ldexp(1.0, -8) * mag / n) << i;
    }
  }
  EXPECT_EQ(testing::make_ranks("bf16", {}, 1)[0]->wire_bytes(testing::flat_bucket(10), 4, 0), 20u);
}

}  // namespace
}  // namespace ddplab
