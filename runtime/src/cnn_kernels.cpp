#include "cnn_kernels.hpp"

#include <algorithm>

namespace ddplab {
namespace {
constexpr std::size_t kColBudget = std::size_t(4) << 20;  // floats in one im2col block (16 MiB)
std::size_t sz(int v) { return static_cast<std::size_t>(v); }
}  // namespace

int im2col_block(const CnnLayer& L, int max_batch) {
  const std::size_t per_sample = L.pixels() * sz(L.in * L.kernel * L.kernel);
  return static_cast<int>(std::clamp<std::size_t>(kColBudget / per_sample, 1, sz(std::max(max_batch, 1))));
}

std::size_t im2col_floats(const CnnLayer& L, int max_batch) {
  return sz(im2col_block(L, max_batch)) * L.pixels() * sz(L.in * L.kernel * L.kernel);
}

void conv_forward(Ops& ops, const CnnLayer& L, const float* w, const float* b, const float* x, float* y, int n,
                  float* col, int block) {
  const int ckk = L.in * L.kernel * L.kernel;
  for (int s = 0; s < n; s += block) {
    const int k = std::min(block, n - s), rows = L.rows(k);
    ops.im2col(x + sz(s) * L.pixels() * sz(L.in), col, k, L.h, L.w, L.in, L.kernel);
    // Y = col W^T: one row per output pixel, one column per output channel (NHWC).
    ops.gemm(false, true, rows, L.out, ckk, 1.0f, col, ckk, w, ckk, 0.0f, y + sz(s) * L.out_elems(), L.out);
  }
  if (b) ops.add_bias(y, b, L.rows(n), L.out);
}

void conv_backward(Ops& ops, const CnnLayer& L, const float* w, const float* x, const float* dy, float* dw, float* db,
                   float* dx, int n, float* col, int block, bool accumulate) {
  const int ckk = L.in * L.kernel * L.kernel;
  for (int s = 0; s < n; s += block) {
    const int k = std::min(block, n - s), rows = L.rows(k);
    const float* dy_s = dy + sz(s) * L.out_elems();
    // dW (out x in k k) += dY^T col over this block's pixels.
    ops.im2col(x + sz(s) * L.pixels() * sz(L.in), col, k, L.h, L.w, L.in, L.kernel);
    ops.gemm(true, false, L.out, ckk, rows, 1.0f, dy_s, L.out, col, ckk, accumulate || s > 0 ? 1.0f : 0.0f, dw, ckk);
    if (!dx) continue;
    // dcol = dY W, then each input pixel sums what its windows received.
    ops.gemm(false, false, rows, ckk, L.out, 1.0f, dy_s, L.out, w, ckk, 0.0f, col, ckk);
    ops.col2im(col, dx + sz(s) * L.pixels() * sz(L.in), k, L.h, L.w, L.in, L.kernel);
  }
  if (db) ops.bias_grad(dy, db, L.rows(n), L.out, accumulate);
}

}  // namespace ddplab
