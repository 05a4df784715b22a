#include "ddplab/runtime/slowdown.hpp"

#include <cmath>
#include <stdexcept>
#include <thread>

#include "ddplab/core/error.hpp"

namespace ddplab {

Slowdown::Slowdown(double factor) : factor_(factor) {
  if (!(factor >= 1) || !std::isfinite(factor))
    throw InputError(
        "a straggler's factor must be at least 1 in a real run (a rank cannot be made faster "
        "than its hardware), got " +
        std::to_string(factor));
}

void Slowdown::stretch(Clock::time_point start) const {
  if (!active()) return;
  const auto took = Clock::now() - start;
  std::this_thread::sleep_for(std::chrono::duration_cast<Clock::duration>(took * (factor_ - 1)));
}

namespace {

class SlowedCodecCompute : public CodecCompute {
 public:
  SlowedCodecCompute(CodecCompute& inner, const Slowdown& s) : in_(inner), s_(s) {}
  std::string name() const override { return in_.name(); }
  void* alloc(std::size_t bytes) override { return in_.alloc(bytes); }
  void free(void* p) override { in_.free(p); }
  void upload(void* dst, const void* host, std::size_t bytes) override { in_.upload(dst, host, bytes); }
  void download(void* host, const void* src, std::size_t bytes) override { in_.download(host, src, bytes); }
  void copy(void* dst, const void* src, std::size_t bytes) override {
    s_.run([&] { in_.copy(dst, src, bytes); });
  }
  CodecCompute& owner() override { return in_.owner(); }
  void fill(float* x, std::size_t n, float v) override {
    s_.run([&] { in_.fill(x, n, v); });
  }
  void divide(float* x, std::size_t n, float w) override {
    s_.run([&] { in_.divide(x, n, w); });
  }
  void add(float* x, const float* y, std::size_t n) override {
    s_.run([&] { in_.add(x, y, n); });
  }
  void sub(float* o, const float* a, const float* b, std::size_t n) override {
    s_.run([&] { in_.sub(o, a, b, n); });
  }
  void scale(float* x, std::size_t n, float a) override {
    s_.run([&] { in_.scale(x, n, a); });
  }
  void axpby(float* y, const float* x, std::size_t n, float a, float b) override {
    s_.run([&] { in_.axpby(y, x, n, a, b); });
  }
  void ema_square(float* v, const float* x, std::size_t n, float beta) override {
    s_.run([&] { in_.ema_square(v, x, n, beta); });
  }
  void add_rms_ratio(float* y, const float* m, const float* v, std::size_t n, float a, float b, float vs,
                     float eps) override {
    s_.run([&] { in_.add_rms_ratio(y, m, v, n, a, b, vs, eps); });
  }
  double sum_squares(const float* x, std::size_t n) override {
    double r = 0;
    s_.run([&] { r = in_.sum_squares(x, n); });
    return r;
  }
  void to_half(ElemType t, const float* in, std::uint16_t* out, std::size_t n) override {
    s_.run([&] { in_.to_half(t, in, out, n); });
  }
  void from_half(ElemType t, const std::uint16_t* in, float* out, std::size_t n) override {
    s_.run([&] { in_.from_half(t, in, out, n); });
  }
  void topk(const float* v, std::size_t n, std::size_t k, IndexValue* out) override {
    s_.run([&] { in_.topk(v, n, k, out); });
  }
  void zero_at(float* x, const IndexValue* p, std::size_t count) override {
    s_.run([&] { in_.zero_at(x, p, count); });
  }
  void scatter_add(float* d, std::size_t n, const IndexValue* p, std::size_t g, std::size_t per) override {
    s_.run([&] { in_.scatter_add(d, n, p, g, per); });
  }
  void matmul(const float* m, const float* q, float* p, std::size_t n, std::size_t c, std::size_t k) override {
    s_.run([&] { in_.matmul(m, q, p, n, c, k); });
  }
  void matmul_tn(const float* m, const float* p, float* q, std::size_t n, std::size_t c, std::size_t k) override {
    s_.run([&] { in_.matmul_tn(m, p, q, n, c, k); });
  }
  void matmul_nt(const float* p, const float* q, float* m, std::size_t n, std::size_t c, std::size_t k) override {
    s_.run([&] { in_.matmul_nt(p, q, m, n, c, k); });
  }
  void orthogonalize(float* a, std::size_t n, std::size_t k, float eps) override {
    s_.run([&] { in_.orthogonalize(a, n, k, eps); });
  }

 private:
  CodecCompute& in_;
  const Slowdown& s_;
};

}  // namespace

std::unique_ptr<CodecCompute> slowed_codec_compute(CodecCompute& inner, const Slowdown& slowdown) {
  return std::make_unique<SlowedCodecCompute>(inner, slowdown);
}

}  // namespace ddplab
