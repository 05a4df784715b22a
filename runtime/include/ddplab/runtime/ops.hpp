// The compute interface the model and trainer are written against. The CPU backend implements it on
// OpenBLAS; a CUDA backend implements the same calls on cuBLAS and kernels, so model and trainer code
// never change. All pointers are device pointers of the backend; matrices are row-major.
#pragma once
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <stdexcept>
#include <string>

#include "ddplab/core/choices.hpp"

namespace ddplab {

class CodecCompute;        // ddplab/strategies/codec_compute.hpp
class TransformerKernels;  // transformer_kernels.hpp

// The CUDA plugin implements this class across dlopen: bump DDPLAB_CUDA_PLUGIN_ABI
// (runtime/cuda/cuda_plugin.hpp) when its virtual functions change.
class Ops {
 public:
  virtual ~Ops() = default;
  virtual std::string name() const = 0;

  // Memory.
  virtual float* alloc(std::size_t n) = 0;  // zero-initialised
  virtual void free(float* p) = 0;
  virtual std::int32_t* alloc_labels(std::size_t n) = 0;
  virtual void free_labels(std::int32_t* p) = 0;
  virtual void to_device(float* dst, const float* host, std::size_t n) = 0;
  virtual void to_host(float* host, const float* src, std::size_t n) = 0;
  virtual void labels_to_device(std::int32_t* dst, const std::int32_t* host, std::size_t n) = 0;
  virtual void synchronize() = 0;  // wait until queued work is done (timing boundaries)

  // C = alpha * op(A) * op(B) + beta * C, with op(A) M x K, op(B) K x N.
  virtual void gemm(bool trans_a, bool trans_b, int m, int n, int k, float alpha, const float* a, int lda,
                    const float* b, int ldb, float beta, float* c, int ldc) = 0;
  virtual void add_bias(float* y, const float* bias, int rows, int cols) = 0;  // y[i,:] += bias
  // db = sum_i dy[i,:], or db += that with accumulate.
  virtual void bias_grad(const float* dy, float* db, int rows, int cols, bool accumulate = false) = 0;
  virtual void relu(float* y, std::size_t n) = 0;                            // in place
  virtual void relu_backward(float* dx, const float* y, std::size_t n) = 0;  // dx *= (y > 0)
  // Mean softmax cross-entropy over `rows`; writes d(loss)/d(logits) into dlogits when non-null. With
  // class_weights (cols floats in this backend's memory), torch's CrossEntropyLoss(weight): the mean
  // weighted by each row's class weight, sum_i w[y_i] l_i / sum_i w[y_i], and its gradient.
  virtual double softmax_xent(const float* logits, const std::int32_t* labels, int rows, int cols, float* dlogits,
                              const float* class_weights = nullptr) = 0;
  virtual void scale(float* x, std::size_t n, float alpha) = 0;  // x *= alpha

  // Convolution, pooling and batch normalisation on NHWC images (n x h x w x c; rows are pixels).
  // im2col: col is (n*h*w) x (c*k*k), row (i, y, x) holding the k x k window around pixel (y, x) of image i
  // with zero padding k/2, columns in (channel, ky, kx) order (PyTorch's weight order). col2im: dx = the
  // sum of every window's entry at each pixel (the adjoint: dx is overwritten).
  virtual void im2col(const float* x, float* col, int n, int h, int w, int c, int k) = 0;
  virtual void col2im(const float* col, float* dx, int n, int h, int w, int c, int k) = 0;
  // 2 x 2 max-pool, stride 2 (h, w even): y is n x h/2 x w/2 x c. The backward routes dy to the first
  // maximum of each window in (y, x) order (as PyTorch's CPU kernel) and zero elsewhere (dx overwritten).
  virtual void max_pool(const float* x, float* y, int n, int h, int w, int c) = 0;
  virtual void max_pool_backward(const float* x, const float* y, const float* dy, float* dx, int n, int h, int w,
                                 int c) = 0;
  // Per-channel moments of rows x cols: out[j] = sum_i x[i,j], out[cols+j] = sum_i x[i,j]^2, out[2 cols] =
  // rows (2 cols + 1 floats: what SyncBatchNorm sums over ranks).
  virtual void channel_moments(const float* x, int rows, int cols, float* out) = 0;
  // From summed moments: mean and biased variance per channel; with running_mean (not null) the running
  // statistics move by momentum, the variance unbiased (PyTorch's BatchNorm).
  virtual void batch_norm_statistics(const float* moments, int cols, float* mean, float* var, float* running_mean,
                                     float* running_var, float momentum) = 0;
  // y = gamma (x - mean) / sqrt(var + eps) + beta, per column.
  virtual void batch_norm(const float* x, float* y, int rows, int cols, const float* mean, const float* var,
                          const float* gamma, const float* beta, float eps) = 0;
  // out[j] = sum_i dy[i,j], out[cols+j] = sum_i dy[i,j] xhat[i,j] (the gradients of beta and gamma).
  virtual void batch_norm_backward_sums(const float* dy, const float* x, int rows, int cols, const float* mean,
                                        const float* var, float eps, float* out) = 0;
  // dx = gamma / sqrt(var + eps) (dy - sums[j] / count - xhat sums[cols+j] / count), with count = *count:
  // the rows the statistics were taken over (all ranks' under SyncBatchNorm).
  virtual void batch_norm_backward(const float* dy, const float* x, int rows, int cols, const float* mean,
                                   const float* var, const float* gamma, float eps, const float* sums,
                                   const float* count, float* dx) = 0;

  // True when alloc() returns memory the host cannot read (the CUDA backend). A host-memory communicator
  // (MPI) then needs the buffers staged through host memory.
  virtual bool device_memory() const { return false; }
  // Host memory for transfers: page-locked on CUDA, so to_device() from it is truly asynchronous.
  // (Inline: Ops must keep no key function, or the CUDA plugin would need the runtime's vtable.)
  virtual void* alloc_host(std::size_t bytes) { return ::operator new(bytes); }
  virtual void free_host(void* p) { ::operator delete(p); }
  // Copies the next batch (from alloc_host memory) to the device on a copy stream, so that it overlaps the
  // step running now; wait_prefetch() orders the compute queued after it behind the copies. A copy starts
  // only after the compute queued before it, which may still read `dst`. The host buffer must stay
  // untouched until a later wait_prefetch() and the step after it completed. It may be called from
  // another thread than the compute's (after bind_thread()), but not concurrently with wait_prefetch().
  virtual void prefetch(void* dst, const void* host, std::size_t bytes) {
    if (dst != host) std::memcpy(dst, host, bytes);
  }
  virtual void wait_prefetch() {}
  // Makes the calling thread's device calls go to this backend's device (CUDA's current device is per
  // thread, and a rank's device need not be device 0). Threads other than the creator call it first.
  virtual void bind_thread() {}
  // Device timing (CUDA events). mark() records a timestamp behind the work queued so far and returns its
  // id; seconds_between(a, b) is the device time from mark a to mark b, valid once synchronize() returned;
  // reset_marks() lets ids be reused (once per step). Host backends run ops synchronously, so their callers
  // time with the host clock: mark() returns -1 there.
  virtual int mark() { return -1; }
  virtual double seconds_between(int, int) { return 0; }
  virtual void reset_marks() {}
  // Gives back the memory of p[0, n) (inside one alloc() buffer) whose contents are no longer needed, as
  // ZeRO-2 does with the gradients outside a rank's shard: the backend returns the whole pages inside the
  // range to the system, which read as zero afterwards and are taken again when written. Returns the bytes
  // given back; a backend that cannot (its buffers are whole allocations: CUDA's) returns 0 and says so in
  // can_release().
  virtual bool can_release() const { return false; }
  virtual std::size_t release(float*, std::size_t) { return 0; }
  // High-water mark of the bytes this backend allocated on its device, its codecs' buffers included (0 for
  // host backends).
  virtual std::size_t peak_device_bytes() const { return 0; }
  // Where codecs do their local work on this backend's memory (Codec::run's compute): host_codec_compute()
  // for host backends, kernels on this backend's stream for CUDA. Lives as long as the backend. (Not pure
  // so that wrappers need not forward it, but every backend overrides it; inline, as above, for the plugin.)
  // A GPT's kernels besides the GEMMs (transformer_kernels.hpp), or nullptr where this backend has none.
  virtual TransformerKernels* transformer() { return nullptr; }
  virtual CodecCompute& codec_compute() {
    throw std::logic_error("backend " + name() + " has no codec compute (Ops::codec_compute not overridden)");
  }
};

// "cpu" (OpenBLAS), "reference" (naive loops, no BLAS: the yardstick the CUDA ops are tested against) or
// "cuda" (cuBLAS + kernels, fp32). Throws InputError naming the known backends otherwise, and
// InputError saying why when "cuda" cannot be made ("built without CUDA", "no CUDA device visible").
std::unique_ptr<Ops> make_ops(const std::string& backend);
std::unique_ptr<Ops> make_reference_ops();
// tf32: GEMMs on TF32 tensor cores. Made by the dlopen'ed CUDA plugin (runtime/cuda/cuda_loader.cpp);
// runtime/cuda/cuda_ops.hpp has the static library's make_cuda_ops with device and stream options.
std::unique_ptr<Ops> make_cuda_ops(bool tf32 = false);
// The ops a scenario's backend computes with: OpenBLAS for cpu, cuBLAS (TF32 GEMMs with tf32) otherwise.
std::unique_ptr<Ops> make_ops(Backend backend, bool tf32);
// Empty when make_cuda_ops can succeed here, else the reason it cannot (for skips and error messages).
std::string cuda_unavailable_reason();

// RAII device buffer.
class DeviceBuffer {
 public:
  DeviceBuffer() = default;
  DeviceBuffer(Ops& ops, std::size_t n) : ops_(&ops), p_(ops.alloc(n)), n_(n) {}
  DeviceBuffer(DeviceBuffer&& o) noexcept { *this = std::move(o); }
  DeviceBuffer& operator=(DeviceBuffer&& o) noexcept {
    reset();
    ops_ = o.ops_, p_ = o.p_, n_ = o.n_;
    o.p_ = nullptr, o.n_ = 0;
    return *this;
  }
  ~DeviceBuffer() { reset(); }
  float* data() const { return p_; }
  std::size_t size() const { return n_; }

 private:
  void reset() {
    if (p_) ops_->free(p_);
    p_ = nullptr;
  }
  Ops* ops_ = nullptr;
  float* p_ = nullptr;
  std::size_t n_ = 0;
};

}  // namespace ddplab
