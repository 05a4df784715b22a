// The CUDA backend's CodecCompute: see cuda_codec.hpp for what matches the host to the bit and why.
#include "cuda_codec.hpp"

#include <cub/cub.cuh>

#include <algorithm>
#include <climits>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "cuda_check.hpp"

namespace ddplab::cuda {
namespace {

constexpr int kThreads = 256;
constexpr int kOrthoThreads = 256;  // a power of two: block_sum halves it

unsigned blocks_for(std::size_t n) {
  return static_cast<unsigned>(std::max<std::size_t>(1, std::min<std::size_t>((n + kThreads - 1) / kThreads, 65535)));
}

#define DDPLAB_GRID_STRIDE(i, n)                                                    \
  for (std::size_t i = blockIdx.x * std::size_t(blockDim.x) + threadIdx.x; i < (n); \
       i += std::size_t(gridDim.x) * blockDim.x)

// ---- strategies/half.hpp's conversions, bit for bit ----

__device__ inline std::uint16_t float_to_f16(float f) {
  const std::uint32_t x = __float_as_uint(f);
  const std::uint16_t sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
  const std::uint32_t exp = (x >> 23) & 0xffu, mant = x & 0x7fffffu;
  if (exp == 0xffu) {
    if (mant == 0) return sign | 0x7c00u;
    return static_cast<std::uint16_t>(sign | 0x7e00u | (mant >> 13));
  }
  const int e = static_cast<int>(exp) - 127 + 15;
  if (e >= 0x1f) return sign | 0x7c00u;
  if (e >= 1) {
    std::uint32_t h = (static_cast<std::uint32_t>(e) << 10) | (mant >> 13);
    const std::uint32_t rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;
    return static_cast<std::uint16_t>(sign | h);
  }
  const int shift = 126 - static_cast<int>(exp);
  if (shift > 25) return sign;
  const std::uint32_t m = mant | 0x800000u;
  std::uint32_t q = m >> shift;
  const std::uint32_t rem = m & ((1u << shift) - 1u), halfway = 1u << (shift - 1);
  if (rem > halfway || (rem == halfway && (q & 1u))) ++q;
  return static_cast<std::uint16_t>(sign | q);
}

__device__ inline float f16_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  if (exp == 0) {  // mant * 2^-24: exact in float
    const float v = __fmul_rn(static_cast<float>(mant), 5.9604644775390625e-8f);
    return sign ? -v : v;
  }
  if (exp == 0x1f) return __uint_as_float(sign | 0x7f800000u | (mant << 13));
  return __uint_as_float(sign | ((exp - 15 + 127) << 23) | (mant << 13));
}

__device__ inline std::uint16_t float_to_bf16(float f) {
  const std::uint32_t x = __float_as_uint(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((x >> 16) | 0x0040u);
  const std::uint32_t bias = 0x7fffu + ((x >> 16) & 1u);
  return static_cast<std::uint16_t>((x + bias) >> 16);
}

__device__ inline float bf16_to_float(std::uint16_t b) { return __uint_as_float(static_cast<std::uint32_t>(b) << 16); }

// ---- element-wise ----

__global__ void fill_k(float* x, std::size_t n, float v) { DDPLAB_GRID_STRIDE(i, n) x[i] = v; }
__global__ void divide_k(float* x, std::size_t n, float w) { DDPLAB_GRID_STRIDE(i, n) x[i] = __fdiv_rn(x[i], w); }
__global__ void add_k(float* x, const float* y, std::size_t n) {
  DDPLAB_GRID_STRIDE(i, n) x[i] = __fadd_rn(x[i], y[i]);
}
__global__ void sub_k(float* out, const float* a, const float* b, std::size_t n) {
  DDPLAB_GRID_STRIDE(i, n) out[i] = __fsub_rn(a[i], b[i]);
}
// The optimizers' primitives, rounded as the host loops round them (no FMA contraction).
__global__ void scale_k(float* x, std::size_t n, float a) { DDPLAB_GRID_STRIDE(i, n) x[i] = __fmul_rn(x[i], a); }
__global__ void axpby_k(float* y, const float* x, std::size_t n, float a, float b) {
  DDPLAB_GRID_STRIDE(i, n) y[i] = b == 0.0f ? __fmul_rn(a, x[i]) : __fadd_rn(__fmul_rn(a, x[i]), __fmul_rn(b, y[i]));
}
__global__ void ema_square_k(float* v, const float* x, std::size_t n, float beta) {
  const float c = __fsub_rn(1.0f, beta);
  DDPLAB_GRID_STRIDE(i, n) v[i] = __fadd_rn(__fmul_rn(beta, v[i]), __fmul_rn(__fmul_rn(c, x[i]), x[i]));
}
__global__ void add_rms_ratio_k(float* y, const float* m, const float* v, std::size_t n, float a, float b,
                                float v_scale, float eps) {
  DDPLAB_GRID_STRIDE(i, n) {
    const float r = __fmul_rn(a, __fdiv_rn(m[i], __fadd_rn(__fdiv_rn(__fsqrt_rn(v[i]), v_scale), eps)));
    y[i] = b == 0.0f ? r : __fadd_rn(r, __fmul_rn(b, y[i]));
  }
}
__global__ void squares_k(const float* x, std::size_t n, double* out) {
  DDPLAB_GRID_STRIDE(i, n) out[i] = __dmul_rn(static_cast<double>(x[i]), static_cast<double>(x[i]));
}

__global__ void to_f16_k(const float* in, std::uint16_t* out, std::size_t n) {
  DDPLAB_GRID_STRIDE(i, n) out[i] = float_to_f16(in[i]);
}
__global__ void to_bf16_k(const float* in, std::uint16_t* out, std::size_t n) {
  DDPLAB_GRID_STRIDE(i, n) out[i] = float_to_bf16(in[i]);
}
__global__ void from_f16_k(const std::uint16_t* in, float* out, std::size_t n) {
  DDPLAB_GRID_STRIDE(i, n) out[i] = f16_to_float(in[i]);
}
__global__ void from_bf16_k(const std::uint16_t* in, float* out, std::size_t n) {
  DDPLAB_GRID_STRIDE(i, n) out[i] = bf16_to_float(in[i]);
}

// ---- top-k ----

// Ascending keys give topk_select's order: NaN first (magnitude key 0), then larger |v| (smaller key),
// then the lower index (the low 32 bits). -0 and +0 have the same magnitude, as std::abs makes them.
__global__ void topk_keys_k(const float* v, std::size_t n, unsigned long long* keys) {
  DDPLAB_GRID_STRIDE(i, n) {
    const std::uint32_t u = __float_as_uint(v[i]) & 0x7fffffffu;
    const std::uint32_t mag = u > 0x7f800000u ? 0u : 0xffffffffu - u;
    keys[i] = (static_cast<unsigned long long>(mag) << 32) | static_cast<unsigned long long>(i);
  }
}
__global__ void low_words_k(const unsigned long long* keys, std::size_t k, std::uint32_t* idx) {
  DDPLAB_GRID_STRIDE(j, k) idx[j] = static_cast<std::uint32_t>(keys[j] & 0xffffffffull);
}
__global__ void gather_pairs_k(const float* v, const std::uint32_t* idx, std::size_t k, IndexValue* out) {
  DDPLAB_GRID_STRIDE(j, k) {
    const std::uint32_t i = idx[j];
    out[j] = IndexValue{i, v[i]};
  }
}
__global__ void zero_at_k(float* x, const IndexValue* pairs, std::size_t count) {
  DDPLAB_GRID_STRIDE(j, count) x[pairs[j].index] = 0.0f;
}
// One group: its indices are distinct, so no two threads touch the same element. `bad` keeps the lowest
// position (base + j) of an index outside [0, n).
__global__ void scatter_group_k(float* dense, std::size_t n, const IndexValue* pairs, std::size_t count,
                                std::size_t base, unsigned long long* bad) {
  DDPLAB_GRID_STRIDE(j, count) {
    const IndexValue p = pairs[j];
    if (p.index >= n) {
      atomicMin(bad, static_cast<unsigned long long>(base + j));
      continue;
    }
    dense[p.index] = __fadd_rn(dense[p.index], p.value);
  }
}

// ---- products in double, in the host loops' order, no FMA (__dmul_rn / __dadd_rn) ----

// p (n x k) = m (n x c) q (c x k): the sum over j ascending, as codec_detail::matmul.
__global__ void matmul_k(const float* m, const float* q, float* p, std::size_t n, std::size_t c, std::size_t k) {
  DDPLAB_GRID_STRIDE(x, n * k) {
    const std::size_t i = x / k, t = x % k;
    const float* row = m + i * c;
    double acc = 0.0;
    for (std::size_t j = 0; j < c; ++j)
      acc = __dadd_rn(acc, __dmul_rn(static_cast<double>(row[j]), static_cast<double>(q[j * k + t])));
    p[x] = static_cast<float>(acc);
  }
}
// q (c x k) = m^T p: the sum over i ascending, as codec_detail::matmul_tn.
__global__ void matmul_tn_k(const float* m, const float* p, float* q, std::size_t n, std::size_t c, std::size_t k) {
  DDPLAB_GRID_STRIDE(x, c * k) {
    const std::size_t j = x / k, t = x % k;
    double acc = 0.0;
    for (std::size_t i = 0; i < n; ++i)
      acc = __dadd_rn(acc, __dmul_rn(static_cast<double>(m[i * c + j]), static_cast<double>(p[i * k + t])));
    q[x] = static_cast<float>(acc);
  }
}
// m (n x c) = p q^T: the sum over t ascending, as codec_detail::matmul_nt.
__global__ void matmul_nt_k(const float* p, const float* q, float* m, std::size_t n, std::size_t c, std::size_t k) {
  DDPLAB_GRID_STRIDE(x, n * c) {
    const std::size_t i = x / c, j = x % c;
    double s = 0.0;
    for (std::size_t t = 0; t < k; ++t)
      s = __dadd_rn(s, __dmul_rn(static_cast<double>(p[i * k + t]), static_cast<double>(q[j * k + t])));
    m[x] = static_cast<float>(s);
  }
}

// Sum over the block in a fixed tree order (deterministic); every thread gets the result.
__device__ double block_sum(double v, double* sh) {
  sh[threadIdx.x] = v;
  __syncthreads();
  for (int s = kOrthoThreads / 2; s > 0; s >>= 1) {
    if (static_cast<int>(threadIdx.x) < s) sh[threadIdx.x] = __dadd_rn(sh[threadIdx.x], sh[threadIdx.x + s]);
    __syncthreads();
  }
  const double r = sh[0];
  __syncthreads();
  return r;
}

// codec_detail::orthogonalize on one block: Gram-Schmidt over the k columns of a (n x k) in double (w,
// n * k doubles of scratch), two projection passes, then col /= (|col| + epsilon), a zero column kept zero.
__global__ void orthogonalize_k(float* a, double* w, std::size_t n, std::size_t k, double epsilon) {
  __shared__ double sh[kOrthoThreads];
  const std::size_t tid = threadIdx.x, stride = kOrthoThreads;
  for (std::size_t x = tid; x < n * k; x += stride) w[x] = static_cast<double>(a[x]);
  __syncthreads();
  for (std::size_t i = 0; i < k; ++i) {
    for (int pass = 0; pass < 2; ++pass)
      for (std::size_t j = 0; j < i; ++j) {
        double part = 0.0;
        for (std::size_t r = tid; r < n; r += stride) part = __dadd_rn(part, __dmul_rn(w[r * k + j], w[r * k + i]));
        const double dot = block_sum(part, sh);
        // Each thread updates the rows it read, so the only hazard is the reduction, which block_sum fences.
        for (std::size_t r = tid; r < n; r += stride)
          w[r * k + i] = __dsub_rn(w[r * k + i], __dmul_rn(dot, w[r * k + j]));
        __syncthreads();
      }
    double part = 0.0;
    for (std::size_t r = tid; r < n; r += stride) part = __dadd_rn(part, __dmul_rn(w[r * k + i], w[r * k + i]));
    const double denom = __dadd_rn(sqrt(block_sum(part, sh)), epsilon);
    for (std::size_t r = tid; r < n; r += stride) w[r * k + i] = denom > 0.0 ? __ddiv_rn(w[r * k + i], denom) : 0.0;
    __syncthreads();
  }
  for (std::size_t x = tid; x < n * k; x += stride) a[x] = static_cast<float>(w[x]);
}

std::size_t align_up(std::size_t bytes) { return (bytes + 255) / 256 * 256; }

class CudaCodecCompute final : public CodecCompute {
 public:
  CudaCodecCompute(int device, cudaStream_t stream) : device_(device), stream_(stream) {
    // Codecs allocate their wire buffers every step: let the pool keep freed memory instead of handing
    // it back to the driver at each synchronisation.
    cudaMemPool_t pool = nullptr;
    cudaCheck(cudaDeviceGetDefaultMemPool(&pool, device_));
    std::uint64_t keep = UINT64_MAX;
    cudaCheck(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &keep));
    cudaCheck(cudaMallocAsync(reinterpret_cast<void**>(&bad_), sizeof(unsigned long long), stream_));
  }
  ~CudaCodecCompute() override {
    // No throwing from a destructor; the stream outlives this object (CudaOps destroys it later).
    cudaSetDevice(device_);
    if (bad_) cudaFreeAsync(bad_, stream_);
    scratch_.release(stream_);
    norm_scratch_.release(stream_);
    cudaStreamSynchronize(stream_);
  }
  std::string name() const override { return "cuda"; }

  void* alloc(std::size_t bytes) override {
    void* p = nullptr;
    cudaCheck(cudaMallocAsync(&p, std::max<std::size_t>(bytes, 16), stream_));
    cudaCheck(cudaMemsetAsync(p, 0, std::max<std::size_t>(bytes, 16), stream_));
    return p;
  }
  void free(void* p) override {
    if (p) cudaCheck(cudaFreeAsync(p, stream_));
  }
  void upload(void* dst, const void* host, std::size_t bytes) override {
    if (!bytes) return;
    cudaCheck(cudaMemcpyAsync(dst, host, bytes, cudaMemcpyHostToDevice, stream_));
    cudaCheck(cudaStreamSynchronize(stream_));  // the caller may reuse host at once, pinned or not
  }
  void download(void* host, const void* src, std::size_t bytes) override {
    if (!bytes) return;
    cudaCheck(cudaMemcpyAsync(host, src, bytes, cudaMemcpyDeviceToHost, stream_));
    cudaCheck(cudaStreamSynchronize(stream_));
  }
  void copy(void* dst, const void* src, std::size_t bytes) override {
    if (bytes) cudaCheck(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_));
  }

  void fill(float* x, std::size_t n, float value) override {
    if (n) fill_k<<<blocks_for(n), kThreads, 0, stream_>>>(x, n, value);
    launched();
  }
  void divide(float* x, std::size_t n, float w) override {
    if (n) divide_k<<<blocks_for(n), kThreads, 0, stream_>>>(x, n, w);
    launched();
  }
  void add(float* x, const float* y, std::size_t n) override {
    if (n) add_k<<<blocks_for(n), kThreads, 0, stream_>>>(x, y, n);
    launched();
  }
  void sub(float* out, const float* a, const float* b, std::size_t n) override {
    if (n) sub_k<<<blocks_for(n), kThreads, 0, stream_>>>(out, a, b, n);
    launched();
  }

  void scale(float* x, std::size_t n, float a) override {
    if (n) scale_k<<<blocks_for(n), kThreads, 0, stream_>>>(x, n, a);
    launched();
  }
  void axpby(float* y, const float* x, std::size_t n, float a, float b) override {
    if (n) axpby_k<<<blocks_for(n), kThreads, 0, stream_>>>(y, x, n, a, b);
    launched();
  }
  void ema_square(float* v, const float* x, std::size_t n, float beta) override {
    if (n) ema_square_k<<<blocks_for(n), kThreads, 0, stream_>>>(v, x, n, beta);
    launched();
  }
  void add_rms_ratio(float* y, const float* m, const float* v, std::size_t n, float a, float b, float v_scale,
                     float eps) override {
    if (n) add_rms_ratio_k<<<blocks_for(n), kThreads, 0, stream_>>>(y, m, v, n, a, b, v_scale, eps);
    launched();
  }
  double sum_squares(const float* x, std::size_t n) override {
    if (!n) return 0;
    // Squares in double, then CUB's sum (a tree: equal to the host's ordered sum to double rounding).
    if (n > INT_MAX) throw std::invalid_argument("sum_squares: more than 2^31 - 1 elements");
    std::size_t temp = 0;
    cudaCheck(cub::DeviceReduce::Sum(nullptr, temp, static_cast<const double*>(nullptr), static_cast<double*>(nullptr),
                                     static_cast<int>(n), stream_));
    const std::size_t sq_bytes = align_up(n * sizeof(double)), out_bytes = align_up(sizeof(double));
    char* s = static_cast<char*>(norm_scratch_.get(sq_bytes + out_bytes + align_up(temp), stream_));
    auto* squares = reinterpret_cast<double*>(s);
    auto* sum = reinterpret_cast<double*>(s + sq_bytes);
    squares_k<<<blocks_for(n), kThreads, 0, stream_>>>(x, n, squares);
    launched();
    cudaCheck(cub::DeviceReduce::Sum(s + sq_bytes + out_bytes, temp, squares, sum, static_cast<int>(n), stream_));
    double out = 0;
    download(&out, sum, sizeof out);
    return out;
  }

  void to_half(ElemType type, const float* in, std::uint16_t* out, std::size_t n) override {
    require_half(type);
    if (!n) return;
    if (type == ElemType::F16)
      to_f16_k<<<blocks_for(n), kThreads, 0, stream_>>>(in, out, n);
    else
      to_bf16_k<<<blocks_for(n), kThreads, 0, stream_>>>(in, out, n);
    launched();
  }
  void from_half(ElemType type, const std::uint16_t* in, float* out, std::size_t n) override {
    require_half(type);
    if (!n) return;
    if (type == ElemType::F16)
      from_f16_k<<<blocks_for(n), kThreads, 0, stream_>>>(in, out, n);
    else
      from_bf16_k<<<blocks_for(n), kThreads, 0, stream_>>>(in, out, n);
    launched();
  }

  void topk(const float* v, std::size_t n, std::size_t k, IndexValue* out) override {
    if (n > UINT_MAX) throw std::invalid_argument("topk: bucket too large for 32-bit indices");
    k = std::min(k, n);
    if (k == 0) return;
    const auto n32 = static_cast<std::uint32_t>(n), k32 = static_cast<std::uint32_t>(k);
    // Scratch: keys in, keys sorted, the k indices, them sorted, CUB's temporary storage.
    std::size_t temp_keys = 0, temp_idx = 0;
    cudaCheck(cub::DeviceRadixSort::SortKeys(nullptr, temp_keys, static_cast<const unsigned long long*>(nullptr),
                                             static_cast<unsigned long long*>(nullptr), n32, 0, 64, stream_));
    cudaCheck(cub::DeviceRadixSort::SortKeys(nullptr, temp_idx, static_cast<const std::uint32_t*>(nullptr),
                                             static_cast<std::uint32_t*>(nullptr), k32, 0, 32, stream_));
    const std::size_t keys_bytes = align_up(n * sizeof(unsigned long long)),
                      idx_bytes = align_up(k * sizeof(std::uint32_t));
    const std::size_t temp_bytes = align_up(std::max(temp_keys, temp_idx));
    char* s = static_cast<char*>(scratch(2 * keys_bytes + 2 * idx_bytes + temp_bytes));
    auto* keys_in = reinterpret_cast<unsigned long long*>(s);
    auto* keys_out = reinterpret_cast<unsigned long long*>(s + keys_bytes);
    auto* idx = reinterpret_cast<std::uint32_t*>(s + 2 * keys_bytes);
    auto* idx_sorted = reinterpret_cast<std::uint32_t*>(s + 2 * keys_bytes + idx_bytes);
    void* temp = s + 2 * keys_bytes + 2 * idx_bytes;

    topk_keys_k<<<blocks_for(n), kThreads, 0, stream_>>>(v, n, keys_in);
    launched();
    std::size_t tb = temp_keys;
    cudaCheck(cub::DeviceRadixSort::SortKeys(temp, tb, keys_in, keys_out, n32, 0, 64, stream_));
    low_words_k<<<blocks_for(k), kThreads, 0, stream_>>>(keys_out, k, idx);
    launched();
    tb = temp_idx;
    cudaCheck(cub::DeviceRadixSort::SortKeys(temp, tb, idx, idx_sorted, k32, 0, 32, stream_));
    gather_pairs_k<<<blocks_for(k), kThreads, 0, stream_>>>(v, idx_sorted, k, out);
    launched();
  }
  void zero_at(float* x, const IndexValue* pairs, std::size_t count) override {
    if (count) zero_at_k<<<blocks_for(count), kThreads, 0, stream_>>>(x, pairs, count);
    launched();
  }
  void scatter_add(float* dense, std::size_t n, const IndexValue* pairs, std::size_t groups,
                   std::size_t per_group) override {
    if (groups == 0 || per_group == 0) return;
    cudaCheck(cudaMemsetAsync(bad_, 0xff, sizeof(unsigned long long), stream_));
    for (std::size_t g = 0; g < groups; ++g) {
      scatter_group_k<<<blocks_for(per_group), kThreads, 0, stream_>>>(dense, n, pairs + g * per_group, per_group,
                                                                       g * per_group, bad_);
      launched();
    }
    unsigned long long bad = 0;
    download(&bad, bad_, sizeof bad);
    if (bad != ULLONG_MAX) {
      IndexValue p{};
      download(&p, pairs + bad, sizeof p);
      throw std::runtime_error("topk: received index " + std::to_string(p.index) + " outside the bucket");
    }
  }

  void matmul(const float* m, const float* q, float* p, std::size_t n, std::size_t c, std::size_t k) override {
    if (n * k != 0) matmul_k<<<blocks_for(n * k), kThreads, 0, stream_>>>(m, q, p, n, c, k);
    launched();
  }
  void matmul_tn(const float* m, const float* p, float* q, std::size_t n, std::size_t c, std::size_t k) override {
    if (c * k != 0) matmul_tn_k<<<blocks_for(c * k), kThreads, 0, stream_>>>(m, p, q, n, c, k);
    launched();
  }
  void matmul_nt(const float* p, const float* q, float* m, std::size_t n, std::size_t c, std::size_t k) override {
    if (n * c != 0) matmul_nt_k<<<blocks_for(n * c), kThreads, 0, stream_>>>(p, q, m, n, c, k);
    launched();
  }
  void orthogonalize(float* a, std::size_t n, std::size_t k, float epsilon) override {
    if (n * k == 0) return;
    auto* w = static_cast<double*>(scratch(n * k * sizeof(double)));
    orthogonalize_k<<<1, kOrthoThreads, 0, stream_>>>(a, w, n, k, static_cast<double>(epsilon));
    launched();
  }

 private:
  static void require_half(ElemType type) {
    if (type != ElemType::F16 && type != ElemType::BF16)
      throw std::invalid_argument("codec compute (cuda): casts are to F16 or BF16 only");
  }
  static void launched() { cudaCheck(cudaGetLastError()); }
  // Grow-only scratch, reused by calls in stream order. Two threads use this compute: the codecs run on
  // the executor's comm thread, the optimizers (sum_squares) on its compute thread, so each has its own.
  struct Scratch {
    void* p = nullptr;
    std::size_t bytes = 0;
    void* get(std::size_t want, cudaStream_t s) {
      if (want > bytes) {
        if (p) cudaCheck(cudaFreeAsync(p, s));
        p = nullptr;
        bytes = 0;
        cudaCheck(cudaMallocAsync(&p, want, s));
        bytes = want;
      }
      return p;
    }
    void release(cudaStream_t s) {
      if (p) cudaFreeAsync(p, s);
      p = nullptr;
    }
  };
  void* scratch(std::size_t bytes) { return scratch_.get(bytes, stream_); }

  int device_;
  cudaStream_t stream_;
  unsigned long long* bad_ = nullptr;
  Scratch scratch_;       // the codecs'
  Scratch norm_scratch_;  // sum_squares' (the optimizers')
};

}  // namespace

std::unique_ptr<CodecCompute> make_codec_compute(int device, cudaStream_t stream) {
  return std::make_unique<CudaCodecCompute>(device, stream);
}

}  // namespace ddplab::cuda
