// PowerSGD: exact recovery of low-rank gradients, plain allreduce before start_iter, which tensors are
// compressed (min_compression_rate, vectors never), the announced calls, error feedback, warm start, and
// bit-identical results on every rank. Linear-algebra helpers are checked on their own first.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <random>

#include "../../strategies/src/codecs/codec_impl.hpp"
#include "codec_harness.hpp"

namespace ddplab {
namespace {

using codec_detail::PowerSgdCodec;

std::vector<float> randn(std::size_t count, std::mt19937& gen) {
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> v(count);
  for (float& x : v) x = normal(gen);
  return v;
}

// Frobenius norm of a - b over [offset, offset + count), relative to |b|.
double rel_error(const std::vector<float>& a, const std::vector<double>& b, std::size_t offset, std::size_t count) {
  double num = 0, den = 0;
  for (std::size_t i = offset; i < offset + count; ++i) num += (a[i] - b[i]) * (a[i] - b[i]), den += b[i] * b[i];
  return std::sqrt(num / den);
}

std::vector<double> exact_average(const std::vector<std::vector<float>>& g) {
  std::vector<double> avg(g[0].size(), 0.0);
  for (const auto& v : g)
    for (std::size_t i = 0; i < v.size(); ++i) avg[i] += v[i];
  for (double& x : avg) x /= static_cast<double>(g.size());
  return avg;
}

const PowerSgdCodec& psgd(const std::unique_ptr<Codec>& c) { return dynamic_cast<const PowerSgdCodec&>(*c); }

TEST(PowerSgdLinalg, OrthogonalizeAndProducts) {
  std::mt19937 gen(1);
  const std::size_t n = 20, k = 3;
  auto a = randn(n * k, gen);
  codec_detail::orthogonalize(a.data(), n, k, 0.0f);
  for (std::size_t i = 0; i < k; ++i)
    for (std::size_t j = 0; j < k; ++j) {
      double d = 0;
      for (std::size_t r = 0; r < n; ++r) d += static_cast<double>(a[r * k + i]) * a[r * k + j];
      EXPECT_NEAR(d, i == j ? 1.0 : 0.0, 1e-6) << i << "," << j;
    }
  std::vector<float> zero(n * 2, 0.0f);
  codec_detail::orthogonalize(zero.data(), n, 2, 0.0f);
  for (float x : zero) EXPECT_EQ(x, 0.0f);  // no NaN from a vanishing column
  // p = m q, q' = m^T p, m' = p q^T against naive loops.
  const std::size_t rows = 5, cols = 4;
  const auto m = randn(rows * cols, gen), q = randn(cols * k, gen);
  std::vector<float> p(rows * k), qt(cols * k), mm(rows * cols);
  codec_detail::matmul(m.data(), q.data(), p.data(), rows, cols, k);
  codec_detail::matmul_tn(m.data(), p.data(), qt.data(), rows, cols, k);
  codec_detail::matmul_nt(p.data(), q.data(), mm.data(), rows, cols, k);
  for (std::size_t i = 0; i < rows; ++i)
    for (std::size_t t = 0; t < k; ++t) {
      double s = 0;
      for (std::size_t j = 0; j < cols; ++j) s += static_cast<double>(m[i * cols + j]) * q[j * k + t];
      EXPECT_NEAR(p[i * k + t], s, 1e-5);
    }
  for (std::size_t j = 0; j < cols; ++j)
    for (std::size_t t = 0; t < k; ++t) {
      double s = 0;
      for (std::size_t i = 0; i < rows; ++i) s += static_cast<double>(m[i * cols + j]) * p[i * k + t];
      EXPECT_NEAR(qt[j * k + t], s, 1e-4);
    }
  for (std::size_t i = 0; i < rows; ++i)
    for (std::size_t j = 0; j < cols; ++j) {
      double s = 0;
      for (std::size_t t = 0; t < k; ++t) s += static_cast<double>(p[i * k + t]) * q[j * k + t];
      EXPECT_NEAR(mm[i * cols + j], s, 1e-4);
    }
  // Same seed, same samples; roughly standard normal.
  std::vector<float> s1(10001), s2(10001);
  codec_detail::fill_standard_normal(s1.data(), s1.size(), 42);
  codec_detail::fill_standard_normal(s2.data(), s2.size(), 42);
  EXPECT_EQ(s1, s2);
  double mean = 0, var = 0;
  for (float x : s1) mean += x;
  mean /= s1.size();
  for (float x : s1) var += (x - mean) * (x - mean);
  EXPECT_NEAR(mean, 0.0, 0.05);
  EXPECT_NEAR(var / s1.size(), 1.0, 0.05);
}

// A bucket: weight 32x16 (compressed for rank <= 3), bias 32, weight 4x4 (too small to pay off at any rank).
BucketLayout model_bucket(int id = 0) {
  BucketLayout b;
  b.id = id;
  b.tensors = {{0, 32, 16}, {512, 32, 1}, {544, 4, 4}};
  b.count = 560;
  return b;
}

TEST(CodecPowerSgd, SplitFollowsMinCompressionRate) {
  const auto split = [](const char* rate, const char* rank, const BucketLayout& b) {
    auto c = make_codec("powersgd", {{"min_compression_rate", rate}, {"rank", rank}}, 0);
    return psgd(c).split(b);
  };
  BucketLayout b;
  b.tensors = {{0, 10, 10}, {100, 1000, 1}, {1100, 1, 1000}};
  b.count = 2100;
  // 10x10, rank 1: 100 elements vs (10 + 10) * 1 = 20 compressed: a rate of 5 exactly does not compress.
  EXPECT_EQ(split("4.99", "1", b).compressed, (std::vector<std::size_t>{0}));
  EXPECT_TRUE(split("5", "1", b).compressed.empty());
  EXPECT_EQ(split("0", "1", b).compressed, (std::vector<std::size_t>{0, 2}));  // 1 x 1000 is a matrix
  EXPECT_EQ(split("0", "1", b).uncompressed, (std::vector<std::size_t>{1}));   // vectors never compressed
  const auto s = split("2", "3", model_bucket());
  EXPECT_EQ(s.compressed, (std::vector<std::size_t>{0}));
  EXPECT_EQ(s.uncompressed, (std::vector<std::size_t>{1, 2}));
  EXPECT_EQ(s.uncompressed_count, 48u);
  EXPECT_EQ(s.p_count, 32u * 3);
  EXPECT_EQ(s.q_count, 16u * 3);
  EXPECT_EQ(split("0", "100", model_bucket()).ranks, (std::vector<std::size_t>{16, 4}));  // capped at min(rows, cols)
}

TEST(CodecPowerSgd, PlansPlainAllreduceThenUncompressedPQ) {
  auto c = make_codec("powersgd", {{"start_iter", "10"}, {"rank", "2"}}, 0);
  const BucketLayout b = model_bucket();
  const auto before = c->plan(b, 4, 9);
  ASSERT_EQ(before.size(), 1u);
  EXPECT_EQ(before[0].count, 560u);
  EXPECT_EQ(before[0].type, ElemType::F32);
  const auto after = c->plan(b, 4, 10);
  ASSERT_EQ(after.size(), 3u);
  EXPECT_EQ(after[0].label, "powersgd.uncompressed");
  EXPECT_EQ(after[0].count, 48u);
  // The residual add and the input's copy come first, then the uncompressed tensors' copies.
  ASSERT_GE(after[0].before.size(), 2u);
  EXPECT_EQ(after[0].before[0], (LocalWork{WorkKind::Add, 560}));
  EXPECT_EQ(after[0].before[1], (LocalWork{WorkKind::Copy, 560 * 4}));
  EXPECT_EQ(after[1].label, "powersgd.P");
  EXPECT_EQ(after[1].count, 64u);
  // Orthogonalize Q (16 x 2), then P = M Q with M 32 x 16: 3*16*2 + 4*16*2*1 and 2*32*16*2 FLOPs.
  ASSERT_EQ(after[1].before.size(), 2u);
  EXPECT_EQ(after[1].before[0], (LocalWork{WorkKind::Orthogonalize, 16, 0, 2}));
  EXPECT_EQ(after[1].before[1], (LocalWork{WorkKind::MatMul, 32, 16, 2}));
  EXPECT_EQ(work_flops(after[1].before[0]) + work_flops(after[1].before[1]), 96.0 + 128.0 + 2048.0);
  EXPECT_EQ(after[2].label, "powersgd.Q");
  EXPECT_EQ(after[2].count, 32u);
  EXPECT_EQ(work_flops(after[2].before[0]) + work_flops(after[2].before[1]), 192.0 + 256.0 + 2048.0);
  // After Q: its average, M = P Q^T, and the residual.
  EXPECT_EQ(after[2].after.back(), (LocalWork{WorkKind::Sub, 560}));
  EXPECT_EQ(c->wire_bytes(b, 4, 10), (48u + 64u + 32u) * 4);
  // Only a matrix: no uncompressed call; only vectors: no P / Q.
  BucketLayout m{1, 512, {{0, 32, 16}}}, v{2, 32, {{0, 32, 1}}};
  EXPECT_EQ(c->plan(m, 4, 10).size(), 2u);
  EXPECT_EQ(c->plan(v, 4, 10).size(), 1u);
}

TEST(CodecPowerSgd, BeforeStartIterIsExactlyAPlainAllreduce) {
  std::mt19937 gen(3);
  const int n = 3;
  std::vector<std::vector<float>> g;
  for (int r = 0; r < n; ++r) g.push_back(randn(560, gen));
  auto ranks = testing::make_ranks("powersgd", {{"start_iter", "5"}}, n);
  const auto step = testing::run_codec_step(testing::raw(ranks), model_bucket(), g, 4);
  ASSERT_TRUE(step.ok);
  for (std::size_t i = 0; i < 560; ++i) {
    const float s = (g[0][i] + g[1][i]) + g[2][i];
    ASSERT_EQ(step.grads[1][i], s / 3.0f);
  }
  EXPECT_EQ(psgd(ranks[0]).residual(0), nullptr);  // no state before compression starts
  EXPECT_EQ(psgd(ranks[0]).q_memory(0), nullptr);
}

// Per rank: weight = U V_r^T (shared column space U of rank r), bias and small weight random.
std::vector<std::vector<float>> low_rank_grads(int n, std::size_t r, std::mt19937& gen) {
  const auto u = randn(32 * r, gen);
  std::vector<std::vector<float>> g;
  for (int k = 0; k < n; ++k) {
    auto v = randn(16 * r, gen), rest = randn(48, gen);
    std::vector<float> x(560);
    codec_detail::matmul_nt(u.data(), v.data(), x.data(), 32, 16, r);
    std::copy(rest.begin(), rest.end(), x.begin() + 512);
    g.push_back(x);
  }
  return g;
}

TEST(CodecPowerSgd, RecoversLowRankGradientsAlmostExactly) {
  for (std::size_t true_rank : {1u, 2u}) {
    for (std::size_t rank : {true_rank, true_rank + 1}) {
      std::mt19937 gen(static_cast<unsigned>(10 * true_rank + rank));
      const int n = 4;
      auto ranks = testing::make_ranks("powersgd", {{"start_iter", "0"}, {"rank", std::to_string(rank)}}, n);
      for (std::int64_t step = 0; step < 3; ++step) {
        const auto g = low_rank_grads(n, true_rank, gen);
        const auto s = testing::run_codec_step(testing::raw(ranks), model_bucket(), g, step);
        ASSERT_TRUE(s.ok);
        EXPECT_TRUE(testing::all_ranks_identical(s));
        EXPECT_LT(rel_error(s.grads[0], exact_average(g), 0, 512), 1e-4) << "rank " << rank << " step " << step;
        if (step == 0) {  // no residual yet: bias and small weight are the plain float average
          for (std::size_t i = 512; i < 560; ++i) {
            float sum = g[0][i];
            for (int r = 1; r < n; ++r) sum += g[static_cast<std::size_t>(r)][i];
            ASSERT_EQ(s.grads[0][i], sum / 4.0f) << i;
          }
        }
        EXPECT_LT(rel_error(s.grads[0], exact_average(g), 512, 48), 1e-5);
      }
    }
  }
}

TEST(CodecPowerSgd, ResidualIsInputMinusApproximationAndRanksAgree) {
  std::mt19937 gen(5);
  const int n = 3;
  auto ranks = testing::make_ranks("powersgd", {{"start_iter", "2"}}, n);
  std::vector<std::vector<float>> prev_residual(n, std::vector<float>(560, 0.0f));
  for (std::int64_t step = 2; step < 5; ++step) {
    std::vector<std::vector<float>> g;
    for (int r = 0; r < n; ++r) g.push_back(randn(560, gen));  // full rank: compression loses a lot
    const auto s = testing::run_codec_step(testing::raw(ranks), model_bucket(), g, step);
    ASSERT_TRUE(s.ok);
    EXPECT_TRUE(testing::all_ranks_identical(s));
    for (std::size_t r = 0; r < static_cast<std::size_t>(n); ++r) {
      const std::vector<float>* res = psgd(ranks[r]).residual(0);
      ASSERT_NE(res, nullptr);
      for (std::size_t i = 0; i < 560; ++i) {
        const float input = g[r][i] + prev_residual[r][i];
        ASSERT_EQ((*res)[i], input - s.grads[r][i]) << "step " << step << " rank " << r << " i " << i;
      }
      prev_residual[r] = *res;
    }
  }
}

TEST(CodecPowerSgd, WarmStartConvergesToTheTopSingularPair) {
  // M = sum_i s_i u_i v_i^T with orthonormal u, v and s = 10, 5, 2, 1: rank-1 power iteration with a
  // warm-started Q converges to 10 u_1 v_1^T; without warm start each step starts from a fresh Q.
  std::mt19937 gen(9);
  auto u = randn(32 * 4, gen), v = randn(16 * 4, gen);
  codec_detail::orthogonalize(u.data(), 32, 4, 0.0f);
  codec_detail::orthogonalize(v.data(), 16, 4, 0.0f);
  const float s[4] = {10, 5, 2, 1};
  std::vector<float> us = u;
  for (std::size_t i = 0; i < 32; ++i)
    for (std::size_t t = 0; t < 4; ++t) us[i * 4 + t] *= s[t];
  std::vector<float> m(560, 0.0f);
  codec_detail::matmul_nt(us.data(), v.data(), m.data(), 32, 16, 4);
  std::vector<double> top(560, 0.0);
  for (std::size_t i = 0; i < 32; ++i)
    for (std::size_t j = 0; j < 16; ++j) top[i * 16 + j] = 10.0 * u[i * 4] * v[j * 4];
  for (const char* warm : {"true", "false"}) {
    auto ranks =
        testing::make_ranks("powersgd", {{"start_iter", "0"}, {"error_feedback", "false"}, {"warm_start", warm}}, 2);
    double err = 0;
    for (std::int64_t step = 0; step < 20; ++step) {
      const auto st = testing::run_codec_step(testing::raw(ranks), model_bucket(), {m, m}, step);
      ASSERT_TRUE(st.ok);
      err = rel_error(st.grads[0], top, 0, 512);
    }
    if (std::string(warm) == "true") {
      EXPECT_LT(err, 1e-4);
      EXPECT_NE(psgd(ranks[0]).q_memory(0), nullptr);
    } else {
      EXPECT_GT(err, 1e-3);  // one power iteration from a random start is not enough
      EXPECT_EQ(psgd(ranks[0]).q_memory(0), nullptr);
      EXPECT_EQ(psgd(ranks[0]).residual(0), nullptr);
    }
  }
}

TEST(CodecPowerSgd, SeedDecidesTheInitialQ) {
  std::mt19937 gen(12);
  const auto g = std::vector<std::vector<float>>{randn(560, gen), randn(560, gen)};
  const auto run = [&](std::uint64_t seed) {
    auto ranks = testing::make_ranks("powersgd", {{"start_iter", "0"}}, 2, seed);
    return testing::run_codec_step(testing::raw(ranks), model_bucket(), g, 0).grads[0];
  };
  EXPECT_EQ(run(1), run(1));
  EXPECT_NE(run(1), run(2));
}

}  // namespace
}  // namespace ddplab
