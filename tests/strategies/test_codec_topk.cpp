// Top-k: selection against a sorting reference (ties to the lower index), k for several ratios, the
// all-gather payload, error feedback that loses no mass, and bit-identical results on every rank.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <limits>
#include <numeric>
#include <random>

#include "../../strategies/src/codecs/codec_impl.hpp"
#include "codec_harness.hpp"

namespace ddplab {
namespace {

using codec_detail::IndexValue;
using codec_detail::TopkCodec;

// Reference: sort all indices by (NaN first, then |v| descending, then index ascending), keep k, return
// them ascending.
std::vector<std::uint32_t> reference_topk(const std::vector<float>& v, std::size_t k) {
  std::vector<std::uint32_t> idx(v.size());
  std::iota(idx.begin(), idx.end(), 0u);
  std::stable_sort(idx.begin(), idx.end(), [&](std::uint32_t a, std::uint32_t b) {
    if (std::isnan(v[a]) || std::isnan(v[b])) return std::isnan(v[a]) && !std::isnan(v[b]);
    return std::abs(v[a]) > std::abs(v[b]);
  });
  idx.resize(k);
  std::sort(idx.begin(), idx.end());
  return idx;
}

TEST(TopkSelect, MatchesSortingWithTiesToLowerIndex) {
  std::mt19937 gen(1);
  std::uniform_int_distribution<int> small(-4, 4);  // many equal magnitudes
  for (std::size_t count : {1u, 2u, 10u, 257u, 4000u}) {
    std::vector<float> v(count);
    for (float& x : v) x = static_cast<float>(small(gen)) * 0.5f;
    for (std::size_t k : {std::size_t{1}, count / 3 + 1, count}) {
      k = std::min(k, count);
      EXPECT_EQ(codec_detail::topk_select(v.data(), count, k), reference_topk(v, k)) << count << " " << k;
    }
  }
  const std::vector<float> ties{1.0f, -1.0f, 1.0f, 0.5f, -1.0f};
  EXPECT_EQ(codec_detail::topk_select(ties.data(), 5, 2), (std::vector<std::uint32_t>{0, 1}));
  EXPECT_EQ(codec_detail::topk_select(ties.data(), 5, 4), (std::vector<std::uint32_t>{0, 1, 2, 4}));
  const std::vector<float> with_nan{1.0f, std::numeric_limits<float>::quiet_NaN(), 5.0f};
  EXPECT_EQ(codec_detail::topk_select(with_nan.data(), 3, 1), (std::vector<std::uint32_t>{1}));
}

// Buckets large enough for the selection's histogram, with the k-th largest in a bin with many
// other keys: gradient-like values, runs of zeros and repeats, and every special float.
TEST(TopkSelect, MatchesSortingOnLargeBucketsWithZerosRepeatsAndSpecialFloats) {
  std::mt19937 gen(7);
  std::normal_distribution<float> g(0.0f, 1e-3f);
  const float inf = std::numeric_limits<float>::infinity(), nan = std::numeric_limits<float>::quiet_NaN();
  std::vector<float> v(70000);
  for (std::size_t i = 0; i < v.size(); ++i) v[i] = i % 5 == 0 ? 0.0f : i % 7 == 0 ? 1e-3f : g(gen);
  for (std::size_t i : {11u, 40000u, 69999u}) v[i] = nan;
  v[12] = -nan;
  v[13] = inf;
  v[14] = -inf;
  v[15] = -0.0f;
  v[16] = std::numeric_limits<float>::denorm_min();
  for (std::size_t k : {1u, 4u, 5u, 7u, 700u, 7000u, 9000u, 56000u, 69999u, 70000u})
    EXPECT_EQ(codec_detail::topk_select(v.data(), v.size(), k), reference_topk(v, k)) << k;
  const std::vector<float> zeros(40000, 0.0f);  // one bin holds every key
  EXPECT_EQ(codec_detail::topk_select(zeros.data(), zeros.size(), 3), (std::vector<std::uint32_t>{0, 1, 2}));
}

TEST(TopkCount, CeilOfRatioTimesCountAtLeastOne) {
  EXPECT_EQ(codec_detail::topk_count(0.01, 100), 1u);
  EXPECT_EQ(codec_detail::topk_count(0.01, 1000), 10u);
  EXPECT_EQ(codec_detail::topk_count(0.01, 1001), 11u);
  EXPECT_EQ(codec_detail::topk_count(0.07, 100), 7u);   // 7.000000000000001 in double
  EXPECT_EQ(codec_detail::topk_count(0.29, 100), 29u);  // 28.999999999999996 in double
  EXPECT_EQ(codec_detail::topk_count(0.001, 10), 1u);
  EXPECT_EQ(codec_detail::topk_count(0.5, 3), 2u);
  EXPECT_EQ(codec_detail::topk_count(1.0, 5), 5u);
  EXPECT_EQ(codec_detail::topk_count(0.25, 0), 0u);
  const BucketLayout b = testing::flat_bucket(1000);
  for (double ratio : {0.001, 0.01, 0.1, 0.333, 1.0}) {
    auto c = make_codec("topk", {{"ratio", std::to_string(ratio)}}, 0);
    const auto plan = c->plan(b, 4, 0);
    ASSERT_EQ(plan.size(), 1u);
    EXPECT_EQ(plan[0].collective, Collective::AllGather);
    EXPECT_EQ(plan[0].type, ElemType::IndexValue);
    EXPECT_EQ(plan[0].count, codec_detail::topk_count(ratio, 1000));
    EXPECT_EQ(c->wire_bytes(b, 4, 0), 8 * plan[0].count);
  }
}

std::vector<std::vector<float>> random_grads(int n, std::size_t count, std::mt19937& gen) {
  std::uniform_int_distribution<int> q(-64, 64);  // multiples of 1/16: sums stay exact in float
  std::vector<std::vector<float>> g(static_cast<std::size_t>(n), std::vector<float>(count));
  for (auto& v : g)
    for (float& x : v) x = static_cast<float>(q(gen)) / 16.0f;
  return g;
}

TEST(CodecTopk, SendsTheSelectionAndAveragesInRankOrder) {
  std::mt19937 gen(2);
  for (int n : {1, 2, 3, 5}) {
    const std::size_t count = 200;
    const auto g = random_grads(n, count, gen);
    auto ranks = testing::make_ranks("topk", {{"ratio", "0.05"}}, n);
    const auto step = testing::run_codec_step(testing::raw(ranks), testing::flat_bucket(count), g, 0);
    ASSERT_TRUE(step.ok);
    EXPECT_TRUE(testing::all_ranks_identical(step));
    const std::size_t k = 10;
    std::vector<float> dense(count, 0.0f);
    for (int r = 0; r < n; ++r) {
      const auto& gr = g[static_cast<std::size_t>(r)];
      const auto sent = step.calls[static_cast<std::size_t>(r)].at(0).input_as<IndexValue>();
      ASSERT_EQ(sent.size(), k);
      const auto want = reference_topk(gr, k);
      for (std::size_t j = 0; j < k; ++j) {
        EXPECT_EQ(sent[j].index, want[j]);
        EXPECT_EQ(sent[j].value, gr[want[j]]);
        dense[sent[j].index] += sent[j].value;
      }
    }
    for (std::size_t i = 0; i < count; ++i) ASSERT_EQ(step.grads[0][i], dense[i] / static_cast<float>(n)) << i;
  }
}

TEST(CodecTopk, ErrorFeedbackCarriesTheUnsentMass) {
  std::mt19937 gen(4);
  const int n = 3;
  const std::size_t count = 64;
  const auto g1 = random_grads(n, count, gen), g2 = random_grads(n, count, gen);
  auto ranks = testing::make_ranks("topk", {{"ratio", "0.1"}}, n);
  const BucketLayout bucket = testing::flat_bucket(count, 9);
  const auto s1 = testing::run_codec_step(testing::raw(ranks), bucket, g1, 0);
  const auto s2 = testing::run_codec_step(testing::raw(ranks), bucket, g2, 1);
  ASSERT_TRUE(s1.ok && s2.ok);
  EXPECT_TRUE(testing::all_ranks_identical(s2));
  for (std::size_t r = 0; r < static_cast<std::size_t>(n); ++r) {
    const auto* codec = dynamic_cast<const TopkCodec*>(ranks[r].get());
    ASSERT_NE(codec, nullptr);
    ASSERT_NE(codec->residual(9), nullptr);
    EXPECT_EQ(codec->residual(8), nullptr);
    const std::vector<float>& res = *codec->residual(9);
    std::vector<float> sent(count, 0.0f);
    for (const auto* s : {&s1, &s2})
      for (const IndexValue& p : s->calls[r].at(0).input_as<IndexValue>()) sent[p.index] += p.value;
    for (std::size_t i = 0; i < count; ++i)
      EXPECT_EQ(sent[i] + res[i], g1[r][i] + g2[r][i]) << "rank " << r << " i " << i;
    // The second step selected from g2 + residual of the first.
    std::vector<float> acc(count);
    const auto sent1 = s1.calls[r][0].input_as<IndexValue>();
    for (std::size_t i = 0; i < count; ++i) acc[i] = g1[r][i];
    for (const IndexValue& p : sent1) acc[p.index] = 0.0f;
    for (std::size_t i = 0; i < count; ++i) acc[i] += g2[r][i];
    const auto sent2 = s2.calls[r][0].input_as<IndexValue>();
    const auto want = reference_topk(acc, sent2.size());
    for (std::size_t j = 0; j < want.size(); ++j) EXPECT_EQ(sent2[j].index, want[j]);
  }
}

TEST(CodecTopk, WithoutErrorFeedbackKeepsNoState) {
  std::mt19937 gen(6);
  auto ranks = testing::make_ranks("topk", {{"ratio", "0.1"}, {"error_feedback", "false"}}, 2);
  const auto g = random_grads(2, 50, gen);
  const auto s1 = testing::run_codec_step(testing::raw(ranks), testing::flat_bucket(50), g, 0);
  const auto s2 = testing::run_codec_step(testing::raw(ranks), testing::flat_bucket(50), g, 1);
  ASSERT_TRUE(s1.ok && s2.ok);
  EXPECT_EQ(dynamic_cast<const TopkCodec&>(*ranks[0]).residual(0), nullptr);
  EXPECT_EQ(s1.grads, s2.grads);  // same input, no memory: same output
  // Without error feedback: the selection and this rank's pairs copied into the other slot; then the decode.
  EXPECT_EQ(s1.plan[0].before, (std::vector<LocalWork>{{WorkKind::TopK, 50, 0, 5}, {WorkKind::Copy, 5 * 8}}));
  EXPECT_EQ(s1.plan[0].after,
            (std::vector<LocalWork>{{WorkKind::Fill, 50}, {WorkKind::ScatterAdd, 50, 2, 5}, {WorkKind::Divide, 50}}));
}

TEST(CodecTopk, RatioOneIsAnExactAverage) {
  std::mt19937 gen(8);
  const auto g = random_grads(4, 33, gen);
  auto ranks = testing::make_ranks("topk", {{"ratio", "1"}}, 4);
  const auto step = testing::run_codec_step(testing::raw(ranks), testing::flat_bucket(33), g, 0);
  ASSERT_TRUE(step.ok);
  for (std::size_t i = 0; i < 33; ++i) {
    float s = 0.0f;  // the decode starts from a zeroed buffer
    for (const auto& v : g) s += v[i];
    EXPECT_EQ(step.grads[2][i], s / 4.0f);
  }
  for (const auto& c : ranks)
    for (float x : *dynamic_cast<const TopkCodec&>(*c).residual(0)) EXPECT_EQ(x, 0.0f);
}

}  // namespace
}  // namespace ddplab
