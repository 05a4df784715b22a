// Google Benchmark: the local cost of each codec on one bucket (encode, reduce-side work and decode, with the
// collectives of a single rank, which are the identity), and of half-precision sums, the executor's reduce.
// Bytes/s counts the bucket's float32 bytes, so codecs compare on the same footing.
#include <benchmark/benchmark.h>

#include <random>

#include "ddplab/strategies/codec.hpp"
#include "ddplab/strategies/codec_compute.hpp"
#include "ddplab/strategies/half.hpp"
#include "ddplab/strategies/schedule.hpp"

namespace ddplab {
namespace {

// A 25 MiB-class bucket of the default MLP: two 1024x1024 weights and their biases.
BucketLayout bucket() {
  BucketLayout b;
  b.id = 0;
  b.tensors = {
      {0, 1024, 1024}, {1024 * 1024, 1024, 1}, {1024 * 1024 + 1024, 1024, 1024}, {2 * 1024 * 1024 + 1024, 1024, 1}};
  b.count = 2 * 1024 * 1024 + 2048;
  return b;
}

void run_codec(benchmark::State& state, const std::string& name, const CodecOptions& options) {
  const BucketLayout b = bucket();
  auto codec = make_codec(name, options, 1);
  std::vector<float> grad(b.count);
  std::mt19937 rng(1);
  std::normal_distribution<float> d(0.0f, 1e-2f);
  for (float& g : grad) g = d(rng);
  std::vector<float> work(b.count);
  std::int64_t step = 0;
  for (auto _ : state) {
    work = grad;
    codec->run(
        b, work.data(), 1, step++, [](const CollectiveCall&, void*) {}, host_codec_compute());
    benchmark::DoNotOptimize(work.data());
  }
  state.SetBytesProcessed(state.iterations() * static_cast<std::int64_t>(b.count * sizeof(float)));
  state.counters["wire_bytes"] = static_cast<double>(codec->wire_bytes(b, 4, step));
}

void BM_CodecNone(benchmark::State& s) { run_codec(s, "none", {}); }
void BM_CodecFp16(benchmark::State& s) { run_codec(s, "fp16", {}); }
void BM_CodecBf16(benchmark::State& s) { run_codec(s, "bf16", {}); }
void BM_CodecTopk1pct(benchmark::State& s) { run_codec(s, "topk", {{"ratio", "0.01"}}); }
void BM_CodecTopk10pct(benchmark::State& s) { run_codec(s, "topk", {{"ratio", "0.1"}}); }
void BM_CodecPowerSgdR1(benchmark::State& s) { run_codec(s, "powersgd", {{"rank", "1"}, {"start_iter", "0"}}); }
void BM_CodecPowerSgdR4(benchmark::State& s) { run_codec(s, "powersgd", {{"rank", "4"}, {"start_iter", "0"}}); }
BENCHMARK(BM_CodecNone)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CodecFp16)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CodecBf16)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CodecTopk1pct)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CodecTopk10pct)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CodecPowerSgdR1)->Unit(benchmark::kMillisecond);
BENCHMARK(BM_CodecPowerSgdR4)->Unit(benchmark::kMillisecond);

// The executor's reduce step for each element type, 1 Mi elements.
void BM_SumInto(benchmark::State& state) {
  const auto type = static_cast<ElemType>(state.range(0));
  const std::size_t n = 1 << 20, eb = elem_bytes(type);
  std::vector<unsigned char> a(n * eb), b(n * eb);
  for (std::size_t i = 0; i < a.size(); ++i)
    a[i] = static_cast<unsigned char>(i * 7), b[i] = static_cast<unsigned char>(i * 13);
  if (type == ElemType::F32)  // keep float inputs finite
    for (std::size_t i = 0; i < n; ++i)
      reinterpret_cast<float*>(a.data())[i] = 1.0f, reinterpret_cast<float*>(b.data())[i] = 2.0f;
  for (auto _ : state) {
    sum_into(type, a.data(), b.data(), n);
    benchmark::DoNotOptimize(a.data());
  }
  state.SetItemsProcessed(state.iterations() * static_cast<std::int64_t>(n));
  state.SetLabel(elem_name(type));
}
BENCHMARK(BM_SumInto)
    ->Arg(static_cast<int>(ElemType::F32))
    ->Arg(static_cast<int>(ElemType::F16))
    ->Arg(static_cast<int>(ElemType::BF16));

// Building a schedule's steps (the simulator does it per collective): cost per world size.
void BM_ScheduleBuild(benchmark::State& state, const std::string& name) {
  const int n = static_cast<int>(state.range(0));
  for (auto _ : state) benchmark::DoNotOptimize(make_schedule(name, ScheduleParams{n, 2913290, 8}));
}
BENCHMARK_CAPTURE(BM_ScheduleBuild, ring, std::string("ring"))->Arg(64)->Arg(1024)->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_ScheduleBuild, halving_doubling, std::string("halving_doubling"))
    ->Arg(64)
    ->Arg(1024)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_ScheduleBuild, double_binary_tree, std::string("double_binary_tree"))
    ->Arg(64)
    ->Arg(1024)
    ->Unit(benchmark::kMicrosecond);
BENCHMARK_CAPTURE(BM_ScheduleBuild, hierarchical, std::string("hierarchical"))
    ->Arg(64)
    ->Arg(1024)
    ->Unit(benchmark::kMicrosecond);

}  // namespace
}  // namespace ddplab

BENCHMARK_MAIN();
