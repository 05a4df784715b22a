// host_codec_compute(): the codecs' local work on host memory, with the loops the codecs always ran (so
// results are bit-identical to those of the codecs before they took a CodecCompute).
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <new>
#include <stdexcept>
#include <string>

#include "codecs/codec_impl.hpp"
#include "ddplab/core/error.hpp"
#include "ddplab/strategies/half.hpp"

namespace ddplab {
namespace {

using namespace codec_detail;

void require_half(ElemType type) {
  if (type != ElemType::F16 && type != ElemType::BF16)
    throw InternalError(std::string("codec compute: cannot cast to ") + elem_name(type) + " (F16 or BF16 only)");
}

class HostCodecCompute final : public CodecCompute {
 public:
  std::string name() const override { return "host"; }

  void* alloc(std::size_t bytes) override {
    void* p = std::calloc(bytes == 0 ? 1 : bytes, 1);
    if (!p) throw std::bad_alloc();
    return p;
  }
  void free(void* p) override { std::free(p); }
  void upload(void* dst, const void* host, std::size_t bytes) override { copy(dst, host, bytes); }
  void download(void* host, const void* src, std::size_t bytes) override { copy(host, src, bytes); }
  void copy(void* dst, const void* src, std::size_t bytes) override {
    if (bytes) std::memcpy(dst, src, bytes);
  }

  void fill(float* x, std::size_t n, float value) override {
    for (std::size_t i = 0; i < n; ++i) x[i] = value;
  }
  void divide(float* x, std::size_t n, float w) override {
    for (std::size_t i = 0; i < n; ++i) x[i] /= w;
  }
  void add(float* x, const float* y, std::size_t n) override {
    for (std::size_t i = 0; i < n; ++i) x[i] += y[i];
  }
  void sub(float* out, const float* a, const float* b, std::size_t n) override {
    for (std::size_t i = 0; i < n; ++i) out[i] = a[i] - b[i];
  }

  void scale(float* x, std::size_t n, float a) override {
    for (std::size_t i = 0; i < n; ++i) x[i] *= a;
  }
  void axpby(float* y, const float* x, std::size_t n, float a, float b) override {
    if (b == 0.0f) {
      for (std::size_t i = 0; i < n; ++i) y[i] = a * x[i];
    } else {
      for (std::size_t i = 0; i < n; ++i) y[i] = a * x[i] + b * y[i];
    }
  }
  void ema_square(float* v, const float* x, std::size_t n, float beta) override {
    const float c = 1.0f - beta;
    for (std::size_t i = 0; i < n; ++i) v[i] = beta * v[i] + c * x[i] * x[i];
  }
  void add_rms_ratio(float* y, const float* m, const float* v, std::size_t n, float a, float b, float v_scale,
                     float eps) override {
    // Two loops, so that each vectorises (with -fno-math-errno, which this file is built with: a sqrt that
    // may set errno cannot).
    if (b == 0.0f) {
      for (std::size_t i = 0; i < n; ++i) y[i] = a * (m[i] / (std::sqrt(v[i]) / v_scale + eps));
    } else {
      for (std::size_t i = 0; i < n; ++i) y[i] = a * (m[i] / (std::sqrt(v[i]) / v_scale + eps)) + b * y[i];
    }
  }
  double sum_squares(const float* x, std::size_t n) override {
    double s = 0;
    for (std::size_t i = 0; i < n; ++i) s += static_cast<double>(x[i]) * static_cast<double>(x[i]);
    return s;
  }

  void to_half(ElemType type, const float* in, std::uint16_t* out, std::size_t n) override {
    require_half(type);
    if (type == ElemType::F16)
      floats_to_f16(in, out, n);
    else
      floats_to_bf16(in, out, n);
  }
  void from_half(ElemType type, const std::uint16_t* in, float* out, std::size_t n) override {
    require_half(type);
    if (type == ElemType::F16)
      f16_to_floats(in, out, n);
    else
      bf16_to_floats(in, out, n);
  }

  void topk(const float* v, std::size_t n, std::size_t k, IndexValue* out) override {
    const std::vector<std::uint32_t> selected = topk_select(v, n, k);
    for (std::size_t j = 0; j < selected.size(); ++j) out[j] = {selected[j], v[selected[j]]};
  }
  void zero_at(float* x, const IndexValue* pairs, std::size_t count) override {
    for (std::size_t j = 0; j < count; ++j) x[pairs[j].index] = 0.0f;
  }
  void scatter_add(float* dense, std::size_t n, const IndexValue* pairs, std::size_t groups,
                   std::size_t per_group) override {
    for (std::size_t j = 0; j < groups * per_group; ++j) {
      const IndexValue& p = pairs[j];
      if (p.index >= n) throw RunFault("topk: received index " + std::to_string(p.index) + " outside the bucket");
      dense[p.index] += p.value;
    }
  }

  void matmul(const float* m, const float* q, float* p, std::size_t n, std::size_t c, std::size_t k) override {
    codec_detail::matmul(m, q, p, n, c, k);
  }
  void matmul_tn(const float* m, const float* p, float* q, std::size_t n, std::size_t c, std::size_t k) override {
    codec_detail::matmul_tn(m, p, q, n, c, k);
  }
  void matmul_nt(const float* p, const float* q, float* m, std::size_t n, std::size_t c, std::size_t k) override {
    codec_detail::matmul_nt(p, q, m, n, c, k);
  }
  void orthogonalize(float* a, std::size_t n, std::size_t k, float epsilon) override {
    codec_detail::orthogonalize(a, n, k, epsilon);
  }
};

}  // namespace

CodecCompute& host_codec_compute() {
  static HostCodecCompute host;
  return host;
}

}  // namespace ddplab
