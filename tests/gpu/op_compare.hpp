// Runs one op on two backends with the same random inputs and returns the largest error relative to the
// stated tolerance (<= 1 passes): |got - want| <= atol + rtol * |want| element-wise. Shared by the CUDA
// vs reference tests (gpu) and the reference vs OpenBLAS tests (unit).
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <random>
#include <vector>

#include "ddplab/runtime/ops.hpp"

namespace ddplab::test {

struct Tol {
  double atol, rtol;
};

inline std::vector<float> random_floats(std::size_t n, std::uint64_t seed, float lo = -1.0f, float hi = 1.0f) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<float> d(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

// A host vector on a backend (device memory for CUDA), freed with it.
class Dev {
 public:
  Dev(Ops& ops, const std::vector<float>& host) : ops_(ops), n_(host.size()), p_(ops.alloc(host.size())) {
    ops.to_device(p_, host.data(), n_);
  }
  ~Dev() { ops_.free(p_); }
  Dev(const Dev&) = delete;
  Dev& operator=(const Dev&) = delete;
  float* get() const { return p_; }
  std::vector<float> host() const {
    std::vector<float> h(n_);
    ops_.to_host(h.data(), p_, n_);
    return h;
  }

 private:
  Ops& ops_;
  std::size_t n_;
  float* p_;
};

inline double worst(const std::vector<float>& got, const std::vector<float>& want, Tol t) {
  double w = 0;
  for (std::size_t i = 0; i < want.size(); ++i) {
    const double err = std::abs(static_cast<double>(got[i]) - want[i]);
    w = std::max(w, std::isfinite(err) ? err / (t.atol + t.rtol * std::abs(static_cast<double>(want[i]))) : 1e30);
  }
  return w;
}

// Runs f(ops, buffers...) on both backends over copies of `inputs`; compares every buffer afterwards.
template <class F>
double compare(Ops& x, Ops& ref, const std::vector<std::vector<float>>& inputs, Tol t, F f) {
  std::vector<std::unique_ptr<Dev>> bx, br;
  std::vector<float*> px, pr;
  for (const auto& in : inputs) {
    bx.push_back(std::make_unique<Dev>(x, in)), px.push_back(bx.back()->get());
    br.push_back(std::make_unique<Dev>(ref, in)), pr.push_back(br.back()->get());
  }
  f(x, px);
  f(ref, pr);
  double w = 0;
  for (std::size_t i = 0; i < inputs.size(); ++i) w = std::max(w, worst(bx[i]->host(), br[i]->host(), t));
  return w;
}

// GEMM on row-major operands sized for op(A) m x k and op(B) k x n, with alpha and beta both exercised.
inline double compare_gemm(Ops& x, Ops& ref, bool ta, bool tb, int m, int n, int k, Tol t, std::uint64_t seed) {
  const int lda = ta ? m : k, ldb = tb ? k : n;
  auto a = random_floats(static_cast<std::size_t>(m) * k, seed),
       b = random_floats(static_cast<std::size_t>(k) * n, seed + 1);
  auto c = random_floats(static_cast<std::size_t>(m) * n, seed + 2);
  return compare(x, ref, {a, b, c}, t, [&](Ops& o, std::vector<float*>& p) {
    o.gemm(ta, tb, m, n, k, 0.75f, p[0], lda, p[1], ldb, 0.5f, p[2], n);
  });
}

// Softmax cross-entropy: the loss (returned through *loss_err, relative) and the gradient buffer.
// With weighted, class c weighs 0.5 + c / cols (torch's CrossEntropyLoss(weight)).
inline double compare_softmax(Ops& x, Ops& ref, int rows, int cols, Tol t, std::uint64_t seed, double* loss_err,
                              bool weighted = false) {
  auto logits = random_floats(static_cast<std::size_t>(rows) * cols, seed, -8.0f, 8.0f);
  std::vector<std::int32_t> labels(static_cast<std::size_t>(rows));
  for (int i = 0; i < rows; ++i) labels[static_cast<std::size_t>(i)] = (i * 7 + 3) % cols;
  double loss[2] = {0, 0};
  int which = 0;
  std::vector<float> class_w(static_cast<std::size_t>(cols));
  for (int c = 0; c < cols; ++c)
    class_w[static_cast<std::size_t>(c)] = 0.5f + static_cast<float>(c) / static_cast<float>(cols);
  const double w =
      compare(x, ref, {logits, std::vector<float>(logits.size()), class_w}, t, [&](Ops& o, std::vector<float*>& p) {
        std::int32_t* y = o.alloc_labels(labels.size());
        o.labels_to_device(y, labels.data(), labels.size());
        loss[which++] = o.softmax_xent(p[0], y, rows, cols, p[1], weighted ? p[2] : nullptr);
        o.free_labels(y);
      });
  *loss_err = std::abs(loss[0] - loss[1]) / std::max(1.0, std::abs(loss[1]));
  return w;
}

}  // namespace ddplab::test
