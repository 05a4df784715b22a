// HostTransformer (host_transformer.hpp): TransformerKernels as plain loops.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

#include "ddplab/runtime/transformer_kernels.hpp"
#include "fast_math.hpp"
#include "host_transformer.hpp"

namespace ddplab {

using std::size_t;

namespace {
constexpr int kTile = 64;  // queries and keys per attention tile
}  // namespace

namespace host_attention {

Rope::Rope(int seq, int hd) : hd_(hd) {
  if (hd % 2) return;
  cs_.resize(static_cast<size_t>(seq) * hd);
  for (int p = 0; p < seq; ++p)
    for (int i = 0; i < hd / 2; ++i) {
      const double theta = p * std::pow(10000.0, -2.0 * i / hd);
      cs_[static_cast<size_t>(p) * hd + 2 * i] = static_cast<float>(std::cos(theta));
      cs_[static_cast<size_t>(p) * hd + 2 * i + 1] = static_cast<float>(std::sin(theta));
    }
}

void Rope::rotate(float* x, int p, bool inverse) const {
  const float* cs = cs_.data() + static_cast<size_t>(p) * hd_;
  for (int i = 0; i < hd_ / 2; ++i) {
    const float c = cs[2 * i], s = inverse ? -cs[2 * i + 1] : cs[2 * i + 1], a = x[2 * i], b = x[2 * i + 1];
    x[2 * i] = a * c - b * s;
    x[2 * i + 1] = a * s + b * c;
  }
}

float dot(const float* a, const float* b, int n) {
  float s = 0;
  for (int i = 0; i < n; ++i) s += a[i] * b[i];
  return s;
}

void gather_head(const float* qkv, float* dst, int seq, int width, int col, int hd, const Rope* rope) {
  for (int t = 0; t < seq; ++t) {
    std::memcpy(dst + static_cast<size_t>(t) * hd, qkv + static_cast<size_t>(t) * width + col, sizeof(float) * hd);
    if (rope) rope->rotate(dst + static_cast<size_t>(t) * hd, t, false);
  }
}

void scatter_head(float* src, float* qkv, int seq, int width, int col, int hd, const Rope* rope) {
  for (int t = 0; t < seq; ++t) {
    float* row = src + static_cast<size_t>(t) * hd;
    if (rope) rope->rotate(row, t, true);
    std::memcpy(qkv + static_cast<size_t>(t) * width + col, row, sizeof(float) * hd);
  }
}

}  // namespace host_attention

using host_attention::dot;
using host_attention::gather_head;
using host_attention::Rope;
using host_attention::scatter_head;

void HostTransformer::embed(const float* tokens, const float* wte, const float* wpe, float* y, int rows, int seq,
                            int dim) {
  for (int r = 0; r < rows; ++r) {
    const float* e = wte + static_cast<size_t>(tokens[r]) * dim;
    float* out = y + static_cast<size_t>(r) * dim;
    if (wpe) {
      const float* p = wpe + static_cast<size_t>(r % seq) * dim;
      for (int j = 0; j < dim; ++j) out[j] = e[j] + p[j];
    } else {
      std::memcpy(out, e, sizeof(float) * dim);
    }
  }
}

void HostTransformer::embed_backward(const float* tokens, const float* dy, float* dwte, float* dwpe, int rows, int seq,
                                     int dim, int vocab, bool accumulate_wte, bool accumulate_wpe) {
  if (!accumulate_wte) std::fill(dwte, dwte + static_cast<size_t>(vocab) * dim, 0.0f);
  if (dwpe && !accumulate_wpe) std::fill(dwpe, dwpe + static_cast<size_t>(seq) * dim, 0.0f);
  for (int r = 0; r < rows; ++r) {
    const float* g = dy + static_cast<size_t>(r) * dim;
    float* e = dwte + static_cast<size_t>(tokens[r]) * dim;
    for (int j = 0; j < dim; ++j) e[j] += g[j];
    if (dwpe) {
      float* p = dwpe + static_cast<size_t>(r % seq) * dim;
      for (int j = 0; j < dim; ++j) p[j] += g[j];
    }
  }
}

void HostTransformer::norm(const float* x, const float* w, const float* b, float* y, float* stats, int rows, int dim,
                           bool rms, float eps) {
  for (int r = 0; r < rows; ++r) {
    const float* in = x + static_cast<size_t>(r) * dim;
    double mean = 0, var = 0;
    if (!rms) {
      for (int j = 0; j < dim; ++j) mean += in[j];
      mean /= dim;
    }
    for (int j = 0; j < dim; ++j) var += (in[j] - mean) * (in[j] - mean);
    var /= dim;
    const double rstd = 1.0 / std::sqrt(var + eps);
    float* out = y + static_cast<size_t>(r) * dim;
    for (int j = 0; j < dim; ++j) out[j] = static_cast<float>((in[j] - mean) * rstd * w[j] + (b ? b[j] : 0.0f));
    stats[2 * r] = static_cast<float>(mean);
    stats[2 * r + 1] = static_cast<float>(rstd);
  }
}

void HostTransformer::norm_backward(const float* dy, const float* x, const float* w, const float* stats, float* dx,
                                    float* dw, float* db, int rows, int dim, bool rms, bool accumulate_dx,
                                    bool accumulate) {
  std::vector<double> sw(static_cast<size_t>(dim), 0.0), sb(static_cast<size_t>(dim), 0.0);
  for (int r = 0; r < rows; ++r) {
    const float* in = x + static_cast<size_t>(r) * dim;
    const float* g = dy + static_cast<size_t>(r) * dim;
    const double mean = stats[2 * r], rstd = stats[2 * r + 1];
    double mg = 0, mgx = 0;  // means of dxhat and dxhat * xhat
    for (int j = 0; j < dim; ++j) {
      const double xhat = (in[j] - mean) * rstd, gx = static_cast<double>(g[j]) * w[j];
      mg += gx, mgx += gx * xhat;
      sw[static_cast<size_t>(j)] += g[j] * xhat;
      sb[static_cast<size_t>(j)] += g[j];
    }
    mg /= dim, mgx /= dim;
    if (rms) mg = 0;
    float* out = dx + static_cast<size_t>(r) * dim;
    for (int j = 0; j < dim; ++j) {
      const double xhat = (in[j] - mean) * rstd;
      out[j] = static_cast<float>((accumulate_dx ? out[j] : 0.0) +
                                  rstd * (static_cast<double>(g[j]) * w[j] - mg - xhat * mgx));
    }
  }
  for (int j = 0; j < dim; ++j) {
    dw[j] = static_cast<float>((accumulate ? dw[j] : 0.0) + sw[static_cast<size_t>(j)]);
    if (db) db[j] = static_cast<float>((accumulate ? db[j] : 0.0) + sb[static_cast<size_t>(j)]);
  }
}

namespace {

constexpr float kGeluK = 0.7978845608f;  // sqrt(2 / pi)

DDPLAB_SIMD_CLONES void gelu_loop(const float* x, float* y, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const float v = x[i];
    y[i] = 0.5f * v * (1 + fast_math::tanh(kGeluK * (v + 0.044715f * v * v * v)));
  }
}

DDPLAB_SIMD_CLONES void gelu_backward_loop(const float* x, const float* dy, float* dx, size_t n) {
  for (size_t i = 0; i < n; ++i) {
    const float v = x[i], t = fast_math::tanh(kGeluK * (v + 0.044715f * v * v * v));
    dx[i] = dy[i] * (0.5f * (1 + t) + 0.5f * v * (1 - t * t) * kGeluK * (1 + 3 * 0.044715f * v * v));
  }
}

DDPLAB_SIMD_CLONES void swiglu_row(const float* gate, const float* up, float* y, int f) {
  for (int j = 0; j < f; ++j) y[j] = gate[j] * fast_math::sigmoid(gate[j]) * up[j];
}

DDPLAB_SIMD_CLONES void swiglu_backward_row(const float* gate, const float* up, const float* g, float* dgate,
                                            float* dup, int f) {
  for (int j = 0; j < f; ++j) {
    const float a = gate[j], s = fast_math::sigmoid(a);
    dgate[j] = g[j] * up[j] * s * (1 + a * (1 - s));
    dup[j] = g[j] * a * s;
  }
}

DDPLAB_SIMD_CLONES void add_loop(const float* a, const float* b, float* y, size_t n) {
  for (size_t i = 0; i < n; ++i) y[i] = a[i] + b[i];
}

}  // namespace

void HostTransformer::gelu(const float* x, float* y, size_t n) { gelu_loop(x, y, n); }

void HostTransformer::gelu_backward(const float* x, const float* dy, float* dx, size_t n) {
  gelu_backward_loop(x, dy, dx, n);
}

void HostTransformer::swiglu(const float* x, float* y, int rows, int f) {
  for (int r = 0; r < rows; ++r) {
    const float* gate = x + static_cast<size_t>(r) * 2 * f;
    swiglu_row(gate, gate + f, y + static_cast<size_t>(r) * f, f);
  }
}

void HostTransformer::swiglu_backward(const float* x, const float* dy, float* dx, int rows, int f) {
  for (int r = 0; r < rows; ++r) {
    const float* gate = x + static_cast<size_t>(r) * 2 * f;
    float* d = dx + static_cast<size_t>(r) * 2 * f;
    swiglu_backward_row(gate, gate + f, dy + static_cast<size_t>(r) * f, d, d + f, f);
  }
}

void HostTransformer::add(const float* a, const float* b, float* y, size_t n) { add_loop(a, b, y, n); }

void HostTransformer::attention(const float* qkv, float* out, float* lse, const AttentionShape& s) {
  const int T = s.seq, hd = s.head_dim, W = s.qkv_width(), group = s.heads / s.kv_heads, D = s.heads * hd;
  const Rope table(T, hd);
  const Rope* rope = s.rope ? &table : nullptr;
  std::vector<float> q(static_cast<size_t>(T) * hd), k(q.size()), v(q.size());
  const Head head{q.data(), k.data(), v.data(), T, hd, 1.0f / std::sqrt(static_cast<float>(hd))};
  for (int n = 0; n < s.n; ++n) {
    const float* base = qkv + static_cast<size_t>(n) * T * W;
    for (int kh = 0; kh < s.kv_heads; ++kh) {
      gather_head(base, k.data(), T, W, (s.heads + kh) * hd, hd, rope);
      gather_head(base, v.data(), T, W, (s.heads + s.kv_heads + kh) * hd, hd, nullptr);
      for (int h = kh * group; h < (kh + 1) * group; ++h) {
        gather_head(base, q.data(), T, W, h * hd, hd, rope);
        head_forward(head, out + static_cast<size_t>(n) * T * D + static_cast<size_t>(h) * hd, D,
                     lse + (static_cast<size_t>(n) * s.heads + h) * T);
      }
    }
  }
}

void HostTransformer::attention_backward(const float* qkv, const float* out, const float* lse, const float* dout,
                                         float* dqkv, const AttentionShape& s) {
  const int T = s.seq, hd = s.head_dim, W = s.qkv_width(), group = s.heads / s.kv_heads, D = s.heads * hd;
  const Rope table(T, hd);
  const Rope* rope = s.rope ? &table : nullptr;
  const size_t th = static_cast<size_t>(T) * hd;
  std::vector<float> q(th), k(th), v(th), dq(th), dk(th), dv(th), delta(static_cast<size_t>(T));
  const Head head{q.data(), k.data(), v.data(), T, hd, 1.0f / std::sqrt(static_cast<float>(hd))};
  for (int n = 0; n < s.n; ++n) {
    const float* base = qkv + static_cast<size_t>(n) * T * W;
    float* dbase = dqkv + static_cast<size_t>(n) * T * W;
    for (int kh = 0; kh < s.kv_heads; ++kh) {
      gather_head(base, k.data(), T, W, (s.heads + kh) * hd, hd, rope);
      gather_head(base, v.data(), T, W, (s.heads + s.kv_heads + kh) * hd, hd, nullptr);
      std::fill(dk.begin(), dk.end(), 0.0f);
      std::fill(dv.begin(), dv.end(), 0.0f);
      for (int h = kh * group; h < (kh + 1) * group; ++h) {
        gather_head(base, q.data(), T, W, h * hd, hd, rope);
        const float* o = out + static_cast<size_t>(n) * T * D + static_cast<size_t>(h) * hd;
        const float* go = dout + static_cast<size_t>(n) * T * D + static_cast<size_t>(h) * hd;
        for (int t = 0; t < T; ++t)  // FlashAttention-2's D: rowsum(dO * O)
          delta[static_cast<size_t>(t)] = dot(go + static_cast<size_t>(t) * D, o + static_cast<size_t>(t) * D, hd);
        head_backward(head, go, D, lse + (static_cast<size_t>(n) * s.heads + h) * T, delta.data(), dq.data(), dk.data(),
                      dv.data());
        scatter_head(dq.data(), dbase, T, W, h * hd, hd, rope);
      }
      scatter_head(dk.data(), dbase, T, W, (s.heads + kh) * hd, hd, rope);
      scatter_head(dv.data(), dbase, T, W, (s.heads + s.kv_heads + kh) * hd, hd, nullptr);
    }
  }
}

// Online softmax over key tiles: each query keeps its running maximum, sum and weighted values.
void HostTransformer::head_forward(const Head& h, float* out, int ld, float* lse) {
  const int T = h.seq, hd = h.hd;
  std::vector<float> acc(static_cast<size_t>(kTile) * hd), p(static_cast<size_t>(kTile) * kTile);
  for (int q0 = 0; q0 < T; q0 += kTile) {
    const int qn = std::min(kTile, T - q0);
    float m[kTile], l[kTile];
    std::fill(m, m + qn, -std::numeric_limits<float>::infinity());
    std::fill(l, l + qn, 0.0f);
    std::fill(acc.begin(), acc.end(), 0.0f);
    for (int k0 = 0; k0 < q0 + qn; k0 += kTile) {
      const int kn = std::min(kTile, T - k0);
      for (int i = 0; i < qn; ++i) {
        const int last = std::min(kn, q0 + i - k0 + 1);  // causal: keys up to the query's position
        if (last <= 0) continue;
        float* pr = p.data() + static_cast<size_t>(i) * kTile;
        float mx = m[i];
        for (int j = 0; j < last; ++j) {
          pr[j] = h.scale * dot(h.q + static_cast<size_t>(q0 + i) * hd, h.k + static_cast<size_t>(k0 + j) * hd, hd);
          mx = std::max(mx, pr[j]);
        }
        const float correction = std::exp(m[i] - mx);
        float sum = 0;
        for (int j = 0; j < last; ++j) sum += pr[j] = std::exp(pr[j] - mx);
        l[i] = l[i] * correction + sum;
        m[i] = mx;
        float* a = acc.data() + static_cast<size_t>(i) * hd;
        for (int c = 0; c < hd; ++c) a[c] *= correction;
        for (int j = 0; j < last; ++j) {
          const float* vr = h.v + static_cast<size_t>(k0 + j) * hd;
          for (int c = 0; c < hd; ++c) a[c] += pr[j] * vr[c];
        }
      }
    }
    for (int i = 0; i < qn; ++i) {
      float* o = out + static_cast<size_t>(q0 + i) * ld;
      for (int c = 0; c < hd; ++c) o[c] = acc[static_cast<size_t>(i) * hd + c] / l[i];
      lse[q0 + i] = m[i] + std::log(l[i]);
    }
  }
}

// Query by query: each probability recomputed from the log-sum-exp, then dV, dS, dQ and dK.
void HostTransformer::head_backward(const Head& h, const float* dout, int ld, const float* lse, const float* delta,
                                    float* dq, float* dk, float* dv) {
  const int T = h.seq, hd = h.hd;
  std::vector<float> ds(static_cast<size_t>(T));
  std::fill(dq, dq + static_cast<size_t>(T) * hd, 0.0f);
  for (int i = 0; i < T; ++i) {
    const float* qi = h.q + static_cast<size_t>(i) * hd;
    const float* gi = dout + static_cast<size_t>(i) * ld;
    float* dqi = dq + static_cast<size_t>(i) * hd;
    for (int j = 0; j <= i; ++j) {
      const float* kj = h.k + static_cast<size_t>(j) * hd;
      const float pij = std::exp(h.scale * dot(qi, kj, hd) - lse[i]);
      float* dvj = dv + static_cast<size_t>(j) * hd;
      for (int c = 0; c < hd; ++c) dvj[c] += pij * gi[c];
      ds[static_cast<size_t>(j)] = pij * (dot(gi, h.v + static_cast<size_t>(j) * hd, hd) - delta[i]) * h.scale;
    }
    for (int j = 0; j <= i; ++j) {
      const float dsj = ds[static_cast<size_t>(j)];
      const float* kj = h.k + static_cast<size_t>(j) * hd;
      float* dkj = dk + static_cast<size_t>(j) * hd;
      for (int c = 0; c < hd; ++c) {
        dqi[c] += dsj * kj[c];
        dkj[c] += dsj * qi[c];
      }
    }
  }
}

TransformerKernels& host_transformer_kernels() {
  static HostTransformer k;
  return k;
}

}  // namespace ddplab
