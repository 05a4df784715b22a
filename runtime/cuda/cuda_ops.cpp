// CUDA backend: GEMM on cuBLAS, the rest as kernels (cuda_kernels.cu), all on one stream per backend.
// Row-major matrices go through column-major cuBLAS by computing C^T = op(B)^T op(A)^T.
#include "cuda_ops.hpp"

#include <cublas_v2.h>

#include <algorithm>

#include <cmath>
#include <cstdlib>
#include <mutex>
#include <unordered_map>
#include <vector>
#include <stdexcept>
#include <string>

#include "cuda_check.hpp"
#include "cuda_codec.hpp"
#include "cuda_kernels.hpp"
#include "cuda_layers.hpp"

namespace ddplab {
namespace {

class CudaOps final : public Ops {
 public:
  explicit CudaOps(const CudaOpsOptions& o) : device_(o.device >= 0 ? o.device : local_device()) {
    cudaCheck(cudaSetDevice(device_));
    cudaCheck(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    cublasCheck(cublasCreate(&blas_));
    cublasCheck(cublasSetStream(blas_, stream_));
    // Pure fp32 unless asked: CUBLAS_DEFAULT_MATH never down-converts fp32 inputs.
    cublasCheck(cublasSetMathMode(blas_, o.tf32 ? CUBLAS_TF32_TENSOR_OP_MATH : CUBLAS_DEFAULT_MATH));
    cudaCheck(cudaStreamCreateWithFlags(&copy_stream_, cudaStreamNonBlocking));
    cudaCheck(cudaEventCreateWithFlags(&copied_, cudaEventDisableTiming));
    cudaCheck(cudaEventCreateWithFlags(&consumed_, cudaEventDisableTiming));
    cudaCheck(cudaMallocHost(reinterpret_cast<void**>(&host_loss_), 3 * sizeof(double)));
    cudaCheck(cudaMalloc(reinterpret_cast<void**>(&loss_out_), 3 * sizeof(double)));
    tf32_ = o.tf32;
  }
  ~CudaOps() override {
    // No throwing from a destructor: errors here would only mask the one that is unwinding.
    cudaSetDevice(device_);
    codec_.reset();  // queues its frees on stream_, so before the stream goes
    cudaStreamSynchronize(stream_);
    cudaFree(row_loss_);
    cudaFree(loss_out_);
    cudaFreeHost(host_loss_);
    cudaStreamSynchronize(copy_stream_);
    for (cudaEvent_t e : marks_) cudaEventDestroy(e);
    cudaEventDestroy(copied_);
    cudaEventDestroy(consumed_);
    cudaStreamDestroy(copy_stream_);
    cublasDestroy(blas_);
    cudaStreamDestroy(stream_);
  }
  std::string name() const override { return tf32_ ? "cuda-tf32" : "cuda"; }
  cudaStream_t stream() const { return stream_; }

  float* alloc(std::size_t n) override { return static_cast<float*>(zeroed(n * sizeof(float))); }
  void free(float* p) override { release(p); }
  std::int32_t* alloc_labels(std::size_t n) override {
    return static_cast<std::int32_t*>(zeroed(n * sizeof(std::int32_t)));
  }
  void free_labels(std::int32_t* p) override { release(p); }
  // A pageable source is staged by the driver before cudaMemcpyAsync returns, so the caller may reuse it.
  void to_device(float* dst, const float* host, std::size_t n) override {
    cudaCheck(cudaMemcpyAsync(dst, host, n * sizeof(float), cudaMemcpyDefault, stream_));
  }
  void to_host(float* host, const float* src, std::size_t n) override {
    cudaCheck(cudaMemcpyAsync(host, src, n * sizeof(float), cudaMemcpyDefault, stream_));
    synchronize();
  }
  void labels_to_device(std::int32_t* dst, const std::int32_t* host, std::size_t n) override {
    cudaCheck(cudaMemcpyAsync(dst, host, n * sizeof(std::int32_t), cudaMemcpyDefault, stream_));
  }
  void synchronize() override { cudaCheck(cudaStreamSynchronize(stream_)); }
  CodecCompute& codec_compute() override {
    if (!codec_) codec_ = cuda::make_codec_compute(device_, stream_);
    return *codec_;
  }
  bool device_memory() const override { return true; }
  void* alloc_host(std::size_t bytes) override {
    void* p = nullptr;
    cudaCheck(cudaMallocHost(&p, bytes == 0 ? 1 : bytes));
    return p;
  }
  void free_host(void* p) override {
    if (p) cudaCheck(cudaFreeHost(p));
  }
  // What alloc()/alloc_labels() held at most, plus the high-water mark of the device's default memory pool,
  // where the codecs' cudaMallocAsync buffers live. The two peaks may fall at different times: an upper bound.
  std::size_t peak_device_bytes() const override {
    std::size_t pool_high = 0;
    cudaMemPool_t pool = nullptr;
    if (cudaDeviceGetDefaultMemPool(&pool, device_) == cudaSuccess) {
      std::uint64_t high = 0;
      if (cudaMemPoolGetAttribute(pool, cudaMemPoolAttrUsedMemHigh, &high) == cudaSuccess) pool_high = high;
    }
    cudaGetLastError();  // a failed query only leaves the pool out
    std::lock_guard<std::mutex> lock(mu_);
    return peak_ + pool_high;
  }
  int device() const { return device_; }
  void prefetch(void* dst, const void* host, std::size_t bytes) override {
    // `dst` is a slot that compute queued earlier may still read (a bare loop does not synchronize
    // between steps): the copy waits for that compute, and overlaps only what is queued after it.
    cudaCheck(cudaEventRecord(consumed_, stream_));
    cudaCheck(cudaStreamWaitEvent(copy_stream_, consumed_, 0));
    cudaCheck(cudaMemcpyAsync(dst, host, bytes, cudaMemcpyHostToDevice, copy_stream_));
    cudaCheck(cudaEventRecord(copied_, copy_stream_));
  }
  void wait_prefetch() override { cudaCheck(cudaStreamWaitEvent(stream_, copied_, 0)); }
  void bind_thread() override { cudaCheck(cudaSetDevice(device_)); }
  int mark() override {
    if (marks_used_ == marks_.size()) {
      cudaEvent_t e = nullptr;
      cudaCheck(cudaEventCreate(&e));  // with timing
      marks_.push_back(e);
    }
    cudaCheck(cudaEventRecord(marks_[marks_used_], stream_));
    return static_cast<int>(marks_used_++);
  }
  double seconds_between(int a, int b) override {
    if (a < 0 || b < 0 || static_cast<std::size_t>(std::max(a, b)) >= marks_used_)
      throw std::out_of_range("seconds_between: no such mark");
    float ms = 0;
    cudaCheck(cudaEventElapsedTime(&ms, marks_[static_cast<std::size_t>(a)], marks_[static_cast<std::size_t>(b)]));
    return ms * 1e-3;
  }
  void reset_marks() override { marks_used_ = 0; }

  void gemm(bool ta, bool tb, int m, int n, int k, float alpha, const float* a, int lda, const float* b, int ldb,
            float beta, float* c, int ldc) override {
    cublasCheck(cublasSgemm(blas_, tb ? CUBLAS_OP_T : CUBLAS_OP_N, ta ? CUBLAS_OP_T : CUBLAS_OP_N, n, m, k, &alpha, b,
                            ldb, a, lda, &beta, c, ldc));
  }
  void add_bias(float* y, const float* bias, int rows, int cols) override {
    cuda::add_bias(y, bias, rows, cols, stream_);
  }
  void bias_grad(const float* dy, float* db, int rows, int cols, bool accumulate) override {
    cuda::bias_grad(dy, db, rows, cols, accumulate, stream_);
  }
  void relu(float* y, std::size_t n) override { cuda::relu(y, n, stream_); }
  void relu_backward(float* dx, const float* y, std::size_t n) override { cuda::relu_backward(dx, y, n, stream_); }
  double softmax_xent(const float* logits, const std::int32_t* labels, int rows, int cols, float* dlogits,
                      const float* class_weights) override {
    if (rows <= 0) return 0.0;
    if (static_cast<std::size_t>(rows) > row_loss_cap_) {
      cudaCheck(cudaFree(row_loss_));
      row_loss_ = nullptr;
      cudaCheck(cudaMalloc(reinterpret_cast<void**>(&row_loss_), static_cast<std::size_t>(rows) * sizeof(double)));
      row_loss_cap_ = static_cast<std::size_t>(rows);
    }
    cuda::softmax_xent(logits, labels, rows, cols, dlogits, row_loss_, loss_out_, class_weights, stream_);
    cudaCheck(cudaMemcpyAsync(host_loss_, loss_out_, 3 * sizeof(double), cudaMemcpyDeviceToHost, stream_));
    synchronize();
    if (host_loss_[1] > 0)
      throw std::out_of_range("softmax_xent: " + std::to_string(static_cast<long>(host_loss_[1])) +
                              " label(s) outside [0, " + std::to_string(cols) + ")");
    if (!class_weights) return host_loss_[0] / rows;
    if (!(host_loss_[2] > 0)) return std::nan("");  // no weight at all: torch's weighted mean is NaN too
    // Weighted: the gradient waits for the weights' sum, as torch's weighted mean divides by it.
    if (dlogits)
      cuda::scale(dlogits, static_cast<std::size_t>(rows) * cols, static_cast<float>(1.0 / host_loss_[2]), stream_);
    return host_loss_[0] / host_loss_[2];
  }
  void scale(float* x, std::size_t n, float alpha) override { cuda::scale(x, n, alpha, stream_); }
  void im2col(const float* x, float* col, int n, int h, int w, int c, int k) override {
    cuda::im2col(x, col, n, h, w, c, k, stream_);
  }
  void col2im(const float* col, float* dx, int n, int h, int w, int c, int k) override {
    cuda::col2im(col, dx, n, h, w, c, k, stream_);
  }
  void max_pool(const float* x, float* y, int n, int h, int w, int c) override {
    cuda::max_pool(x, y, n, h, w, c, stream_);
  }
  void max_pool_backward(const float* x, const float* y, const float* dy, float* dx, int n, int h, int w,
                         int c) override {
    cuda::max_pool_backward(x, y, dy, dx, n, h, w, c, stream_);
  }
  void channel_moments(const float* x, int rows, int cols, float* out) override {
    cuda::channel_moments(x, rows, cols, out, stream_);
  }
  void batch_norm_statistics(const float* moments, int cols, float* mean, float* var, float* running_mean,
                             float* running_var, float momentum) override {
    cuda::batch_norm_statistics(moments, cols, mean, var, running_mean, running_var, momentum, stream_);
  }
  void batch_norm(const float* x, float* y, int rows, int cols, const float* mean, const float* var, const float* gamma,
                  const float* beta, float eps) override {
    cuda::batch_norm(x, y, rows, cols, mean, var, gamma, beta, eps, stream_);
  }
  void batch_norm_backward_sums(const float* dy, const float* x, int rows, int cols, const float* mean,
                                const float* var, float eps, float* out) override {
    cuda::batch_norm_backward_sums(dy, x, rows, cols, mean, var, eps, out, stream_);
  }
  void batch_norm_backward(const float* dy, const float* x, int rows, int cols, const float* mean, const float* var,
                           const float* gamma, float eps, const float* sums, const float* count, float* dx) override {
    cuda::batch_norm_backward(dy, x, rows, cols, mean, var, gamma, eps, sums, count, dx, stream_);
  }

 private:
  void* zeroed(std::size_t bytes) {
    void* p = nullptr;
    cudaCheck(cudaMalloc(&p, bytes == 0 ? 1 : bytes));
    cudaCheck(cudaMemsetAsync(p, 0, bytes, stream_));
    std::lock_guard<std::mutex> lock(mu_);
    sizes_[p] = bytes;
    live_ += bytes;
    peak_ = std::max(peak_, live_);
    return p;
  }
  void release(void* p) {
    if (!p) return;
    // The stream may still use p; cudaFree waits for the device, which is what we need here.
    cudaCheck(cudaFree(p));
    std::lock_guard<std::mutex> lock(mu_);
    const auto it = sizes_.find(p);
    if (it != sizes_.end()) live_ -= it->second, sizes_.erase(it);
  }

  int device_;
  bool tf32_ = false;
  cudaStream_t stream_ = nullptr;
  cudaStream_t copy_stream_ = nullptr;  // prefetch: the next batch's upload overlaps this step's compute
  cudaEvent_t copied_ = nullptr;
  cudaEvent_t consumed_ = nullptr;  // prefetch: the compute queued before a copy, which may read its slot
  std::vector<cudaEvent_t> marks_;  // mark(): reused each step after reset_marks()
  std::size_t marks_used_ = 0;
  cublasHandle_t blas_ = nullptr;
  std::unique_ptr<CodecCompute> codec_;  // made on first use
  double* row_loss_ = nullptr;
  std::size_t row_loss_cap_ = 0;
  double* loss_out_ = nullptr;
  double* host_loss_ = nullptr;
  // Bytes allocated through alloc()/alloc_labels(), for peak_device_bytes (the comm thread allocates too).
  mutable std::mutex mu_;
  std::unordered_map<void*, std::size_t> sizes_;
  std::size_t live_ = 0, peak_ = 0;
};

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  if (!v || !*v) return fallback;
  try {
    return std::stoi(v);
  } catch (const std::exception&) {
    throw std::runtime_error(std::string(name) + " is not an integer: \"" + v + "\"");
  }
}

}  // namespace

std::string cuda_device_unavailable_reason() {
  int n = 0;
  const cudaError_t e = cudaGetDeviceCount(&n);
  if (e != cudaSuccess) {
    cudaGetLastError();  // clear the sticky-free error so later calls are not blamed for it
    return std::string("no CUDA device visible: cudaGetDeviceCount returned ") + cudaGetErrorName(e);
  }
  if (n == 0) return "no CUDA device visible: cudaGetDeviceCount returned 0";
  return "";
}

int local_device() {
  const std::string why = cuda_device_unavailable_reason();
  if (!why.empty()) throw std::runtime_error(why);
  int n = 0;
  cudaCheck(cudaGetDeviceCount(&n));
  const int local = env_int("OMPI_COMM_WORLD_LOCAL_RANK", env_int("SLURM_LOCALID", 0));
  return local % n;
}

std::unique_ptr<Ops> make_cuda_ops(const CudaOpsOptions& options) { return std::make_unique<CudaOps>(options); }

int cuda_device(Ops& ops) {
  auto* c = dynamic_cast<CudaOps*>(&ops);
  if (!c) throw std::invalid_argument("cuda_device: backend \"" + ops.name() + "\" is not this program's CUDA backend");
  return c->device();
}

cudaStream_t cuda_stream(Ops& ops) {
  auto* c = dynamic_cast<CudaOps*>(&ops);
  // make_ops("cuda") / make_cuda_ops(bool) return the plugin's own CudaOps type, which this cast cannot see.
  if (!c)
    throw std::invalid_argument("cuda_stream: backend \"" + ops.name() +
                                "\" was not made by make_cuda_ops(const CudaOpsOptions&) of this program");
  return c->stream();
}

}  // namespace ddplab
