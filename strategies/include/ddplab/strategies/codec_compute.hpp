// Where a codec or an optimizer does its local work. A codec (codec.hpp) or an optimizer (optimizer.hpp) is
// written once against this interface; the host implementation (host_codec_compute()) runs the loops of
// strategies/src/codecs/ on host memory, and a backend whose gradients live elsewhere (the CUDA backend:
// runtime/cuda/cuda_codec.cu) implements the same calls on its own memory and stream. Every pointer passed
// here belongs to the compute's memory space (host pointers for the host compute, device pointers for the
// CUDA one), except where a name says "host". Calls may be asynchronous (queued on the backend's stream, in
// order); download() returns when the data is on the host. One compute serves an executor's codecs on its
// comm thread and its optimizer on its compute thread at once: an implementation keeps their scratch apart.
//
// Results are specified to the bit where the host code is exact and order-independent: casts (rounding
// of strategies/half.hpp), divide/add/sub (one IEEE operation per element), top-k (one total order) and
// the scatter-add (pairs applied group by group, in order). matmul* and orthogonalize accumulate in double
// on both; a parallel implementation may sum in another order, so they agree to double rounding.
//
// Header-only on purpose: the CUDA plugin (libddplab_cuda.so, linked --no-undefined) implements this
// class without linking ddplab_strategies, so nothing here may need a symbol defined in a .cpp.
#pragma once
#include <cstddef>
#include <cstdint>
#include <string>
#include <utility>

#include "ddplab/strategies/codec.hpp"

namespace ddplab {

// The wire element of ElemType::IndexValue.
struct IndexValue {
  std::uint32_t index;
  float value;
};
static_assert(sizeof(IndexValue) == 8, "IndexValue must be 8 bytes on the wire");

class CodecCompute {
 public:
  virtual ~CodecCompute() = default;
  virtual std::string name() const = 0;  // "host", "cuda"

  // ---- memory (bytes) ----
  virtual void* alloc(std::size_t bytes) = 0;  // zero-filled; never null (a 0-byte request gets a valid pointer)
  virtual void free(void* p) = 0;              // null is fine
  virtual void upload(void* dst, const void* host, std::size_t bytes) = 0;    // host may be reused on return
  virtual void download(void* host, const void* src, std::size_t bytes) = 0;  // complete on return
  virtual void copy(void* dst, const void* src, std::size_t bytes) = 0;       // within this memory; no overlap
  // The compute whose memory alloc() hands out, which frees it: this one, or a decorator's inner compute
  // (a straggler's slowed compute lives only as long as its executor; the codec's buffers outlive it).
  virtual CodecCompute& owner() { return *this; }

  // ---- element-wise float32 ----
  virtual void fill(float* x, std::size_t n, float value) = 0;
  virtual void divide(float* x, std::size_t n, float w) = 0;                        // x[i] /= w
  virtual void add(float* x, const float* y, std::size_t n) = 0;                    // x[i] += y[i]
  virtual void sub(float* out, const float* a, const float* b, std::size_t n) = 0;  // out[i] = a[i] - b[i]

  // ---- element-wise float32 for optimizers (each a float expression in the order written) ----
  virtual void scale(float* x, std::size_t n, float a) = 0;  // x[i] *= a
  // y[i] = a * x[i] + b * y[i]; with b == 0, y[i] = a * x[i] (y is not read, so it may hold anything).
  virtual void axpby(float* y, const float* x, std::size_t n, float a, float b) = 0;
  virtual void ema_square(float* v, const float* x, std::size_t n,
                          float beta) = 0;  // v[i] = beta*v[i] + (1-beta)*x[i]*x[i]
  // y[i] = a * (m[i] / (sqrt(v[i]) / v_scale + eps)) + b * y[i]; b == 0 as in axpby. Adam's and RMSprop's step.
  virtual void add_rms_ratio(float* y, const float* m, const float* v, std::size_t n, float a, float b, float v_scale,
                             float eps) = 0;
  // Sum of x[i]^2 in double, returned to the host (complete on return). The host sums in index order; a
  // parallel implementation agrees to double rounding.
  virtual double sum_squares(const float* x, std::size_t n) = 0;

  // ---- half-precision casts (type F16 or BF16; strategies/half.hpp's rounding) ----
  virtual void to_half(ElemType type, const float* in, std::uint16_t* out, std::size_t n) = 0;
  virtual void from_half(ElemType type, const std::uint16_t* in, float* out, std::size_t n) = 0;

  // ---- top-k ----
  // The k entries of v of largest |v| (NaN counts as largest; ties go to the lower index) as pairs
  // {index, v[index]}, ascending by index, into out (k pairs). k <= n < 2^32.
  virtual void topk(const float* v, std::size_t n, std::size_t k, IndexValue* out) = 0;
  // x[pairs[j].index] = 0 for j < count (indices < n, distinct).
  virtual void zero_at(float* x, const IndexValue* pairs, std::size_t count) = 0;
  // For g = 0 .. groups-1, for j = 0 .. per_group-1: dense[p.index] += p.value, p = pairs[g * per_group + j].
  // Each group's indices are distinct, so the sum at every index runs in group (rank) order. Throws
  // RunFault naming the index when one is >= n (dense is then unspecified).
  virtual void scatter_add(float* dense, std::size_t n, const IndexValue* pairs, std::size_t groups,
                           std::size_t per_group) = 0;

  // ---- small dense linear algebra on row-major float matrices, accumulating in double ----
  // p (n x k) = m (n x c) * q (c x k)
  virtual void matmul(const float* m, const float* q, float* p, std::size_t n, std::size_t c, std::size_t k) = 0;
  // q (c x k) = m^T * p, m being n x c and p n x k
  virtual void matmul_tn(const float* m, const float* p, float* q, std::size_t n, std::size_t c, std::size_t k) = 0;
  // m (n x c) = p (n x k) * q^T, q being c x k
  virtual void matmul_nt(const float* p, const float* q, float* m, std::size_t n, std::size_t c, std::size_t k) = 0;
  // Gram-Schmidt on the k columns of a (n x k), as codec_detail::orthogonalize (strategies/src/codecs/lowrank.cpp).
  virtual void orthogonalize(float* a, std::size_t n, std::size_t k, float epsilon) = 0;
};

// The host implementation: the codecs' own loops on host memory. Stateless, so safe from any thread.
CodecCompute& host_codec_compute();

// A buffer in a compute's memory, freed with it. Move-only; empty by default.
class CodecBuffer {
 public:
  CodecBuffer() = default;
  CodecBuffer(CodecCompute& c, std::size_t bytes) : c_(&c.owner()), p_(c.alloc(bytes)), bytes_(bytes) {}
  CodecBuffer(CodecBuffer&& o) noexcept { *this = std::move(o); }
  CodecBuffer& operator=(CodecBuffer&& o) noexcept {
    if (this != &o) {
      reset();
      c_ = o.c_, p_ = o.p_, bytes_ = o.bytes_;
      o.c_ = nullptr, o.p_ = nullptr, o.bytes_ = 0;
    }
    return *this;
  }
  CodecBuffer(const CodecBuffer&) = delete;
  CodecBuffer& operator=(const CodecBuffer&) = delete;
  ~CodecBuffer() { reset(); }

  void reset() {
    if (p_) c_->free(p_);
    c_ = nullptr, p_ = nullptr, bytes_ = 0;
  }
  bool empty() const { return p_ == nullptr; }
  std::size_t bytes() const { return bytes_; }
  CodecCompute* compute() const { return c_; }
  void* get() const { return p_; }
  template <class T>
  T* as() const {
    return static_cast<T*>(p_);
  }

 private:
  CodecCompute* c_ = nullptr;
  void* p_ = nullptr;
  std::size_t bytes_ = 0;
};

}  // namespace ddplab
