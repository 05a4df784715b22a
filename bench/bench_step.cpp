// Google Benchmark: one training step's compute (forward + backward + SGD) of the default MLP on one thread,
// what the CPU runtime spends its time on besides the wire; and one update of its 2.9M parameters by each
// registry optimizer (the optimizer_s of a step), side by side; the CNN and the GPT steps likewise.
#include <benchmark/benchmark.h>

#include <random>

#include "ddplab/runtime/augment.hpp"
#include "ddplab/runtime/cnn.hpp"
#include "ddplab/runtime/gpt.hpp"
#include "ddplab/runtime/mlp.hpp"
#include "ddplab/runtime/model_optimizer.hpp"

namespace ddplab {
namespace {

// Forward, backward and an SGD update of `model` on a random batch, per iteration; GFLOP/s from the model's
// own FLOP count (its layer table, as the simulator sees it).
void train_steps(benchmark::State& state, Ops& ops, Model& model, int batch) {
  std::vector<float> x(static_cast<std::size_t>(batch) * static_cast<std::size_t>(model.input_features()));
  std::vector<std::int32_t> y(static_cast<std::size_t>(batch) * static_cast<std::size_t>(model.labels_per_sample()));
  std::mt19937 rng(1);
  std::normal_distribution<float> d;
  for (float& v : x) v = d(rng);
  if (model.labels_per_sample() > 1)  // a language model's input is token ids
    for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((7 * i + 3) % 256);
  for (std::size_t i = 0; i < y.size(); ++i) y[i] = static_cast<std::int32_t>(i % 10);
  OptimizerConfig sgd;
  sgd.lr = LrPlan::constant(0.01);
  ModelOptimizer optimizer(ops, model, sgd);
  std::int64_t t = 0;
  for (auto _ : state) {
    model.forward(x.data(), batch);
    benchmark::DoNotOptimize(model.backward(y.data()));
    optimizer.step(++t);
  }
  const double flops = batch * (model.spec().forward_flops() + model.spec().backward_flops());
  state.counters["GFLOP/s"] =
      benchmark::Counter(flops, benchmark::Counter::kIsIterationInvariantRate, benchmark::Counter::kIs1000);
  state.counters["samples/s"] = benchmark::Counter(batch, benchmark::Counter::kIsIterationInvariantRate);
}

void BM_MlpStep(benchmark::State& state) {
  const int batch = static_cast<int>(state.range(0));
  auto ops = make_ops("cpu");
  Mlp model(*ops, {784, 1024, 1024, 1024, 10}, batch);
  model.init(1);
  train_steps(state, *ops, model, batch);
}
BENCHMARK(BM_MlpStep)->Arg(64)->Arg(256)->Unit(benchmark::kMillisecond);

// scenarios/cnn.toml's CNN (16 and 32 channels, 5 x 5, 128 hidden), without and with batch norm: im2col +
// GEMM convolutions, beside the MLP's step at the same batch.
void BM_CnnStep(benchmark::State& state, const std::string& bn) {
  const int batch = static_cast<int>(state.range(0));
  ModelConfig m;
  m.type = ModelType::Cnn;
  m.conv = {16, 32};
  m.bn = bn;
  auto ops = make_ops("cpu");
  Cnn model(*ops, m, batch);
  model.init(1);
  train_steps(state, *ops, model, batch);
}
BENCHMARK_CAPTURE(BM_CnnStep, none, std::string("none"))->Arg(32)->Arg(64)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_CnnStep, local, std::string("local"))->Arg(32)->Arg(64)->Unit(benchmark::kMillisecond);

// scenarios/gpt-tiny.toml's GPT (4 blocks of width 128, 4 heads, 128-token sequences, GPT-2's parts) and the
// same with Llama's (RMSNorm, SwiGLU, RoPE, 2 key/value heads); samples are sequences.
void BM_GptStep(benchmark::State& state, bool llama) {
  const int batch = static_cast<int>(state.range(0));
  GptConfig g;
  if (llama) {
    g.kv_heads = 2, g.norm = GptNorm::RmsNorm, g.activation = GptActivation::SwiGlu;
    g.position = GptPosition::Rotary, g.bias = false;
  }
  auto ops = make_ops("cpu");
  Gpt model(*ops, g, batch);
  model.init(1);
  train_steps(state, *ops, model, batch);
  state.counters["tokens/s"] =
      benchmark::Counter(static_cast<double>(batch) * g.seq, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK_CAPTURE(BM_GptStep, gpt2, false)->Arg(16)->Unit(benchmark::kMillisecond);
BENCHMARK_CAPTURE(BM_GptStep, llama, true)->Arg(16)->Unit(benchmark::kMillisecond);

// One update of every parameter (lr 0: the parameters stay put), after one real backward for the gradients.
void BM_OptimizerUpdate(benchmark::State& state, const std::string& name) {
  auto ops = make_ops("cpu");
  Mlp model(*ops, {784, 1024, 1024, 1024, 10}, 8);
  model.init(1);
  std::vector<float> x(8 * 784, 0.5f);
  std::vector<std::int32_t> y = {0, 1, 2, 3, 4, 5, 6, 7};
  model.forward(x.data(), 8);
  model.backward(y.data());
  OptimizerConfig oc;
  oc.name = name;
  ModelOptimizer optimizer(*ops, model, oc);
  std::int64_t t = 0;
  for (auto _ : state) optimizer.step(++t, 0.0f);
  state.counters["params/s"] =
      benchmark::Counter(static_cast<double>(model.num_params()), benchmark::Counter::kIsIterationInvariantRate);
}

// Augmenting a batch of 64 Fashion-MNIST-sized images (rotation, zoom and shift, bilinear): what the loader
// thread adds per batch, to compare with a step's compute (BM_MlpStep/64).
void BM_AugmentBatch(benchmark::State& state) {
  std::vector<float> images(64 * 784);
  std::mt19937 rng(2);
  std::uniform_real_distribution<float> u(-0.8f, 2.0f);
  for (float& v : images) v = u(rng);
  std::vector<std::size_t> idx(64);
  for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  int epoch = 0;
  for (auto _ : state)
    augment_images(images.data(), 64, 28, idx.data(), 0, epoch++, 1, AugmentConfig{10, 0.1, 2}, -0.81f);
  state.counters["images/s"] = benchmark::Counter(64, benchmark::Counter::kIsIterationInvariantRate);
}
BENCHMARK(BM_AugmentBatch)->Unit(benchmark::kMillisecond);

}  // namespace
}  // namespace ddplab

int main(int argc, char** argv) {
  for (const ddplab::OptimizerInfo& o : ddplab::optimizers())
    benchmark::RegisterBenchmark(("BM_OptimizerUpdate/" + o.name).c_str(), ddplab::BM_OptimizerUpdate, o.name)
        ->Unit(benchmark::kMillisecond);
  benchmark::Initialize(&argc, argv);
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 1;
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
