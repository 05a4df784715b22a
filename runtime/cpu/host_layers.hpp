// The convolution, pooling and batch-norm ops of Ops (ops.hpp) as plain loops over host memory, shared by
// the cpu and reference backends (the CUDA kernels are checked against them). Sums accumulate in double.
#pragma once
#include "ddplab/runtime/ops.hpp"
#include "ddplab/runtime/transformer_kernels.hpp"

namespace ddplab::host_layers {

void im2col(const float* x, float* col, int n, int h, int w, int c, int k);
void col2im(const float* col, float* dx, int n, int h, int w, int c, int k);
void max_pool(const float* x, float* y, int n, int h, int w, int c);
void max_pool_backward(const float* x, const float* y, const float* dy, float* dx, int n, int h, int w, int c);
void channel_moments(const float* x, int rows, int cols, float* out);
void batch_norm_statistics(const float* moments, int cols, float* mean, float* var, float* running_mean,
                           float* running_var, float momentum);
void batch_norm(const float* x, float* y, int rows, int cols, const float* mean, const float* var, const float* gamma,
                const float* beta, float eps);
void batch_norm_backward_sums(const float* dy, const float* x, int rows, int cols, const float* mean, const float* var,
                              float eps, float* out);
void batch_norm_backward(const float* dy, const float* x, int rows, int cols, const float* mean, const float* var,
                         const float* gamma, float eps, const float* sums, const float* count, float* dx);

}  // namespace ddplab::host_layers

namespace ddplab {

// The host backends' common base: these Ops as the loops above, and release() as madvise(MADV_DONTNEED)
// of the whole pages inside the range (host_layers.cpp).
class HostLayerOps : public Ops {
 public:
  bool can_release() const override { return true; }
  TransformerKernels* transformer() override { return &host_transformer_kernels(); }
  std::size_t release(float* p, std::size_t n) override;
  void im2col(const float* x, float* col, int n, int h, int w, int c, int k) override {
    host_layers::im2col(x, col, n, h, w, c, k);
  }
  void col2im(const float* col, float* dx, int n, int h, int w, int c, int k) override {
    host_layers::col2im(col, dx, n, h, w, c, k);
  }
  void max_pool(const float* x, float* y, int n, int h, int w, int c) override {
    host_layers::max_pool(x, y, n, h, w, c);
  }
  void max_pool_backward(const float* x, const float* y, const float* dy, float* dx, int n, int h, int w,
                         int c) override {
    host_layers::max_pool_backward(x, y, dy, dx, n, h, w, c);
  }
  void channel_moments(const float* x, int rows, int cols, float* out) override {
    host_layers::channel_moments(x, rows, cols, out);
  }
  void batch_norm_statistics(const float* moments, int cols, float* mean, float* var, float* running_mean,
                             float* running_var, float momentum) override {
    host_layers::batch_norm_statistics(moments, cols, mean, var, running_mean, running_var, momentum);
  }
  void batch_norm(const float* x, float* y, int rows, int cols, const float* mean, const float* var, const float* gamma,
                  const float* beta, float eps) override {
    host_layers::batch_norm(x, y, rows, cols, mean, var, gamma, beta, eps);
  }
  void batch_norm_backward_sums(const float* dy, const float* x, int rows, int cols, const float* mean,
                                const float* var, float eps, float* out) override {
    host_layers::batch_norm_backward_sums(dy, x, rows, cols, mean, var, eps, out);
  }
  void batch_norm_backward(const float* dy, const float* x, int rows, int cols, const float* mean, const float* var,
                           const float* gamma, float eps, const float* sums, const float* count, float* dx) override {
    host_layers::batch_norm_backward(dy, x, rows, cols, mean, var, gamma, eps, sums, count, dx);
  }
};

}  // namespace ddplab
