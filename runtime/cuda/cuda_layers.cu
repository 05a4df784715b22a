// The CUDA backend's convolution, pooling and batch-norm kernels (Ops in ops.hpp), NHWC as the host loops
// in runtime/cpu/host_layers.cpp, which the gpu tests check them against. Reductions run in a fixed order
// per column, so a step's result does not depend on scheduling.
#include "cuda_layers.hpp"

#include <algorithm>

#include "cuda_check.hpp"

namespace ddplab::cuda {
namespace {

constexpr int kThreads = 256;

unsigned blocks_for(std::size_t n) {
  return static_cast<unsigned>(std::min<std::size_t>((n + kThreads - 1) / kThreads, 65535));
}

#define GRID_STRIDE(i, n)                                                           \
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < (n); \
       i += std::size_t(gridDim.x) * blockDim.x)

// One thread per col element: row (image, y, x), column (channel, ky, kx).
__global__ void im2col_k(const float* x, float* col, int n, int h, int w, int c, int k) {
  const int pad = k / 2;
  const std::size_t width = std::size_t(c) * k * k, total = std::size_t(n) * h * w * width;
  GRID_STRIDE(e, total) {
    const std::size_t row = e / width;
    const int j = int(e % width), ch = j / (k * k), ky = (j / k) % k, kx = j % k;
    const int xx = int(row % w), y = int((row / w) % h);
    const std::size_t i = row / (std::size_t(w) * h);
    const int sy = y + ky - pad, sx = xx + kx - pad;
    col[e] = sy >= 0 && sy < h && sx >= 0 && sx < w ? x[((i * h + sy) * w + sx) * c + ch] : 0.0f;
  }
}

// One thread per input element: the sum over the windows that read it, in (ky, kx) order.
__global__ void col2im_k(const float* col, float* dx, int n, int h, int w, int c, int k) {
  const int pad = k / 2;
  const std::size_t width = std::size_t(c) * k * k, total = std::size_t(n) * h * w * c;
  GRID_STRIDE(e, total) {
    const int ch = int(e % c), sx = int((e / c) % w), sy = int((e / (std::size_t(c) * w)) % h);
    const std::size_t i = e / (std::size_t(c) * w * h);
    float sum = 0.0f;
    for (int ky = 0; ky < k; ++ky)
      for (int kx = 0; kx < k; ++kx) {
        const int y = sy - ky + pad, xx = sx - kx + pad;
        if (y < 0 || y >= h || xx < 0 || xx >= w) continue;
        sum += col[((i * h + y) * w + xx) * width + (std::size_t(ch) * k + ky) * k + kx];
      }
    dx[e] = sum;
  }
}

__device__ std::size_t pool_at(std::size_t o, int h, int w, int c, int d) {
  const int ho = h / 2, wo = w / 2, ch = int(o % c), ox = int((o / c) % wo), oy = int((o / (std::size_t(c) * wo)) % ho);
  const std::size_t i = o / (std::size_t(c) * wo * ho);
  return ((i * h + 2 * oy + d / 2) * w + 2 * ox + d % 2) * c + ch;
}

__global__ void max_pool_k(const float* x, float* y, int n, int h, int w, int c) {
  const std::size_t total = std::size_t(n) * (h / 2) * (w / 2) * c;
  GRID_STRIDE(o, total) {
    float best = x[pool_at(o, h, w, c, 0)];
    for (int d = 1; d < 4; ++d) {
      const float v = x[pool_at(o, h, w, c, d)];
      if (v > best || isnan(v)) best = v;
    }
    y[o] = best;
  }
}

__global__ void max_pool_backward_k(const float* x, const float* y, const float* dy, float* dx, int n, int h, int w,
                                    int c) {
  const std::size_t total = std::size_t(n) * (h / 2) * (w / 2) * c;
  GRID_STRIDE(o, total) {
    bool routed = false;
    for (int d = 0; d < 4; ++d) {
      const std::size_t at = pool_at(o, h, w, c, d);
      const bool here = !routed && (x[at] == y[o] || (isnan(x[at]) && isnan(y[o])));
      dx[at] = here ? dy[o] : 0.0f;
      routed = routed || here;
    }
  }
}

// 32 columns per block, 8 row slices summed in double through shared memory in a fixed order. With b
// (not null) the second sum is of a * xhat-like products: sum_i a[i,j] (b[i,j] - mean[j]) * inv_std[j].
__global__ void column_sums_k(const float* a, const float* b, int rows, int cols, const float* mean, const float* var,
                              float eps, float* out) {
  __shared__ double s1[8][33], s2[8][33];
  const int col = blockIdx.x * 32 + threadIdx.x;
  double x1 = 0.0, x2 = 0.0;
  if (col < cols) {
    const float m = b ? mean[col] : 0.0f, is = b ? rsqrtf(var[col] + eps) : 0.0f;
    for (int r = threadIdx.y; r < rows; r += 8) {
      const float v = a[std::size_t(r) * cols + col];
      x1 += v;
      x2 += b ? double(v) * double((b[std::size_t(r) * cols + col] - m) * is) : double(v) * v;
    }
  }
  s1[threadIdx.y][threadIdx.x] = x1;
  s2[threadIdx.y][threadIdx.x] = x2;
  __syncthreads();
  if (threadIdx.y == 0 && col < cols) {
    double t1 = 0.0, t2 = 0.0;
    for (int k = 0; k < 8; ++k) t1 += s1[k][threadIdx.x], t2 += s2[k][threadIdx.x];
    out[col] = float(t1);
    out[cols + col] = float(t2);
    if (!b && col == 0) out[2 * cols] = float(rows);
  }
}

__global__ void batch_norm_statistics_k(const float* moments, int cols, float* mean, float* var, float* rm, float* rv,
                                        float momentum) {
  const int j = blockIdx.x * blockDim.x + threadIdx.x;
  if (j >= cols) return;
  const double count = moments[2 * cols];
  const double m = count > 0 ? moments[j] / count : 0.0;
  const double v = count > 0 ? fmax(0.0, moments[cols + j] / count - m * m) : 0.0;
  mean[j] = float(m);
  var[j] = float(v);
  if (!rm) return;
  const double unbiased = count > 1 ? v * count / (count - 1) : v;
  rm[j] = float((1.0 - momentum) * rm[j] + momentum * m);
  rv[j] = float((1.0 - momentum) * rv[j] + momentum * unbiased);
}

__global__ void batch_norm_k(const float* x, float* y, std::size_t n, int cols, const float* mean, const float* var,
                             const float* gamma, const float* beta, float eps) {
  GRID_STRIDE(e, n) {
    const int j = int(e % cols);
    y[e] = gamma[j] * ((x[e] - mean[j]) * (1.0f / sqrtf(var[j] + eps))) + beta[j];
  }
}

__global__ void batch_norm_backward_k(const float* dy, const float* x, std::size_t n, int cols, const float* mean,
                                      const float* var, const float* gamma, float eps, const float* sums,
                                      const float* count, float* dx) {
  const float inv_count = *count > 0 ? 1.0f / *count : 0.0f;
  GRID_STRIDE(e, n) {
    const int j = int(e % cols);
    const float is = 1.0f / sqrtf(var[j] + eps), xhat = (x[e] - mean[j]) * is;
    dx[e] = gamma[j] * is * (dy[e] - sums[j] * inv_count - xhat * sums[cols + j] * inv_count);
  }
}

void launched() { cudaCheck(cudaGetLastError()); }

}  // namespace

void im2col(const float* x, float* col, int n, int h, int w, int c, int k, cudaStream_t s) {
  const std::size_t total = std::size_t(n) * h * w * c * k * k;
  if (total == 0) return;
  im2col_k<<<blocks_for(total), kThreads, 0, s>>>(x, col, n, h, w, c, k);
  launched();
}

void col2im(const float* col, float* dx, int n, int h, int w, int c, int k, cudaStream_t s) {
  const std::size_t total = std::size_t(n) * h * w * c;
  if (total == 0) return;
  col2im_k<<<blocks_for(total), kThreads, 0, s>>>(col, dx, n, h, w, c, k);
  launched();
}

void max_pool(const float* x, float* y, int n, int h, int w, int c, cudaStream_t s) {
  const std::size_t total = std::size_t(n) * (h / 2) * (w / 2) * c;
  if (total == 0) return;
  max_pool_k<<<blocks_for(total), kThreads, 0, s>>>(x, y, n, h, w, c);
  launched();
}

void max_pool_backward(const float* x, const float* y, const float* dy, float* dx, int n, int h, int w, int c,
                       cudaStream_t s) {
  const std::size_t total = std::size_t(n) * (h / 2) * (w / 2) * c;
  if (total == 0) return;
  max_pool_backward_k<<<blocks_for(total), kThreads, 0, s>>>(x, y, dy, dx, n, h, w, c);
  launched();
}

void channel_moments(const float* x, int rows, int cols, float* out, cudaStream_t s) {
  if (cols <= 0) return;
  column_sums_k<<<unsigned((cols + 31) / 32), dim3(32, 8), 0, s>>>(x, nullptr, rows, cols, nullptr, nullptr, 0.0f, out);
  launched();
}

void batch_norm_statistics(const float* moments, int cols, float* mean, float* var, float* running_mean,
                           float* running_var, float momentum, cudaStream_t s) {
  if (cols <= 0) return;
  batch_norm_statistics_k<<<unsigned((cols + 127) / 128), 128, 0, s>>>(moments, cols, mean, var, running_mean,
                                                                       running_var, momentum);
  launched();
}

void batch_norm(const float* x, float* y, int rows, int cols, const float* mean, const float* var, const float* gamma,
                const float* beta, float eps, cudaStream_t s) {
  const std::size_t n = std::size_t(rows) * cols;
  if (n == 0) return;
  batch_norm_k<<<blocks_for(n), kThreads, 0, s>>>(x, y, n, cols, mean, var, gamma, beta, eps);
  launched();
}

void batch_norm_backward_sums(const float* dy, const float* x, int rows, int cols, const float* mean, const float* var,
                              float eps, float* out, cudaStream_t s) {
  if (cols <= 0) return;
  column_sums_k<<<unsigned((cols + 31) / 32), dim3(32, 8), 0, s>>>(dy, x, rows, cols, mean, var, eps, out);
  launched();
}

void batch_norm_backward(const float* dy, const float* x, int rows, int cols, const float* mean, const float* var,
                         const float* gamma, float eps, const float* sums, const float* count, float* dx,
                         cudaStream_t s) {
  const std::size_t n = std::size_t(rows) * cols;
  if (n == 0) return;
  batch_norm_backward_k<<<blocks_for(n), kThreads, 0, s>>>(dy, x, n, cols, mean, var, gamma, eps, sums, count, dx);
  launched();
}

}  // namespace ddplab::cuda
