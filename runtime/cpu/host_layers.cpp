#include "host_layers.hpp"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <system_error>
#include <vector>

namespace ddplab::host_layers {
namespace {
using std::size_t;
float inv_std(float var, float eps) { return 1.0f / std::sqrt(var + eps); }
// Per column, once: 1 / sqrt(var + eps) (the same float the per-element formula gives).
std::vector<float> inv_stds(const float* var, int cols, float eps) {
  std::vector<float> out(static_cast<size_t>(cols));
  for (int j = 0; j < cols; ++j) out[static_cast<size_t>(j)] = inv_std(var[j], eps);
  return out;
}
}  // namespace

void im2col(const float* x, float* col, int n, int h, int w, int c, int k) {
  const int pad = k / 2;
  const size_t width = static_cast<size_t>(c) * k * k;
  for (int i = 0; i < n; ++i)
    for (int y = 0; y < h; ++y)
      for (int xx = 0; xx < w; ++xx) {
        float* row = col + ((static_cast<size_t>(i) * h + y) * w + xx) * width;
        for (int ch = 0; ch < c; ++ch)
          for (int ky = 0; ky < k; ++ky)
            for (int kx = 0; kx < k; ++kx) {
              const int sy = y + ky - pad, sx = xx + kx - pad;
              const bool inside = sy >= 0 && sy < h && sx >= 0 && sx < w;
              row[(static_cast<size_t>(ch) * k + ky) * k + kx] =
                  inside ? x[((static_cast<size_t>(i) * h + sy) * w + sx) * c + ch] : 0.0f;
            }
      }
}

void col2im(const float* col, float* dx, int n, int h, int w, int c, int k) {
  const int pad = k / 2;
  const size_t width = static_cast<size_t>(c) * k * k;
  // Gather form: each input pixel sums the window entries that read it, in (ky, kx) order, so the result
  // does not depend on a scatter's order.
  for (int i = 0; i < n; ++i)
    for (int sy = 0; sy < h; ++sy)
      for (int sx = 0; sx < w; ++sx)
        for (int ch = 0; ch < c; ++ch) {
          double sum = 0;
          for (int ky = 0; ky < k; ++ky)
            for (int kx = 0; kx < k; ++kx) {
              const int y = sy - ky + pad, xx = sx - kx + pad;  // the output pixel whose window holds (sy, sx)
              if (y < 0 || y >= h || xx < 0 || xx >= w) continue;
              sum += col[((static_cast<size_t>(i) * h + y) * w + xx) * width + (static_cast<size_t>(ch) * k + ky) * k +
                         kx];
            }
          dx[((static_cast<size_t>(i) * h + sy) * w + sx) * c + ch] = static_cast<float>(sum);
        }
}

void max_pool(const float* x, float* y, int n, int h, int w, int c) {
  const int ho = h / 2, wo = w / 2;
  for (int i = 0; i < n; ++i)
    for (int oy = 0; oy < ho; ++oy)
      for (int ox = 0; ox < wo; ++ox)
        for (int ch = 0; ch < c; ++ch) {
          float best = x[((static_cast<size_t>(i) * h + 2 * oy) * w + 2 * ox) * c + ch];
          for (int d = 1; d < 4; ++d) {
            const float v = x[((static_cast<size_t>(i) * h + 2 * oy + d / 2) * w + 2 * ox + d % 2) * c + ch];
            if (v > best || std::isnan(v)) best = v;
          }
          y[((static_cast<size_t>(i) * ho + oy) * wo + ox) * c + ch] = best;
        }
}

void max_pool_backward(const float* x, const float* y, const float* dy, float* dx, int n, int h, int w, int c) {
  const int ho = h / 2, wo = w / 2;
  for (int i = 0; i < n; ++i)
    for (int oy = 0; oy < ho; ++oy)
      for (int ox = 0; ox < wo; ++ox)
        for (int ch = 0; ch < c; ++ch) {
          const size_t o = ((static_cast<size_t>(i) * ho + oy) * wo + ox) * c + ch;
          bool routed = false;
          for (int d = 0; d < 4; ++d) {
            const size_t at = ((static_cast<size_t>(i) * h + 2 * oy + d / 2) * w + 2 * ox + d % 2) * c + ch;
            const bool here = !routed && (x[at] == y[o] || (std::isnan(x[at]) && std::isnan(y[o])));
            dx[at] = here ? dy[o] : 0.0f;
            routed = routed || here;
          }
        }
}

void channel_moments(const float* x, int rows, int cols, float* out) {
  std::vector<double> sum(static_cast<size_t>(cols)), sq(static_cast<size_t>(cols));
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j) {
      const double v = x[static_cast<size_t>(i) * cols + j];
      sum[static_cast<size_t>(j)] += v;
      sq[static_cast<size_t>(j)] += v * v;
    }
  for (int j = 0; j < cols; ++j) {
    out[j] = static_cast<float>(sum[static_cast<size_t>(j)]);
    out[cols + j] = static_cast<float>(sq[static_cast<size_t>(j)]);
  }
  out[2 * cols] = static_cast<float>(rows);
}

void batch_norm_statistics(const float* moments, int cols, float* mean, float* var, float* running_mean,
                           float* running_var, float momentum) {
  const double count = moments[2 * cols];
  for (int j = 0; j < cols; ++j) {
    const double m = count > 0 ? moments[j] / count : 0.0;
    const double v = count > 0 ? std::max(0.0, moments[cols + j] / count - m * m) : 0.0;
    mean[j] = static_cast<float>(m);
    var[j] = static_cast<float>(v);
    if (!running_mean) continue;
    const double unbiased = count > 1 ? v * count / (count - 1) : v;
    running_mean[j] = static_cast<float>((1.0 - momentum) * running_mean[j] + momentum * m);
    running_var[j] = static_cast<float>((1.0 - momentum) * running_var[j] + momentum * unbiased);
  }
}

void batch_norm(const float* x, float* y, int rows, int cols, const float* mean, const float* var, const float* gamma,
                const float* beta, float eps) {
  const std::vector<float> is = inv_stds(var, cols, eps);
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j) {
      const size_t at = static_cast<size_t>(i) * cols + j;
      y[at] = gamma[j] * ((x[at] - mean[j]) * is[static_cast<size_t>(j)]) + beta[j];
    }
}

void batch_norm_backward_sums(const float* dy, const float* x, int rows, int cols, const float* mean, const float* var,
                              float eps, float* out) {
  std::vector<double> sdy(static_cast<size_t>(cols)), sdyx(static_cast<size_t>(cols));
  const std::vector<float> is = inv_stds(var, cols, eps);
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j) {
      const size_t at = static_cast<size_t>(i) * cols + j;
      sdy[static_cast<size_t>(j)] += dy[at];
      sdyx[static_cast<size_t>(j)] += static_cast<double>(dy[at]) * ((x[at] - mean[j]) * is[static_cast<size_t>(j)]);
    }
  for (int j = 0; j < cols; ++j) {
    out[j] = static_cast<float>(sdy[static_cast<size_t>(j)]);
    out[cols + j] = static_cast<float>(sdyx[static_cast<size_t>(j)]);
  }
}

void batch_norm_backward(const float* dy, const float* x, int rows, int cols, const float* mean, const float* var,
                         const float* gamma, float eps, const float* sums, const float* count, float* dx) {
  const float inv_count = *count > 0 ? 1.0f / *count : 0.0f;
  const std::vector<float> inv = inv_stds(var, cols, eps);
  for (int i = 0; i < rows; ++i)
    for (int j = 0; j < cols; ++j) {
      const size_t at = static_cast<size_t>(i) * cols + j;
      const float is = inv[static_cast<size_t>(j)], xhat = (x[at] - mean[j]) * is;
      dx[at] = gamma[j] * is * (dy[at] - sums[j] * inv_count - xhat * sums[cols + j] * inv_count);
    }
}

}  // namespace ddplab::host_layers

namespace ddplab {

std::size_t HostLayerOps::release(float* p, std::size_t n) {
  // Only pages wholly inside the range: the rest of a page may hold live data (the shard, another buffer).
  static const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<std::uintptr_t>(p), end = begin + n * sizeof(float);
  const std::uintptr_t first = (begin + page - 1) / page * page, last = end / page * page;
  if (last <= first) return 0;
  if (madvise(reinterpret_cast<void*>(first), last - first, MADV_DONTNEED) != 0)
    throw std::system_error(errno, std::generic_category(), "madvise(MADV_DONTNEED) of a released range");
  return last - first;
}

}  // namespace ddplab
