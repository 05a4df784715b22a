// Google Benchmark: one training step's compute (forward + backward + SGD) of the default MLP on one thread,
// what the CPU runtime spends its time on besides the wire.
#include <benchmark/benchmark.h>

#include <random>

#include "ddplab/runtime/mlp.hpp"

namespace ddplab {
namespace {

void BM_MlpStep(benchmark::State& state) {
  const int batch = static_cast<int>(state.range(0));
  auto ops = make_ops("cpu");
  Mlp model(*ops, {784, 1024, 1024, 1024, 10}, batch);
  model.init(1);
  std::vector<float> x(static_cast<std::size_t>(batch) * 784);
  std::vector<std::int32_t> y(static_cast<std::size_t>(batch));
  std::mt19937 rng(1);
  std::normal_distribution<float> d;
  for (float& v : x) v = d(rng);
  for (std::size_t i = 0; i < y.size(); ++i) y[i] = static_cast<std::int32_t>(i % 10);
  DeviceBuffer momentum(*ops, model.num_params());
  bool first = true;
  for (auto _ : state) {
    model.forward(x.data(), batch);
    benchmark::DoNotOptimize(model.backward(y.data()));
    ops->sgd_momentum(model.params(), model.grads(), momentum.data(), model.num_params(), 0.01f, 0.9f, 0.0f, first);
    first = false;
  }
  // Forward 2*B*P and backward 4*B*P multiply-adds, roughly, over the weight count P.
  const double flops = 6.0 * batch * static_cast<double>(model.num_params());
  state.counters["GFLOP/s"] = benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
  state.counters["samples/s"] = benchmark::Counter(batch, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_MlpStep)->Arg(64)->Arg(256)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace ddplab

BENCHMARK_MAIN();
