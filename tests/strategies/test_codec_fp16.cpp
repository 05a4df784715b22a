// IEEE binary16 conversions against known bit patterns and a nearest-value reference, and the fp16 codec
// against an average computed the way the executor reduces (round(float(a) + float(b)) in rank order).
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <limits>
#include <random>

#include "codec_harness.hpp"
#include "ddplab/core/error.hpp"
#include "ddplab/strategies/half.hpp"

namespace ddplab {
namespace {

TEST(HalfF16, KnownBitPatterns) {
  EXPECT_EQ(float_to_f16(1.0f), 0x3C00);
  EXPECT_EQ(float_to_f16(-2.0f), 0xC000);
  EXPECT_EQ(float_to_f16(0.0f), 0x0000);
  EXPECT_EQ(float_to_f16(-0.0f), 0x8000);
  EXPECT_EQ(float_to_f16(65504.0f), 0x7BFF);                      // largest finite
  EXPECT_EQ(float_to_f16(std::ldexp(1.0f, -14)), 0x0400);         // smallest normal
  EXPECT_EQ(float_to_f16(std::ldexp(1.0f, -24)), 0x0001);         // smallest subnormal
  EXPECT_EQ(float_to_f16(1023 * std::ldexp(1.0f, -24)), 0x03FF);  // largest subnormal
  EXPECT_EQ(float_to_f16(0.1f), 0x2E66);
  EXPECT_EQ(f16_to_float(0x0001), std::ldexp(1.0f, -24));
  EXPECT_EQ(f16_to_float(0x7BFF), 65504.0f);
  EXPECT_EQ(f16_to_float(0x3C00), 1.0f);
  EXPECT_EQ(f16_to_float(0x8000), 0.0f);
  EXPECT_TRUE(std::signbit(f16_to_float(0x8000)));
}

TEST(HalfF16, RoundsToNearestTiesToEven) {
  // 1 + 2^-11 is halfway between 1 and 1 + 2^-10: the even one (1) wins; 1 + 3 * 2^-11 goes up to 1 + 2^-9.
  EXPECT_EQ(float_to_f16(1.0f + std::ldexp(1.0f, -11)), 0x3C00);
  EXPECT_EQ(float_to_f16(1.0f + 3 * std::ldexp(1.0f, -11)), 0x3C02);
  EXPECT_EQ(float_to_f16(1.0f + std::ldexp(1.0f, -11) + std::ldexp(1.0f, -20)), 0x3C01);  // above halfway
  // Subnormal ties: 2^-25 (half the smallest subnormal) goes to 0, 3 * 2^-25 goes to 2 * 2^-24.
  EXPECT_EQ(float_to_f16(std::ldexp(1.0f, -25)), 0x0000);
  EXPECT_EQ(float_to_f16(std::ldexp(1.5f, -25)), 0x0001);
  EXPECT_EQ(float_to_f16(3 * std::ldexp(1.0f, -25)), 0x0002);
  EXPECT_EQ(float_to_f16(-std::ldexp(1.0f, -26)), 0x8000);
  EXPECT_EQ(float_to_f16(1e-10f), 0x0000);
  // Rounding up out of the subnormal range gives the smallest normal.
  EXPECT_EQ(float_to_f16(std::ldexp(1.0f, -14) - std::ldexp(1.0f, -26)), 0x0400);
}

TEST(HalfF16, OverflowInfAndNaN) {
  EXPECT_EQ(float_to_f16(65519.0f), 0x7BFF);  // below the halfway point to 65536
  EXPECT_EQ(float_to_f16(65520.0f), 0x7C00);  // halfway: ties to even = 2^16 = inf
  EXPECT_EQ(float_to_f16(1e9f), 0x7C00);
  EXPECT_EQ(float_to_f16(-1e9f), 0xFC00);
  EXPECT_EQ(float_to_f16(std::numeric_limits<float>::infinity()), 0x7C00);
  EXPECT_EQ(float_to_f16(-std::numeric_limits<float>::infinity()), 0xFC00);
  EXPECT_TRUE(std::isinf(f16_to_float(0x7C00)));
  for (float nan : {std::numeric_limits<float>::quiet_NaN(), std::bit_cast<float>(0x7f800001u),
                    std::bit_cast<float>(0xffc00000u)}) {
    const std::uint16_t h = float_to_f16(nan);
    EXPECT_EQ(h & 0x7C00, 0x7C00);
    EXPECT_NE(h & 0x03FF, 0) << "NaN must not become inf";
    EXPECT_TRUE(std::isnan(f16_to_float(h)));
  }
}

TEST(HalfF16, EveryPatternRoundTrips) {
  for (std::uint32_t h = 0; h < 0x10000; ++h) {
    const float f = f16_to_float(static_cast<std::uint16_t>(h));
    if (std::isnan(f)) continue;
    ASSERT_EQ(float_to_f16(f), h) << std::hex << h;
  }
}

TEST(HalfF16, PicksTheNearestValueOverTheWholeRange) {
  // Walk float bit patterns across the f16 range; the result must be at least as close as its neighbours.
  for (std::uint32_t bits = 0x33000000u; bits < 0x477ff000u; bits += 4093) {
    for (float x : {std::bit_cast<float>(bits), -std::bit_cast<float>(bits)}) {
      const std::uint16_t h = float_to_f16(x);
      const double err = std::abs(static_cast<double>(f16_to_float(h)) - x);
      for (int d : {-1, 1}) {
        const std::uint16_t nb = static_cast<std::uint16_t>(h + d);
        if ((nb & 0x7C00) == 0x7C00 || ((nb ^ h) & 0x8000)) continue;  // skip inf/NaN and sign flips
        ASSERT_LE(err, std::abs(static_cast<double>(f16_to_float(nb)) - x)) << x;
      }
    }
  }
}

TEST(HalfF16, AddRoundsTheExactSum) {
  const auto h = [](float f) { return float_to_f16(f); };
  EXPECT_EQ(f16_add(h(1.0f), h(1.0f)), h(2.0f));
  EXPECT_EQ(f16_add(h(2048.0f), h(1.0f)), h(2048.0f));  // 2049: tie, even mantissa wins
  EXPECT_EQ(f16_add(h(2050.0f), h(1.0f)), h(2052.0f));  // 2051: tie, rounds up to even
  EXPECT_EQ(f16_add(h(60000.0f), h(10000.0f)), 0x7C00);
  std::vector<std::uint16_t> acc{h(1.0f), h(0.5f)}, in{h(0.25f), h(-0.5f)};
  sum_into(ElemType::F16, acc.data(), in.data(), 2);
  EXPECT_EQ(acc, (std::vector<std::uint16_t>{h(1.25f), h(0.0f)}));
  EXPECT_THROW(sum_into(ElemType::IndexValue, acc.data(), in.data(), 1), ddplab::InternalError);
}

// The average as the codec must produce it: divide in float, cast, sum in f16 in rank order, cast back.
std::vector<float> f16_reference(const std::vector<std::vector<float>>& g) {
  const float w = static_cast<float>(g.size());
  std::vector<float> out(g[0].size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    std::uint16_t s = float_to_f16(g[0][i] / w);
    for (std::size_t r = 1; r < g.size(); ++r) s = f16_add(s, float_to_f16(g[r][i] / w));
    out[i] = f16_to_float(s);
  }
  return out;
}

TEST(CodecFp16, MatchesTheRoundedReferenceAndStaysWithinHalfEpsilon) {
  std::mt19937 gen(11);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  for (int n : {1, 2, 3, 5, 8}) {
    const std::size_t count = 997;
    std::vector<std::vector<float>> g(static_cast<std::size_t>(n), std::vector<float>(count));
    for (auto& v : g)
      for (std::size_t i = 0; i < count; ++i) v[i] = normal(gen) * std::ldexp(1.0f, static_cast<int>(i % 20) - 10);
    auto ranks = testing::make_ranks("fp16", {}, n);
    const auto step = testing::run_codec_step(testing::raw(ranks), testing::flat_bucket(count), g, 0);
    ASSERT_TRUE(step.ok);
    ASSERT_EQ(step.plan.size(), 1u);
    EXPECT_EQ(step.plan[0].type, ElemType::F16);
    EXPECT_EQ(step.plan[0].count, count);
    EXPECT_TRUE(testing::all_ranks_identical(step));
    const auto ref = f16_reference(g);
    for (std::size_t i = 0; i < count; ++i) {
      ASSERT_EQ(std::bit_cast<std::uint32_t>(step.grads[0][i]), std::bit_cast<std::uint32_t>(ref[i]))
          << "n=" << n << " i=" << i;
      double exact = 0, mag = 0;
      for (const auto& v : g) exact += v[i], mag += std::abs(v[i]);
      // One rounding per cast and per add, each at most 2^-11 relative, plus subnormal spacing.
      const double bound = (n + 1) * std::ldexp(1.0, -11) * mag / n + n * std::ldexp(1.0, -24);
      EXPECT_LE(std::abs(step.grads[0][i] - exact / n), bound) << "n=" << n << " i=" << i;
    }
  }
}

TEST(CodecFp16, DividesBeforeCastingSoLargeGradientsSurvive) {
  // 100000 does not fit in f16, but 100000 / 2 does and the average (40000) does too.
  auto ranks = testing::make_ranks("fp16", {}, 2);
  const auto step =
      testing::run_codec_step(testing::raw(ranks), testing::flat_bucket(2), {{100000.0f, 1.0f}, {-20000.0f, 3.0f}}, 0);
  ASSERT_TRUE(step.ok);
  EXPECT_EQ(step.grads[0], (std::vector<float>{40000.0f, 2.0f}));
  EXPECT_EQ(ranks[0]->wire_bytes(testing::flat_bucket(1000), 2, 0), 2000u);
}

}  // namespace
}  // namespace ddplab
