// Launchers for the CUDA backend's kernels (cuda_kernels.cu). Host code calls these so that only one
// translation unit goes through nvcc. All run asynchronously on `stream`; pointers are device pointers.
#pragma once
#include <cstddef>
#include <cstdint>

#include <cuda_runtime_api.h>

#include "ddplab/strategies/codec.hpp"

namespace ddplab::cuda {

void add_bias(float* y, const float* bias, int rows, int cols, cudaStream_t s);
void bias_grad(const float* dy, float* db, int rows, int cols, bool accumulate, cudaStream_t s);
void relu(float* y, std::size_t n, cudaStream_t s);
void relu_backward(float* dx, const float* y, std::size_t n, cudaStream_t s);
// Per-row losses into row_loss (rows doubles), then their sum in row order into out[0], the number of
// labels outside [0, cols) into out[1] and the rows' class weights summed into out[2]. dlogits may be null.
// With class_weights (cols floats on the device) each row is weighted, and dlogits is left to be divided by
// out[2] (unweighted: it is already divided by rows).
void softmax_xent(const float* logits, const std::int32_t* labels, int rows, int cols, float* dlogits, double* row_loss,
                  double* out, const float* class_weights, cudaStream_t s);
void scale(float* x, std::size_t n, float alpha, cudaStream_t s);
// dst += src element-wise in `type` (F32, F16 or BF16; halves round as in strategies/half.hpp).
void sum_into(ElemType type, void* dst, const void* src, std::size_t count, cudaStream_t s);

}  // namespace ddplab::cuda
