// BlasTransformer (host_transformer.hpp): the fused causal attention's per-head work as OpenBLAS GEMMs on
// tiles of kTile queries. A tile's scores against every key it may see (kTile x its last position) are the
// only scores that exist at a time; the backward recomputes them from the forward's log-sum-exp, as
// FlashAttention-2 does.
#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <vector>

#include "fast_math.hpp"
#include "host_transformer.hpp"

namespace ddplab {

namespace {

using std::size_t;

constexpr int kTile = 64;

void gemm(bool ta, bool tb, int m, int n, int k, float alpha, const float* a, int lda, const float* b, int ldb,
          float beta, float* c, int ldc) {
  cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda, b,
              ldb, beta, c, ldc);
}

// Scratch that lives as long as the thread: a tile's scores grow with the sequence (kTile x seq floats).
std::vector<float>& scratch(int which, size_t n) {
  thread_local std::vector<float> buffers[2];
  std::vector<float>& b = buffers[which];
  if (b.size() < n) b.resize(n);
  return b;
}

// A query's row of scores becomes its probabilities over the `seen` keys it may see (zero beyond, up to
// `keys`); returns the log-sum-exp.
DDPLAB_SIMD_CLONES float softmax_row(float* row, int seen, int keys) {
  float mx = row[0];
  for (int j = 1; j < seen; ++j) mx = std::max(mx, row[j]);
  float sum = 0;
  for (int j = 0; j < seen; ++j) sum += row[j] = fast_math::exp(row[j] - mx);
  const float inv = 1.0f / sum;
  for (int j = 0; j < seen; ++j) row[j] *= inv;
  std::fill(row + seen, row + keys, 0.0f);
  return mx + std::log(sum);
}

// The same probabilities from the scores and the forward's log-sum-exp.
DDPLAB_SIMD_CLONES void probabilities_row(float* row, int seen, int keys, float lse) {
  for (int j = 0; j < seen; ++j) row[j] = fast_math::exp(row[j] - lse);
  std::fill(row + seen, row + keys, 0.0f);
}

// dS = P (dP - delta) scale, in place of dP.
DDPLAB_SIMD_CLONES void score_gradient_row(float* dp, const float* p, int keys, float delta, float scale) {
  for (int j = 0; j < keys; ++j) dp[j] = p[j] * (dp[j] - delta) * scale;
}

class BlasTransformer final : public HostTransformer {
 protected:
  void head_forward(const Head& h, float* out, int ld, float* lse) override {
    const int T = h.seq, hd = h.hd;
    float* p = scratch(0, static_cast<size_t>(kTile) * T).data();
    for (int q0 = 0; q0 < T; q0 += kTile) {
      const int qn = std::min(kTile, T - q0), keys = q0 + qn;  // causal: no key past the tile's last query
      gemm(false, true, qn, keys, hd, h.scale, h.q + static_cast<size_t>(q0) * hd, hd, h.k, hd, 0.0f, p, keys);
      for (int i = 0; i < qn; ++i) lse[q0 + i] = softmax_row(p + static_cast<size_t>(i) * keys, q0 + i + 1, keys);
      gemm(false, false, qn, hd, keys, 1.0f, p, keys, h.v, hd, 0.0f, out + static_cast<size_t>(q0) * ld, ld);
    }
  }

  void head_backward(const Head& h, const float* dout, int ld, const float* lse, const float* delta, float* dq,
                     float* dk, float* dv) override {
    const int T = h.seq, hd = h.hd;
    const size_t tile = static_cast<size_t>(kTile) * T;
    float* p = scratch(0, tile).data();
    float* dp = scratch(1, tile).data();
    for (int q0 = 0; q0 < T; q0 += kTile) {
      const int qn = std::min(kTile, T - q0), keys = q0 + qn;
      const float* qt = h.q + static_cast<size_t>(q0) * hd;
      const float* got = dout + static_cast<size_t>(q0) * ld;
      // The probabilities again, from the scores and the forward's log-sum-exp.
      gemm(false, true, qn, keys, hd, h.scale, qt, hd, h.k, hd, 0.0f, p, keys);
      for (int i = 0; i < qn; ++i) probabilities_row(p + static_cast<size_t>(i) * keys, q0 + i + 1, keys, lse[q0 + i]);
      gemm(true, false, keys, hd, qn, 1.0f, p, keys, got, ld, 1.0f, dv, hd);    // dV += P^T dO
      gemm(false, true, qn, keys, hd, 1.0f, got, ld, h.v, hd, 0.0f, dp, keys);  // dP = dO V^T
      for (int i = 0; i < qn; ++i)
        score_gradient_row(dp + static_cast<size_t>(i) * keys, p + static_cast<size_t>(i) * keys, keys, delta[q0 + i],
                           h.scale);
      gemm(false, false, qn, hd, keys, 1.0f, dp, keys, h.k, hd, 0.0f, dq + static_cast<size_t>(q0) * hd, hd);  // dQ
      gemm(true, false, keys, hd, qn, 1.0f, dp, keys, qt, hd, 1.0f, dk, hd);  // dK += dS^T Q
    }
  }
};

}  // namespace

TransformerKernels& blas_transformer_kernels() {
  static BlasTransformer k;
  return k;
}

}  // namespace ddplab
