// The CUDA backend's kernels: element-wise ops, column sums, per-row softmax cross-entropy and the
// reduction the NCCL executor applies to received chunks. Kept to what the ops interface needs.
#include "cuda_kernels.hpp"

#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <algorithm>
#include <type_traits>

#include "cuda_check.hpp"

namespace ddplab::cuda {
namespace {

constexpr int kThreads = 256;

// Enough blocks to fill the device; kernels grid-stride over the rest.
unsigned blocks_for(std::size_t n) {
  return static_cast<unsigned>(std::min<std::size_t>((n + kThreads - 1) / kThreads, 65535));
}

__global__ void add_bias_k(float* y, const float* bias, std::size_t n, int cols) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    y[i] += bias[i % cols];
}

// 32 columns per block, 8 row slices reduced through shared memory in a fixed order (deterministic).
__global__ void bias_grad_k(const float* dy, float* db, int rows, int cols, bool accumulate) {
  __shared__ float part[8][33];
  const int col = blockIdx.x * 32 + threadIdx.x;
  float s = 0.0f;
  if (col < cols)
    for (int r = threadIdx.y; r < rows; r += 8) s += dy[std::size_t(r) * cols + col];
  part[threadIdx.y][threadIdx.x] = s;
  __syncthreads();
  if (threadIdx.y == 0 && col < cols) {
    float t = 0.0f;
    for (int k = 0; k < 8; ++k) t += part[k][threadIdx.x];
    db[col] = accumulate ? db[col] + t : t;
  }
}

__global__ void relu_k(float* y, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    y[i] = y[i] > 0.0f ? y[i] : 0.0f;
}

__global__ void relu_backward_k(float* dx, const float* y, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    dx[i] = y[i] > 0.0f ? dx[i] : 0.0f;
}

// One warp per row: max, sum of exponentials, loss and gradient, all with warp shuffles.
// With class weights w, each row's loss and gradient are w[y] times the unweighted ones, and the gradient is
// not divided by rows: the host divides it by the weights' sum once sum_rows_k has it.
__global__ void softmax_xent_k(const float* logits, const std::int32_t* labels, int rows, int cols, float* dlogits,
                               double* row_loss, const float* w) {
  const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
  if (row >= rows) return;
  const float* z = logits + std::size_t(row) * cols;
  const int y = labels[row];
  const bool bad = y < 0 || y >= cols;
  float zmax = -INFINITY;
  for (int j = lane; j < cols; j += 32) zmax = fmaxf(zmax, z[j]);
  for (int o = 16; o > 0; o >>= 1) zmax = fmaxf(zmax, __shfl_xor_sync(0xffffffffu, zmax, o));
  float sum = 0.0f;
  for (int j = lane; j < cols; j += 32) sum += expf(z[j] - zmax);
  for (int o = 16; o > 0; o >>= 1) sum += __shfl_xor_sync(0xffffffffu, sum, o);
  const float log_sum = logf(sum);
  const float rw = w && !bad ? w[y] : 1.0f;
  if (lane == 0) row_loss[row] = bad ? 0.0 : double(rw) * (double(log_sum) - double(z[y] - zmax));
  if (dlogits && !bad) {
    const float inv_rows = w ? rw : 1.0f / float(rows);
    float* d = dlogits + std::size_t(row) * cols;
    for (int j = lane; j < cols; j += 32) d[j] = expf(z[j] - zmax - log_sum) * inv_rows - (j == y ? inv_rows : 0.0f);
  }
}

// One block: thread t sums rows t, t+256, ... then a tree; the order is fixed so the loss is reproducible.
// out: the loss sum, the labels out of range, and the rows' weights summed (rows without class weights).
__global__ void sum_rows_k(const double* row_loss, const std::int32_t* labels, int rows, int cols, const float* cw,
                           double* out) {
  __shared__ double s[kThreads], ws[kThreads];
  __shared__ int bad[kThreads];
  double a = 0.0, wa = 0.0;
  int b = 0;
  for (int i = threadIdx.x; i < rows; i += kThreads) {
    if (labels[i] < 0 || labels[i] >= cols)
      ++b;
    else
      a += row_loss[i], wa += cw ? double(cw[labels[i]]) : 1.0;
  }
  s[threadIdx.x] = a;
  ws[threadIdx.x] = wa;
  bad[threadIdx.x] = b;
  __syncthreads();
  for (int w = kThreads / 2; w > 0; w >>= 1) {
    if (threadIdx.x < w)
      s[threadIdx.x] += s[threadIdx.x + w], ws[threadIdx.x] += ws[threadIdx.x + w],
          bad[threadIdx.x] += bad[threadIdx.x + w];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[0] = s[0], out[1] = bad[0], out[2] = ws[0];
}

__global__ void scale_k(float* x, std::size_t n, float alpha) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x)
    x[i] *= alpha;
}

// Halves are summed as round(float(a) + float(b)), which is what strategies/half.hpp does on the host.
template <class T>
__global__ void sum_into_k(T* dst, const T* src, std::size_t n) {
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < n;
       i += std::size_t(gridDim.x) * blockDim.x) {
    if constexpr (std::is_same_v<T, float>)
      dst[i] += src[i];
    else if constexpr (std::is_same_v<T, __half>)
      dst[i] = __float2half_rn(__half2float(dst[i]) + __half2float(src[i]));
    else
      dst[i] = __float2bfloat16_rn(__bfloat162float(dst[i]) + __bfloat162float(src[i]));
  }
}

void launched() { cudaCheck(cudaGetLastError()); }

}  // namespace

void add_bias(float* y, const float* bias, int rows, int cols, cudaStream_t s) {
  const std::size_t n = std::size_t(rows) * cols;
  if (n == 0) return;
  add_bias_k<<<blocks_for(n), kThreads, 0, s>>>(y, bias, n, cols);
  launched();
}

void bias_grad(const float* dy, float* db, int rows, int cols, bool accumulate, cudaStream_t s) {
  if (cols <= 0) return;
  bias_grad_k<<<unsigned((cols + 31) / 32), dim3(32, 8), 0, s>>>(dy, db, rows, cols, accumulate);
  launched();
}

void relu(float* y, std::size_t n, cudaStream_t s) {
  if (n == 0) return;
  relu_k<<<blocks_for(n), kThreads, 0, s>>>(y, n);
  launched();
}

void relu_backward(float* dx, const float* y, std::size_t n, cudaStream_t s) {
  if (n == 0) return;
  relu_backward_k<<<blocks_for(n), kThreads, 0, s>>>(dx, y, n);
  launched();
}

void softmax_xent(const float* logits, const std::int32_t* labels, int rows, int cols, float* dlogits, double* row_loss,
                  double* out, const float* class_weights, cudaStream_t s) {
  const int rows_per_block = kThreads / 32;
  softmax_xent_k<<<unsigned((rows + rows_per_block - 1) / rows_per_block), kThreads, 0, s>>>(
      logits, labels, rows, cols, dlogits, row_loss, class_weights);
  launched();
  sum_rows_k<<<1, kThreads, 0, s>>>(row_loss, labels, rows, cols, class_weights, out);
  launched();
}

void scale(float* x, std::size_t n, float alpha, cudaStream_t s) {
  if (n == 0) return;
  scale_k<<<blocks_for(n), kThreads, 0, s>>>(x, n, alpha);
  launched();
}

void sum_into(ElemType type, void* dst, const void* src, std::size_t n, cudaStream_t s) {
  if (n == 0) return;
  switch (type) {
    case ElemType::F32:
      sum_into_k<<<blocks_for(n), kThreads, 0, s>>>(static_cast<float*>(dst), static_cast<const float*>(src), n);
      break;
    case ElemType::F16:
      sum_into_k<<<blocks_for(n), kThreads, 0, s>>>(static_cast<__half*>(dst), static_cast<const __half*>(src), n);
      break;
    case ElemType::BF16:
      sum_into_k<<<blocks_for(n), kThreads, 0, s>>>(static_cast<__nv_bfloat16*>(dst),
                                                    static_cast<const __nv_bfloat16*>(src), n);
      break;
    default:
      throw std::invalid_argument("cuda::sum_into: unsupported element type");
  }
  launched();
}

}  // namespace ddplab::cuda
