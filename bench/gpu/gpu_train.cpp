// ddplab-gpu-train: one process, world size 1, no MPI or SQLite: the default MLP trained with SGD momentum
// on Fashion-MNIST on any backend (cuda, cpu, reference), then scored on the test set. It is what the GPU
// check runs on the device and what produced the stored CPU figure it compares with (cpu_reference.json).
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <sstream>
#include <stdexcept>
#include <string>
#include <vector>

#include "ddplab/runtime/communicator.hpp"
#include "ddplab/runtime/data.hpp"
#include "ddplab/runtime/input_pipeline.hpp"
#include "ddplab/runtime/mlp.hpp"
#include "ddplab/runtime/model_optimizer.hpp"
#include "ddplab/runtime/ops.hpp"
#include "ddplab/runtime/plan_executor.hpp"
#include "ddplab/strategies/strategy.hpp"

namespace {

struct Args {
  std::string backend = "cuda", data = "/usr/share/datasets/fashion-mnist", json;
  std::vector<int> layers = {784, 1024, 1024, 1024, 10};
  int batch = 64, epochs = 1, max_steps = 0, warmup_steps = 20;
  unsigned long seed = 1;
  float lr = 0.05f, momentum = 0.9f, weight_decay = 0.0f;
  std::string optimizer = "sgd";  // a registry optimizer, with its default options (--momentum for sgd)
  std::string policy = "flat", schedule = "native", codec = "none";
  bool tf32 = false, probe = false, direct = false;
};

const char* kUsage =
    "usage: ddplab-gpu-train [--backend cuda|cpu|reference] [--tf32] [--data DIR] [--layers 784,1024,...,10]\n"
    "                        [--batch 64] [--epochs 1] [--max-steps N] [--seed 1] [--lr 0.05] [--momentum 0.9]\n"
    "                        [--optimizer sgd|adam|...] [--policy flat] [--schedule native] [--codec none] [--direct]\n"
    "                        [--warmup-steps 20] [--json FILE] | --probe (exit 0 when a CUDA device is usable,\n"
    "                        else say why)\n"
    "  Steps run through the runtime's PlanExecutor (NCCL at world size 1 on cuda), as `ddplab run` does;\n"
    "  --direct: forward, backward and one optimizer call per step, no plan (the bare backend).\n"
    "  steady_samples_per_s leaves out the first --warmup-steps steps (lazy module loading, first collectives).\n";

Args parse(int argc, char** argv) {
  Args a;
  for (int i = 1; i < argc; ++i) {
    const std::string k = argv[i];
    auto val = [&]() -> std::string {
      if (i + 1 >= argc) throw std::invalid_argument(k + " needs a value");
      return argv[++i];
    };
    if (k == "--backend")
      a.backend = val();
    else if (k == "--tf32")
      a.tf32 = true;
    else if (k == "--probe")
      a.probe = true;
    else if (k == "--data")
      a.data = val();
    else if (k == "--json")
      a.json = val();
    else if (k == "--batch")
      a.batch = std::stoi(val());
    else if (k == "--epochs")
      a.epochs = std::stoi(val());
    else if (k == "--max-steps")
      a.max_steps = std::stoi(val());
    else if (k == "--warmup-steps")
      a.warmup_steps = std::stoi(val());
    else if (k == "--seed")
      a.seed = std::stoul(val());
    else if (k == "--lr")
      a.lr = std::stof(val());
    else if (k == "--momentum")
      a.momentum = std::stof(val());
    else if (k == "--policy")
      a.policy = val();
    else if (k == "--schedule")
      a.schedule = val();
    else if (k == "--codec")
      a.codec = val();
    else if (k == "--direct")
      a.direct = true;
    else if (k == "--optimizer") {
      a.optimizer = val();
      if (!ddplab::find_optimizer(a.optimizer))
        throw std::invalid_argument(
            "--optimizer must name a registry optimizer (sgd, adam, adamw, rmsprop, lars, lamb)");
    } else if (k == "--layers") {
      a.layers.clear();
      std::stringstream ss(val());
      for (std::string t; std::getline(ss, t, ',');) a.layers.push_back(std::stoi(t));
    } else if (k == "-h" || k == "--help") {
      std::fputs(kUsage, stdout);
      std::exit(0);
    } else
      throw std::invalid_argument("unknown option " + k);
  }
  if (a.batch <= 0 || a.epochs <= 0 || a.max_steps < 0 || a.warmup_steps < 0)
    throw std::invalid_argument("--batch and --epochs must be > 0, --max-steps and --warmup-steps >= 0");
  return a;
}

std::unique_ptr<ddplab::Ops> backend(const Args& a) {
  if (a.backend == "cuda") return ddplab::make_cuda_ops(a.tf32);
  if (a.backend == "reference") return ddplab::make_reference_ops();
#ifndef DDPLAB_GPU_ONLY
  return ddplab::make_ops(a.backend);
#else
  throw std::invalid_argument("backend \"" + a.backend + "\" is not in the GPU-only build (cuda, reference)");
#endif
}

double accuracy(ddplab::Mlp& model, ddplab::Ops& ops, const ddplab::Dataset& test, int batch, double* loss) {
  ddplab::DeviceBuffer x(ops, static_cast<std::size_t>(batch) * test.features);
  std::int32_t* y = ops.alloc_labels(static_cast<std::size_t>(batch));
  std::vector<float> hx(static_cast<std::size_t>(batch) * test.features),
      logits(static_cast<std::size_t>(batch) * test.classes);
  std::vector<std::int32_t> hy(static_cast<std::size_t>(batch));
  std::vector<std::size_t> idx(test.size());
  for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = i;
  double correct = 0, loss_sum = 0;
  for (std::size_t at = 0; at < idx.size(); at += static_cast<std::size_t>(batch)) {
    const int b = static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(batch), idx.size() - at));
    ddplab::gather_batch(test, idx, at, b, hx.data(), hy.data());
    ops.to_device(x.data(), hx.data(), hx.size());
    ops.labels_to_device(y, hy.data(), static_cast<std::size_t>(b));
    const float* out = model.forward(x.data(), b);
    loss_sum += model.loss(y) * b;
    ops.to_host(logits.data(), out, static_cast<std::size_t>(b) * test.classes);
    for (int i = 0; i < b; ++i) {
      const float* row = logits.data() + static_cast<std::size_t>(i) * test.classes;
      correct += (std::max_element(row, row + test.classes) - row) == hy[static_cast<std::size_t>(i)];
    }
  }
  ops.free_labels(y);
  *loss = loss_sum / static_cast<double>(test.size());
  return correct / static_cast<double>(test.size());
}

int run(const Args& a) {
  if (a.probe) {
    const std::string why = ddplab::cuda_unavailable_reason();
    std::printf("%s\n", why.empty() ? "CUDA device visible" : why.c_str());
    return why.empty() ? 0 : 3;
  }
  auto ops = backend(a);
  const ddplab::Dataset train = ddplab::load_fashion_mnist(a.data, true),
                        test = ddplab::load_fashion_mnist(a.data, false);
  ddplab::Mlp model(*ops, a.layers, a.batch);
  model.init(a.seed);
  ddplab::DistributedSampler sampler(train.size(), 0, 1, a.seed);
  // The trainer's input pipeline: batch s + 1 uploads from page-locked memory while step s computes.
  ddplab::InputPipeline input(*ops, train, a.batch);
  input.plan(sampler, a.epochs, a.max_steps);
  // The runtime's path, as `ddplab run --backend cuda` runs it on each rank: the strategy's plan through
  // PlanExecutor, NCCL on device buffers (one rank here). --direct skips the plan.
  std::unique_ptr<ddplab::Communicator> single = ddplab::make_single_process_communicator(), nccl;
  std::unique_ptr<ddplab::Strategy> strategy;
  std::unique_ptr<ddplab::PlanExecutor> exec;
  ddplab::OptimizerConfig oc;  // --optimizer with its default options (--momentum: sgd's)
  oc.name = a.optimizer;
  if (a.optimizer == "sgd") oc.options["momentum"] = std::to_string(a.momentum);
  oc.lr = ddplab::LrPlan::constant(a.lr);
  oc.weight_decay = a.weight_decay;
  std::unique_ptr<ddplab::ModelOptimizer> direct;
  if (a.direct) direct = std::make_unique<ddplab::ModelOptimizer>(*ops, model, oc);
  if (!a.direct) {
    if (a.backend == "cuda") nccl = ddplab::open_nccl_communicator(*single, *ops, 300);
    ddplab::StrategyConfig sc;
    sc.policy = a.policy, sc.schedule = a.schedule, sc.codec = a.codec;
    ddplab::StrategyContext ctx;
    ctx.batch_size = a.batch;
    ctx.seed = a.seed;
    strategy = std::make_unique<ddplab::Strategy>(sc, ddplab::ModelSpec::mlp(a.layers), ctx);
    exec = std::make_unique<ddplab::PlanExecutor>(nccl ? *nccl : *single, *ops, model, *strategy, oc);
  }
  int step = 0;
  double last_loss = 0, compute_s = 0, exposed_s = 0, samples = 0, warm_samples = 0;
  const auto t0 = std::chrono::steady_clock::now();
  auto t_warm = t0;
  int b = input.steps() == 0 ? 0 : input.load_step(0);
  for (std::size_t s = 0; s < input.steps(); ++s) {
    if (s == static_cast<std::size_t>(a.warmup_steps))
      t_warm = std::chrono::steady_clock::now(), warm_samples = samples;
    input.ready();
    const int this_b = b;
    samples += this_b;  // a last partial batch counts its size
    if (s + 1 < input.steps()) b = input.load_step(s + 1);
    if (exec) {
      const ddplab::StepRecord rec = exec->run_step(step, input.x(s % 2), input.y(s % 2), this_b);
      last_loss = rec.loss, compute_s += rec.compute_s, exposed_s += rec.exposed_comm_s;
      ++step;
      continue;
    }
    model.forward(input.x(s % 2), this_b);
    last_loss = model.backward(input.y(s % 2));
    direct->step(step + 1);
    ++step;
  }
  ops->synchronize();
  const auto t1 = std::chrono::steady_clock::now();
  const double train_s = std::chrono::duration<double>(t1 - t0).count();
  // Timed from the host. Each step waits for its loss after the forward pass, so at most one step's backward
  // and optimizer are still queued at t_warm: far less than the steps timed after it.
  const bool steady_ok = step > a.warmup_steps;
  const double steady = steady_ok ? (samples - warm_samples) / std::chrono::duration<double>(t1 - t_warm).count() : 0.0;
  double test_loss = 0;
  const double acc = accuracy(model, *ops, test, a.batch, &test_loss);
  char buf[1024];
  std::snprintf(buf, sizeof buf,
                "{\"backend\": \"%s\", \"path\": \"%s\", \"policy\": \"%s\", \"codec\": \"%s\", "
                "\"optimizer\": \"%s\", \"steps\": %d, \"batch\": %d, \"seed\": %lu, \"train_s\": %.4f, "
                "\"samples_per_s\": %.1f, \"steady_samples_per_s\": %.1f, \"compute_s\": %s, \"exposed_comm_s\": %s, "
                "\"peak_device_bytes\": %zu, "
                "\"final_loss\": %.6f, \"test_loss\": %.6f, \"test_accuracy\": %.4f}\n",
                ops->name().c_str(), exec ? "plan" : "direct", a.policy.c_str(), a.codec.c_str(), a.optimizer.c_str(),
                step, a.batch, a.seed, train_s, samples / train_s, steady,
                exec ? std::to_string(compute_s).c_str() : "null",
                exec ? std::to_string(exposed_s).c_str() : "null",             // --direct: not measured
                ops->peak_device_bytes() + (nccl ? nccl->device_bytes() : 0),  // as the trainer counts it
                last_loss, test_loss, acc);
  std::fputs(buf, stdout);
  if (!a.json.empty()) {
    std::ofstream f(a.json);
    if (!(f << buf)) throw std::runtime_error("cannot write " + a.json);
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(parse(argc, argv));
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 1;
  }
}
