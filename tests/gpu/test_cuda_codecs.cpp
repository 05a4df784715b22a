// Every codec run with the CUDA backend's CodecCompute (Ops::codec_compute(), runtime/cuda/cuda_codec.cu)
// against the same codec on host_codec_compute(), on random buckets, world sizes 1..4 and several steps
// (label gpu). Each simulated rank has its own thread and its own CUDA backend; the collectives are summed
// (or concatenated) on the host in rank order, as the strategies' codec tests do. fp16, bf16, top-k and
// `none` must match the host to the bit, gradients and error-feedback state alike; PowerSGD within a
// tight relative tolerance (its Gram-Schmidt reduces in another order on the device). Without a device
// every test is skipped with the reason.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <condition_variable>
#include <cstring>
#include <limits>
#include <memory>
#include <mutex>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "codec_harness.hpp"
#include "codecs/codec_impl.hpp"
#include "ddplab/runtime/ops.hpp"
#include "ddplab/strategies/codec_compute.hpp"
#include "ddplab/strategies/half.hpp"

namespace ddplab {
namespace {

using codec_detail::PowerSgdCodec;
using codec_detail::TopkCodec;

using testing::Rendezvous;  // tests/strategies/codec_harness.hpp

// One step of one codec per rank, rank r working through computes[r] on its own copy of grads[r].
// Returns every rank's gradients after run(); the collectives are done on the host in rank order.
std::vector<std::vector<float>> run_step(const std::vector<Codec*>& codecs, const std::vector<CodecCompute*>& computes,
                                         const BucketLayout& bucket, std::vector<std::vector<float>> grads,
                                         std::int64_t step) {
  const std::size_t n = codecs.size();
  Rendezvous rv(n);
  std::vector<std::vector<std::byte>> slot(n);
  std::vector<std::string> errors(n);
  auto rank_main = [&](std::size_t rank) {
    CodecCompute& c = *computes[rank];
    try {
      CodecBuffer g(c, bucket.count * sizeof(float));
      c.upload(g.get(), grads[rank].data(), bucket.count * sizeof(float));
      CollectiveFn fn = [&](const CollectiveCall& call, void* buf) {
        const std::size_t own = call.count * elem_bytes(call.type);
        const bool gather = call.collective == ddplab::Collective::AllGather;
        const std::size_t total = gather ? n * own : own;
        std::vector<std::byte> mine(total);
        c.download(mine.data(), buf, total);
        slot[rank].assign(mine.begin() + static_cast<std::ptrdiff_t>(gather ? rank * own : 0),
                          mine.begin() + static_cast<std::ptrdiff_t>(gather ? (rank + 1) * own : own));
        rv.wait();
        std::vector<std::byte> result;
        if (gather) {
          for (std::size_t r = 0; r < n; ++r) result.insert(result.end(), slot[r].begin(), slot[r].end());
        } else {
          result = slot[0];
          for (std::size_t r = 1; r < n; ++r) sum_into(call.type, result.data(), slot[r].data(), call.count);
        }
        rv.wait();  // everyone has read the slots
        c.upload(buf, result.data(), total);
      };
      codecs[rank]->run(bucket, g.as<float>(), static_cast<int>(n), step, fn, c);
      c.download(grads[rank].data(), g.get(), bucket.count * sizeof(float));
    } catch (const Rendezvous::Aborted&) {
      errors[rank] = "aborted by another rank";
    } catch (const std::exception& e) {
      errors[rank] = e.what();
      rv.abort();
    }
  };
  std::vector<std::thread> threads;
  for (std::size_t r = 0; r < n; ++r) threads.emplace_back(rank_main, r);
  for (auto& t : threads) t.join();
  for (std::size_t r = 0; r < n; ++r) EXPECT_EQ(errors[r], "") << "rank " << r << " on " << computes[r]->name();
  return grads;
}

// A bucket of matrices and vectors; the powersgd options below compress the larger matrices only.
BucketLayout random_bucket(std::mt19937& rng, int id) {
  BucketLayout b;
  b.id = id;
  const std::size_t shapes[][2] = {{64, 48}, {48, 1}, {33, 17}, {17, 1}, {3, 5}, {128, 40}, {40, 1}, {1, 7}};
  std::uniform_int_distribution<int> pick(0, 7), count(1, 5);
  const int tensors = count(rng);
  for (int t = 0; t < tensors; ++t) {
    const auto& s = shapes[pick(rng)];
    b.tensors.push_back({b.count, s[0], s[1]});
    b.count += s[0] * s[1];
  }
  return b;
}

// Gradients with the awkward values: ties, signed zeros, f16 subnormals and overflow, huge and tiny.
std::vector<float> random_grads(std::mt19937& rng, std::size_t n) {
  std::vector<float> g(n);
  std::normal_distribution<float> d(0.0f, 1.0f);
  std::uniform_int_distribution<int> kind(0, 19);
  for (float& x : g) {
    switch (kind(rng)) {
      case 0:
        x = 0.0f;
        break;
      case 1:
        x = -0.0f;
        break;
      case 2:
        x = std::round(d(rng) * 2.0f) / 2.0f;
        break;  // ties in |v|
      case 3:
        x = d(rng) * 1e-6f;
        break;  // f16 subnormal range
      case 4:
        x = d(rng) * 1e5f;
        break;  // beyond f16 once summed
      default:
        x = d(rng) * 1e-2f;
        break;
    }
  }
  return g;
}

bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
  return a.size() == b.size() && (a.empty() || std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0);
}

// max |a - b| / max(max |a|, 1e-30)
double rel_diff(const std::vector<float>& a, const std::vector<float>& b) {
  if (a.size() != b.size()) return std::numeric_limits<double>::infinity();
  double diff = 0, scale = 1e-30;
  for (std::size_t i = 0; i < a.size(); ++i) {
    diff = std::max(diff, std::abs(static_cast<double>(a[i]) - b[i]));
    scale = std::max(scale, std::abs(static_cast<double>(a[i])));
  }
  return diff / scale;
}

class CudaCodecs : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string why = cuda_unavailable_reason();
    if (!why.empty()) GTEST_SKIP() << why;
    for (int r = 0; r < 4; ++r) backends.push_back(make_cuda_ops(false));
  }
  std::vector<CodecCompute*> cuda_computes(int world) {
    std::vector<CodecCompute*> c;
    for (int r = 0; r < world; ++r) c.push_back(&backends[static_cast<std::size_t>(r)]->codec_compute());
    return c;
  }
  static std::vector<CodecCompute*> host_computes(int world) {
    return std::vector<CodecCompute*>(static_cast<std::size_t>(world), &host_codec_compute());
  }

  // Runs `name` with `options` on both computes for world sizes 1..4, `steps` steps, two buckets each
  // step; `check(host_codec, cuda_codec, bucket, what)` compares state, `exact` the gradients' bits.
  template <class Check>
  void compare(const std::string& name, const CodecOptions& options, bool exact, double tol, int steps, Check check) {
    std::mt19937 rng(1234);
    for (int world = 1; world <= 4; ++world) {
      std::vector<std::unique_ptr<Codec>> host, cuda;
      std::vector<Codec*> hp, cp;
      for (int r = 0; r < world; ++r) {
        host.push_back(make_codec(name, options, 7));
        cuda.push_back(make_codec(name, options, 7));
        hp.push_back(host.back().get());
        cp.push_back(cuda.back().get());
      }
      const BucketLayout buckets[2] = {random_bucket(rng, 0), random_bucket(rng, 3)};
      for (int step = 0; step < steps; ++step)
        for (const BucketLayout& b : buckets) {
          std::vector<std::vector<float>> g;
          for (int r = 0; r < world; ++r) g.push_back(random_grads(rng, b.count));
          const auto h = run_step(hp, host_computes(world), b, g, step);
          const auto c = run_step(cp, cuda_computes(world), b, g, step);
          for (int r = 0; r < world; ++r) {
            const std::string what = name + " world " + std::to_string(world) + " step " + std::to_string(step) +
                                     " bucket " + std::to_string(b.id) + " (" + std::to_string(b.count) + ") rank " +
                                     std::to_string(r);
            if (exact) {
              EXPECT_TRUE(same_bits(h[r], c[r])) << what;
            } else {
              EXPECT_LE(rel_diff(h[r], c[r]), tol) << what;
            }
            check(*host[r], *cuda[r], b, what);
          }
        }
    }
  }

  std::vector<std::unique_ptr<Ops>> backends;  // one per simulated rank: each its own stream and compute
};

const auto no_state = [](const Codec&, const Codec&, const BucketLayout&, const std::string&) {};

TEST_F(CudaCodecs, NoneIsBitIdentical) { compare("none", {}, true, 0, 2, no_state); }
TEST_F(CudaCodecs, Fp16IsBitIdentical) { compare("fp16", {}, true, 0, 2, no_state); }
TEST_F(CudaCodecs, Bf16IsBitIdentical) { compare("bf16", {}, true, 0, 2, no_state); }

TEST_F(CudaCodecs, TopkAndItsResidualAreBitIdentical) {
  for (const char* ratio : {"0.05", "0.3", "1"})
    for (const char* ef : {"true", "false"})
      compare("topk", {{"ratio", ratio}, {"error_feedback", ef}}, true, 0, 3,
              [&](const Codec& h, const Codec& c, const BucketLayout& b, const std::string& what) {
                const auto* hr = dynamic_cast<const TopkCodec&>(h).residual(b.id);
                const auto* cr = dynamic_cast<const TopkCodec&>(c).residual(b.id);
                ASSERT_EQ(hr == nullptr, cr == nullptr) << what;
                if (hr) {
                  EXPECT_TRUE(same_bits(*hr, *cr)) << what << " residual, ratio " << ratio;
                }
              });
}

// Products and element-wise steps are bit-identical; Gram-Schmidt's dot products are reduced in another
// order (double), so a float may round the other way: relative 1e-5 of the largest entry.
TEST_F(CudaCodecs, PowerSgdAndItsStateWithinTolerance) {
  constexpr double kTol = 1e-5;
  for (const char* warm : {"true", "false"})
    for (const char* ef : {"true", "false"})
      compare("powersgd",
              {{"rank", "2"},
               {"start_iter", "1"},
               {"min_compression_rate", "1"},
               {"warm_start", warm},
               {"error_feedback", ef}},
              false, kTol, 3, [&](const Codec& h, const Codec& c, const BucketLayout& b, const std::string& what) {
                const auto& hp = dynamic_cast<const PowerSgdCodec&>(h);
                const auto& cp = dynamic_cast<const PowerSgdCodec&>(c);
                const auto* hr = hp.residual(b.id);
                const auto* cr = cp.residual(b.id);
                ASSERT_EQ(hr == nullptr, cr == nullptr) << what;
                if (hr) {
                  EXPECT_LE(rel_diff(*hr, *cr), kTol) << what << " residual";
                }
                const auto* hq = hp.q_memory(b.id);
                const auto* cq = cp.q_memory(b.id);
                ASSERT_EQ(hq == nullptr, cq == nullptr) << what;
                if (hq) {
                  EXPECT_LE(rel_diff(*hq, *cq), kTol) << what << " Q";
                }
              });
}

// ---- the compute's operations one by one ----

class CudaCodecCompute : public CudaCodecs {
 protected:
  CodecCompute& dev() { return backends[0]->codec_compute(); }
  template <class T>
  std::vector<T> round_trip(const std::vector<T>& in) {  // upload, then download
    CodecBuffer b(dev(), in.size() * sizeof(T));
    dev().upload(b.get(), in.data(), in.size() * sizeof(T));
    std::vector<T> out(in.size());
    dev().download(out.data(), b.get(), in.size() * sizeof(T));
    return out;
  }
};

TEST_F(CudaCodecCompute, HalfCastsOfEveryPatternAndSpecialFloats) {
  for (ElemType t : {ElemType::F16, ElemType::BF16}) {
    std::vector<std::uint16_t> all(65536);
    for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<std::uint16_t>(i);
    std::vector<float> host(all.size()), got(all.size());
    host_codec_compute().from_half(t, all.data(), host.data(), all.size());
    CodecBuffer h(dev(), all.size() * 2), f(dev(), all.size() * 4);
    dev().upload(h.get(), all.data(), all.size() * 2);
    dev().from_half(t, h.as<std::uint16_t>(), f.as<float>(), all.size());
    dev().download(got.data(), f.get(), all.size() * 4);
    // Signalling-NaN halves excepted: half.hpp's scalar f16_to_float keeps them signalling, its F16C path
    // (which host_codec_compute takes on x86) quiets them, and the device follows the scalar code. No codec
    // puts one on the wire: float_to_f16 and the half sums only make quiet NaNs.
    std::size_t bad = 0;
    for (std::size_t i = 0; i < all.size(); ++i) {
      const bool snan =
          t == ElemType::F16 && (all[i] & 0x7c00u) == 0x7c00u && (all[i] & 0x3ffu) != 0 && !(all[i] & 0x200u);
      if (!snan) bad += std::memcmp(&host[i], &got[i], sizeof(float)) != 0;
    }
    EXPECT_EQ(bad, 0u) << elem_name(t) << " to float";

    // Floats around every rounding boundary: each half pattern's float, nudged up and down, and specials.
    std::vector<float> in;
    for (float x : host) {
      in.push_back(x);
      in.push_back(std::nextafter(x, std::numeric_limits<float>::infinity()));
      in.push_back(std::nextafter(x, -std::numeric_limits<float>::infinity()));
    }
    for (float x : {65504.0f, 65520.0f, 65519.996f, 5.96e-8f, 2.98e-8f, 2.99e-8f, 1e-45f, 3.4e38f})
      in.insert(in.end(), {x, -x});
    in.push_back(std::bit_cast<float>(0x7fa00001u));  // a signalling NaN with payload
    std::vector<std::uint16_t> want(in.size()), have(in.size());
    host_codec_compute().to_half(t, in.data(), want.data(), in.size());
    CodecBuffer fi(dev(), in.size() * 4), ho(dev(), in.size() * 2);
    dev().upload(fi.get(), in.data(), in.size() * 4);
    dev().to_half(t, fi.as<float>(), ho.as<std::uint16_t>(), in.size());
    dev().download(have.data(), ho.get(), in.size() * 2);
    bad = 0;
    for (std::size_t i = 0; i < in.size(); ++i) bad += want[i] != have[i];
    EXPECT_EQ(bad, 0u) << elem_name(t) << " from float";
  }
}

TEST_F(CudaCodecCompute, TopkSelectsTheHostsEntriesWithNanTiesAndZeros) {
  std::mt19937 rng(5);
  for (std::size_t n : {1u, 2u, 7u, 100u, 4097u, 100000u}) {
    std::vector<float> v = random_grads(rng, n);
    if (n > 5) {
      v[3] = std::numeric_limits<float>::quiet_NaN();
      v[n - 1] = -std::numeric_limits<float>::infinity();
      v[n / 2] = std::numeric_limits<float>::infinity();
    }
    for (std::size_t k : {std::size_t{1}, n / 3 + 1, n}) {
      k = std::min(k, n);
      std::vector<IndexValue> want(k), have(k);
      host_codec_compute().topk(v.data(), n, k, want.data());
      CodecBuffer dv(dev(), n * 4), out(dev(), k * sizeof(IndexValue));
      dev().upload(dv.get(), v.data(), n * 4);
      dev().topk(dv.as<float>(), n, k, out.as<IndexValue>());
      dev().download(have.data(), out.get(), k * sizeof(IndexValue));
      bool same = true;
      for (std::size_t j = 0; j < k; ++j)
        same =
            same && want[j].index == have[j].index && std::memcmp(&want[j].value, &have[j].value, sizeof(float)) == 0;
      EXPECT_TRUE(same) << "n=" << n << " k=" << k;
    }
  }
}

TEST_F(CudaCodecCompute, ScatterAddRejectsAnIndexOutsideTheBucket) {
  const std::vector<IndexValue> pairs = {{0, 1.0f}, {2, 2.0f}, {1, 3.0f}, {9, 4.0f}};
  CodecBuffer p(dev(), pairs.size() * sizeof(IndexValue)), d(dev(), 3 * sizeof(float));
  dev().upload(p.get(), pairs.data(), pairs.size() * sizeof(IndexValue));
  EXPECT_THROW(dev().scatter_add(d.as<float>(), 3, p.as<IndexValue>(), 2, 2), std::runtime_error);
  dev().fill(d.as<float>(), 3, 0.0f);
  dev().scatter_add(d.as<float>(), 3, p.as<IndexValue>(), 1, 2);  // only the first group
  std::vector<float> got(3);
  dev().download(got.data(), d.get(), 3 * sizeof(float));
  EXPECT_EQ(got, (std::vector<float>{1.0f, 0.0f, 2.0f}));
}

// The products sum in double in the host's order without FMA: bit-identical. Gram-Schmidt: tolerance.
TEST_F(CudaCodecCompute, ProductsAreBitIdenticalAndOrthogonalizeClose) {
  std::mt19937 rng(9);
  std::normal_distribution<float> d(0.0f, 1.0f);
  const std::size_t shapes[][3] = {{64, 48, 2}, {1, 1, 1}, {300, 7, 4}, {5, 900, 3}, {1024, 512, 8}};
  for (const auto& s : shapes) {
    const std::size_t n = s[0], c = s[1], k = s[2];
    auto rnd = [&](std::size_t count) {
      std::vector<float> v(count);
      for (float& x : v) x = d(rng);
      return v;
    };
    const auto m = rnd(n * c), q = rnd(c * k), p = rnd(n * k);
    auto run = [&](CodecCompute& cc, int which) {
      CodecBuffer bm(cc, m.size() * 4), bq(cc, q.size() * 4), bp(cc, p.size() * 4);
      cc.upload(bm.get(), m.data(), m.size() * 4);
      cc.upload(bq.get(), q.data(), q.size() * 4);
      cc.upload(bp.get(), p.data(), p.size() * 4);
      std::vector<float> out;
      if (which == 0) {
        cc.matmul(bm.as<float>(), bq.as<float>(), bp.as<float>(), n, c, k);
        out.resize(p.size());
        cc.download(out.data(), bp.get(), out.size() * 4);
      } else if (which == 1) {
        cc.matmul_tn(bm.as<float>(), bp.as<float>(), bq.as<float>(), n, c, k);
        out.resize(q.size());
        cc.download(out.data(), bq.get(), out.size() * 4);
      } else if (which == 2) {
        cc.matmul_nt(bp.as<float>(), bq.as<float>(), bm.as<float>(), n, c, k);
        out.resize(m.size());
        cc.download(out.data(), bm.get(), out.size() * 4);
      } else {
        cc.orthogonalize(bp.as<float>(), n, k, 0.0f);
        out.resize(p.size());
        cc.download(out.data(), bp.get(), out.size() * 4);
      }
      return out;
    };
    for (int which = 0; which < 3; ++which)
      EXPECT_TRUE(same_bits(run(host_codec_compute(), which), run(dev(), which)))
          << "product " << which << " n=" << n << " c=" << c << " k=" << k;
    EXPECT_LE(rel_diff(run(host_codec_compute(), 3), run(dev(), 3)), 1e-6) << "orthogonalize n=" << n << " k=" << k;
  }
}

}  // namespace
}  // namespace ddplab
