#include "ddplab/runtime/codec_probe.hpp"

#include <algorithm>
#include <chrono>
#include <random>
#include <tuple>
#include <stdexcept>

#include "ddplab/core/error.hpp"
#include "ddplab/core/stats.hpp"
#include "ddplab/strategies/codec_compute.hpp"

namespace ddplab {
namespace {

using Clock = std::chrono::steady_clock;

// Buffers for any probe work, in the compute's memory.
struct Scratch {
  CodecBuffer a, b, c, pairs, half;
  Scratch(CodecCompute& compute, std::size_t floats, std::size_t pairs_n)
      : a(compute, floats * sizeof(float)),
        b(compute, floats * sizeof(float)),
        c(compute, floats * sizeof(float)),
        pairs(compute, pairs_n * sizeof(IndexValue)),
        half(compute, floats * sizeof(std::uint16_t)) {}
};

void run(CodecCompute& cc, const LocalWork& w, Scratch& s) {
  float *a = s.a.as<float>(), *b = s.b.as<float>(), *c = s.c.as<float>();
  IndexValue* p = s.pairs.as<IndexValue>();
  switch (w.kind) {
    case WorkKind::Fill:
      cc.fill(a, w.n, 0.5f);
      break;
    case WorkKind::Divide:
      cc.divide(a, w.n, 3.0f);
      break;
    case WorkKind::Add:
      cc.add(a, b, w.n);
      break;
    case WorkKind::Sub:
      cc.sub(c, a, b, w.n);
      break;
    case WorkKind::Copy:
      cc.copy(c, a, w.n);
      break;
    case WorkKind::ToHalf:
      cc.to_half(w.type, a, s.half.as<std::uint16_t>(), w.n);
      break;
    case WorkKind::FromHalf:
      cc.from_half(w.type, s.half.as<std::uint16_t>(), c, w.n);
      break;
    case WorkKind::TopK:
      cc.topk(a, w.n, w.k, p);
      break;
    case WorkKind::ZeroAt:
      cc.zero_at(c, p, w.n);
      break;
    case WorkKind::ScatterAdd:
      cc.scatter_add(c, w.n, p, w.c, w.k);
      break;
    case WorkKind::MatMul:
      cc.matmul(a, b, c, w.n, w.c, w.k);
      break;
    case WorkKind::MatMulTN:
      cc.matmul_tn(a, b, c, w.n, w.c, w.k);
      break;
    case WorkKind::MatMulNT:
      cc.matmul_nt(a, b, c, w.n, w.c, w.k);
      break;
    case WorkKind::Orthogonalize:
      cc.orthogonalize(a, w.n, w.k, 0.0f);
      break;
  }
}

}  // namespace

std::vector<LocalWork> codec_probe_works(std::size_t max_elements) {
  std::vector<LocalWork> v;
  const std::vector<std::size_t> sizes = {max_elements / 32, max_elements / 4, max_elements};
  for (std::size_t n : sizes) {
    v.push_back({WorkKind::Fill, n});
    v.push_back({WorkKind::Divide, n});
    v.push_back({WorkKind::Add, n});
    v.push_back({WorkKind::Sub, n});
    v.push_back({WorkKind::Copy, n * sizeof(float)});
    for (ElemType t : {ElemType::F16, ElemType::BF16}) {
      v.push_back({WorkKind::ToHalf, n, 0, 0, t});
      v.push_back({WorkKind::FromHalf, n, 0, 0, t});
    }
    for (std::size_t k : {n / 10, n / 100}) v.push_back({WorkKind::TopK, n, 0, std::max<std::size_t>(1, k)});
    v.push_back({WorkKind::ZeroAt, n / 10});
    v.push_back({WorkKind::ScatterAdd, n, 4, n / 40});  // four ranks' pairs, a tenth of the bucket in all
  }
  // Low-rank shapes of PowerSGD: a rows x cols gradient times a rank-r factor. Ranks 1 to 8, since a
  // product's cost is not proportional to its FLOPs (work_size).
  for (const auto& [rows, cols, r] :
       {std::tuple{256, 256, 1}, std::tuple{256, 256, 4}, std::tuple{1024, 1024, 1}, std::tuple{1024, 1024, 4},
        std::tuple{2048, 1024, 2}, std::tuple{2048, 1024, 8}}) {
    const auto ur = static_cast<std::size_t>(rows), uc = static_cast<std::size_t>(cols),
               rk = static_cast<std::size_t>(r);
    v.push_back({WorkKind::MatMul, ur, uc, rk});
    v.push_back({WorkKind::MatMulTN, ur, uc, rk});
    v.push_back({WorkKind::MatMulNT, ur, uc, rk});
    v.push_back({WorkKind::Orthogonalize, ur, 0, rk});
  }
  return v;
}

std::vector<CodecWorkTiming> measure_codec_work(Communicator& comm, Ops& ops, int reps, std::size_t max_elements) {
  if (reps < 1) throw InputError("measure_codec_work: reps must be >= 1");
  CodecCompute& cc = ops.codec_compute();
  const std::vector<LocalWork> works = codec_probe_works(max_elements);
  std::size_t floats = max_elements, pairs = max_elements / 10 + 1;
  for (const LocalWork& w : works) {
    if (w.kind == WorkKind::MatMul || w.kind == WorkKind::MatMulTN || w.kind == WorkKind::MatMulNT)
      floats = std::max(floats, w.n * w.c);
    if (w.kind == WorkKind::ScatterAdd) pairs = std::max(pairs, w.c * w.k);
  }
  Scratch s(cc, floats, pairs);
  {
    // Gradients-like values (top-k's cost depends on them), and valid distinct indices for the pair kinds.
    std::mt19937 rng(static_cast<unsigned>(1234 + comm.rank()));
    std::normal_distribution<float> g(0.0f, 1.0f);
    std::vector<float> host(floats);
    for (float& x : host) x = g(rng);
    cc.upload(s.a.get(), host.data(), host.size() * sizeof(float));
    cc.upload(s.b.get(), host.data(), host.size() * sizeof(float));
    std::vector<IndexValue> hp(pairs);
    for (std::size_t i = 0; i < pairs; ++i) hp[i] = {static_cast<std::uint32_t>((i * 10) % max_elements), 1.0f};
    cc.upload(s.pairs.get(), hp.data(), hp.size() * sizeof(IndexValue));
  }
  std::vector<double> medians;
  for (const LocalWork& w : works) {
    std::vector<double> t;
    for (int rep = -2; rep < reps; ++rep) {
      ops.synchronize();
      ops.reset_marks();
      const int m0 = ops.mark();
      const auto h0 = Clock::now();
      run(cc, w, s);
      const int m1 = ops.mark();
      ops.synchronize();
      const double dt =
          m0 >= 0 && m1 >= 0 ? ops.seconds_between(m0, m1) : std::chrono::duration<double>(Clock::now() - h0).count();
      if (rep >= 0) t.push_back(dt);
    }
    medians.push_back(median(t));
  }
  comm.allreduce_sum(medians.data(), medians.size());
  std::vector<CodecWorkTiming> out;
  for (std::size_t i = 0; i < works.size(); ++i) out.push_back({works[i], medians[i] / comm.size()});
  return out;
}

}  // namespace ddplab
