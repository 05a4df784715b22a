// Launchers for the CUDA backend's convolution, pooling and batch-norm kernels (cuda_layers.cu); the
// semantics are Ops' (ops.hpp). All run asynchronously on `s`; pointers are device pointers.
#pragma once
#include <cuda_runtime_api.h>

namespace ddplab::cuda {

void im2col(const float* x, float* col, int n, int h, int w, int c, int k, cudaStream_t s);
void col2im(const float* col, float* dx, int n, int h, int w, int c, int k, cudaStream_t s);
void max_pool(const float* x, float* y, int n, int h, int w, int c, cudaStream_t s);
void max_pool_backward(const float* x, const float* y, const float* dy, float* dx, int n, int h, int w, int c,
                       cudaStream_t s);
void channel_moments(const float* x, int rows, int cols, float* out, cudaStream_t s);
void batch_norm_statistics(const float* moments, int cols, float* mean, float* var, float* running_mean,
                           float* running_var, float momentum, cudaStream_t s);
void batch_norm(const float* x, float* y, int rows, int cols, const float* mean, const float* var, const float* gamma,
                const float* beta, float eps, cudaStream_t s);
void batch_norm_backward_sums(const float* dy, const float* x, int rows, int cols, const float* mean, const float* var,
                              float eps, float* out, cudaStream_t s);
void batch_norm_backward(const float* dy, const float* x, int rows, int cols, const float* mean, const float* var,
                         const float* gamma, float eps, const float* sums, const float* count, float* dx,
                         cudaStream_t s);

}  // namespace ddplab::cuda
