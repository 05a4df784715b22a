// Codecs do all their local work through the CodecCompute they are given (codec_compute.hpp): a compute
// that forwards to the host one but lives in "its own" memory gives the same bits, holds the codec's
// state, gets every buffer back, and state made by one compute moves to another unchanged.
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <map>
#include <set>

#include "../../strategies/src/codecs/codec_impl.hpp"
#include "ddplab/core/error.hpp"
#include "ddplab/strategies/codec_compute.hpp"

namespace ddplab {
namespace {

// The host compute, with its allocations counted.
class CountingCompute final : public CodecCompute {
 public:
  std::string name() const override { return "counting"; }
  void* alloc(std::size_t bytes) override {
    void* p = h().alloc(bytes);
    live[p] = bytes;
    ++allocs;
    return p;
  }
  void free(void* p) override {
    if (p) {
      EXPECT_EQ(live.erase(p), 1u) << "freed a buffer this compute did not make";
    }
    h().free(p);
  }
  std::size_t live_bytes() const {
    std::size_t sum = 0;
    for (const auto& [p, bytes] : live) sum += bytes;
    return sum;
  }
  void upload(void* d, const void* s, std::size_t b) override { h().upload(d, s, b); }
  void download(void* d, const void* s, std::size_t b) override { h().download(d, s, b); }
  void copy(void* d, const void* s, std::size_t b) override { h().copy(d, s, b); }
  void fill(float* x, std::size_t n, float v) override { h().fill(x, n, v); }
  void divide(float* x, std::size_t n, float w) override { h().divide(x, n, w); }
  void add(float* x, const float* y, std::size_t n) override { h().add(x, y, n); }
  void sub(float* o, const float* a, const float* b, std::size_t n) override { h().sub(o, a, b, n); }
  void scale(float* x, std::size_t n, float a) override { h().scale(x, n, a); }
  void axpby(float* y, const float* x, std::size_t n, float a, float b) override { h().axpby(y, x, n, a, b); }
  void ema_square(float* v, const float* x, std::size_t n, float b) override { h().ema_square(v, x, n, b); }
  void add_rms_ratio(float* y, const float* m, const float* v, std::size_t n, float a, float b, float vs,
                     float e) override {
    h().add_rms_ratio(y, m, v, n, a, b, vs, e);
  }
  double sum_squares(const float* x, std::size_t n) override { return h().sum_squares(x, n); }
  void to_half(ElemType t, const float* in, std::uint16_t* out, std::size_t n) override { h().to_half(t, in, out, n); }
  void from_half(ElemType t, const std::uint16_t* in, float* out, std::size_t n) override {
    h().from_half(t, in, out, n);
  }
  void topk(const float* v, std::size_t n, std::size_t k, IndexValue* out) override { h().topk(v, n, k, out); }
  void zero_at(float* x, const IndexValue* p, std::size_t c) override { h().zero_at(x, p, c); }
  void scatter_add(float* d, std::size_t n, const IndexValue* p, std::size_t g, std::size_t per) override {
    h().scatter_add(d, n, p, g, per);
  }
  void matmul(const float* m, const float* q, float* p, std::size_t n, std::size_t c, std::size_t k) override {
    h().matmul(m, q, p, n, c, k);
  }
  void matmul_tn(const float* m, const float* p, float* q, std::size_t n, std::size_t c, std::size_t k) override {
    h().matmul_tn(m, p, q, n, c, k);
  }
  void matmul_nt(const float* p, const float* q, float* m, std::size_t n, std::size_t c, std::size_t k) override {
    h().matmul_nt(p, q, m, n, c, k);
  }
  void orthogonalize(float* a, std::size_t n, std::size_t k, float eps) override { h().orthogonalize(a, n, k, eps); }

  std::map<void*, std::size_t> live;  // pointer -> bytes
  std::size_t allocs = 0;

 private:
  static CodecCompute& h() { return host_codec_compute(); }
};

BucketLayout bucket() {
  BucketLayout b;
  b.id = 2;
  b.tensors = {{0, 40, 24}, {960, 24, 1}, {984, 16, 9}};
  b.count = 1128;
  return b;
}

std::vector<float> grads(std::uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::vector<float> g(bucket().count);
  for (float& x : g) x = d(rng);
  return g;
}

// One rank: every collective is the identity.
void step(Codec& c, std::vector<float>& g, std::int64_t s, CodecCompute* compute) {
  const CollectiveFn identity = [](const CollectiveCall&, void*) {};
  if (compute)
    c.run(bucket(), g.data(), 1, s, identity, *compute);
  else
    c.run(bucket(), g.data(), 1, s, identity);  // the host convenience
}

const std::vector<std::pair<std::string, CodecOptions>>& configs() {
  static const std::vector<std::pair<std::string, CodecOptions>> all = {
      {"none", {}},
      {"fp16", {}},
      {"bf16", {}},
      {"topk", {{"ratio", "0.1"}}},
      {"powersgd", {{"rank", "2"}, {"start_iter", "1"}}},
      {"powersgd", {{"rank", "3"}, {"start_iter", "0"}, {"warm_start", "false"}}}};
  return all;
}

TEST(CodecCompute, EveryCodecGivesTheHostBitsOnAnotherComputeAndReturnsItsBuffers) {
  for (const auto& [name, options] : configs()) {
    CountingCompute counting;
    {
      auto on_host = make_codec(name, options, 3), on_other = make_codec(name, options, 3);
      for (std::int64_t s = 0; s < 3; ++s) {
        std::vector<float> a = grads(static_cast<std::uint32_t>(s)), b = a;
        step(*on_host, a, s, nullptr);
        step(*on_other, b, s, &counting);
        EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0) << name << " step " << s;
      }
      if (name != "none") {
        EXPECT_GT(counting.allocs, 0u) << name << " did its work elsewhere";
      }
      if (name == "topk" || name == "powersgd") {
        EXPECT_FALSE(counting.live.empty()) << name << " keeps its state there";
      }
    }
    EXPECT_TRUE(counting.live.empty()) << name << " leaked " << counting.live.size() << " buffer(s)";
  }
}

TEST(CodecCompute, StateMadeByOneComputeMovesToAnother) {
  for (const auto& [name, options] : configs()) {
    if (name != "topk" && name != "powersgd") continue;
    CountingCompute first, second;
    auto moved = make_codec(name, options, 5), stays = make_codec(name, options, 5);
    for (std::int64_t s = 0; s < 4; ++s) {
      std::vector<float> a = grads(static_cast<std::uint32_t>(10 + s)), b = a;
      step(*stays, a, s, nullptr);
      step(*moved, b, s, s < 2 ? &first : &second);
      EXPECT_EQ(std::memcmp(a.data(), b.data(), a.size() * sizeof(float)), 0) << name << " step " << s;
    }
    EXPECT_TRUE(first.live.empty()) << name << ": the first compute's state was released";
    if (name == "topk") {
      const auto* want = dynamic_cast<const codec_detail::TopkCodec&>(*stays).residual(2);
      const auto* have = dynamic_cast<const codec_detail::TopkCodec&>(*moved).residual(2);
      ASSERT_NE(want, nullptr);
      ASSERT_NE(have, nullptr);
      EXPECT_EQ(*want, *have);
    } else {
      const auto& want = dynamic_cast<const codec_detail::PowerSgdCodec&>(*stays);
      const auto& have = dynamic_cast<const codec_detail::PowerSgdCodec&>(*moved);
      EXPECT_EQ(*want.residual(2), *have.residual(2));
      if (want.q_memory(2)) {
        EXPECT_EQ(*want.q_memory(2), *have.q_memory(2));
      } else {
        EXPECT_EQ(have.q_memory(2), nullptr);
      }
    }
  }
}

// What a codec keeps between steps is what state_bytes() announces, to the byte: the per-device memory
// model counts it. Every registered codec has a configuration above.
TEST(CodecCompute, StateBytesAreTheBytesACodecKeepsBetweenSteps) {
  for (const CodecInfo& info : codecs()) {
    bool seen = false;
    for (const auto& [name, options] : configs()) {
      if (name != info.name) continue;
      seen = true;
      CountingCompute counting;
      auto codec = make_codec(name, options, 3);
      for (std::int64_t s = 0; s < 3; ++s) {
        std::vector<float> g = grads(static_cast<std::uint32_t>(s));
        step(*codec, g, s, &counting);
        EXPECT_EQ(counting.live_bytes(), codec->state_bytes(bucket(), 1, s)) << name << " step " << s;
      }
    }
    EXPECT_TRUE(seen) << "codec " << info.name << " has no configuration in configs()";
  }
  // With error feedback off, top-k keeps nothing.
  CountingCompute counting;
  auto plain = make_codec("topk", {{"ratio", "0.1"}, {"error_feedback", "false"}}, 3);
  std::vector<float> g = grads(1);
  step(*plain, g, 0, &counting);
  EXPECT_EQ(counting.live_bytes(), 0u);
  EXPECT_EQ(plain->state_bytes(bucket(), 1, 0), 0u);
}

TEST(CodecCompute, HostComputeRejectsCastsToOtherTypes) {
  float f = 1.0f;
  std::uint16_t h = 0;
  EXPECT_THROW(host_codec_compute().to_half(ElemType::F32, &f, &h, 1), ddplab::InternalError);
  EXPECT_THROW(host_codec_compute().from_half(ElemType::IndexValue, &h, &f, 1), ddplab::InternalError);
  const IndexValue outside{7, 1.0f};
  EXPECT_THROW(host_codec_compute().scatter_add(&f, 1, &outside, 1, 1), std::runtime_error);
}

}  // namespace
}  // namespace ddplab
