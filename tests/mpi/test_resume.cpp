// Run under mpirun: a run checkpointed mid-way (PlanExecutor::save, through a real checkpoint file) and
// continued by a fresh model, strategy and executor (PlanExecutor::load) ends with exactly the parameters of
// the run that never stopped, on every rank: for every registered policy, every codec of the registry, an
// accumulation window, an optimizer with two state slots on a decaying schedule, and clipping.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "ddplab/core/checkpoint.hpp"
#include "ddplab/runtime/mlp.hpp"
#include "ddplab/runtime/ops.hpp"
#include "ddplab/runtime/plan_executor.hpp"
#include "ddplab/strategies/optimizer.hpp"
#include "ddplab/strategies/strategy.hpp"
#include "mpi_test_main.hpp"
#include "temp_dir.hpp"

namespace ddplab {
namespace {

const std::vector<int> kLayers = {20, 16, 12, 4};
constexpr int kBatch = 8, kSteps = 12;

StrategyContext context(bool clip) {
  StrategyContext ctx;
  ctx.world_size = g_comm->size();
  ctx.ranks_per_node = g_comm->size();
  ctx.batch_size = kBatch;
  ctx.seed = 11;
  ctx.clip_grad_norm = clip;
  return ctx;
}

struct Case {
  StrategyConfig strategy;
  TrainConfig train;  // its optimizer, schedule and clipping
};

// One rank's training from its step `first` to kSteps (and the policy's end-of-run work). With `stop` > 0 it
// saves a checkpoint after `stop` steps into `saved` and returns; with `from`, it starts from that checkpoint.
// Batches depend on the rank and the step only, so a continued run sees what the straight one saw.
std::vector<float> train(const Case& c, int stop, const Checkpoint* from, Checkpoint* saved) {
  Communicator& comm = *g_comm;
  auto ops = make_ops("cpu");
  Mlp model(*ops, kLayers, kBatch);
  model.init(7);
  Strategy strategy(c.strategy, ModelSpec::mlp(kLayers), context(c.train.clip_grad_norm > 0));
  const OptimizerConfig oc = optimizer_config(c.train, kBatch * strategy.workers() * c.strategy.accumulate_steps,
                                              kSteps / c.strategy.accumulate_steps);
  PlanExecutor exec(comm, *ops, model, strategy, oc);
  int first = 0;
  if (from) {
    exec.load(*from, "test checkpoint");
    first = from->meta.at("step").get<int>();
  }
  std::vector<float> x(static_cast<std::size_t>(kBatch * kLayers.front()));
  std::vector<std::int32_t> y(kBatch);
  float* dx = ops->alloc(x.size());
  std::int32_t* dy = ops->alloc_labels(y.size());
  std::vector<float> out;
  for (int s = first; s < kSteps; ++s) {
    if (stop > 0 && s == stop) {
      exec.save(*saved);
      saved->meta["step"] = s;
      break;
    }
    std::mt19937 rng(static_cast<unsigned>(1000 * (comm.rank() + 1) + s));
    std::normal_distribution<float> x01;
    for (float& v : x) v = x01(rng);
    for (std::size_t i = 0; i < y.size(); ++i) y[i] = static_cast<std::int32_t>((rng() >> 3) % 4);
    ops->to_device(dx, x.data(), x.size());
    ops->labels_to_device(dy, y.data(), y.size());
    exec.run_step(s, dx, dy, strategy.is_worker(comm.rank()) ? kBatch : 0);
  }
  if (stop == 0) {
    exec.finish(kSteps);
    out.resize(model.num_params());
    ops->to_host(out.data(), model.params(), out.size());
    // In parameter order: the layout is the rebuilt one in both runs, but compare what the parameters are.
    std::vector<float> ordered;
    for (const ParamInfo& p : model.param_info())
      ordered.insert(ordered.end(), out.begin() + static_cast<std::ptrdiff_t>(p.offset),
                     out.begin() + static_cast<std::ptrdiff_t>(p.offset + p.count));
    out = ordered;
  }
  ops->free(dx);
  ops->free_labels(dy);
  return out;
}

std::vector<Case> cases() {
  std::vector<Case> out;
  auto base = [] {
    Case c;
    c.strategy.schedule = "ring";
    c.strategy.bucket_cap = 256;
    c.strategy.first_bucket_cap = 128;
    c.train.optimizer_options = {{"momentum", "0.9"}};
    return c;
  };
  for (const PolicyInfo& p : policies()) {
    Case c = base();
    c.strategy.name = c.strategy.policy = p.name;
    if (p.shards == Shards::Servers) c.strategy.schedule = "native";
    out.push_back(c);
  }
  for (const CodecInfo& info : codecs()) {
    Case c = base();
    c.strategy.policy = "overlap";
    c.strategy.codec = c.strategy.name = info.name;
    // Integer options at their examples (PowerSGD: compressing from step 3, rank 2), the rest at their fallbacks
    // (error feedback and warm start on).
    for (const OptionSpec& s : info.options)
      c.strategy.codec_options[s.name] = s.kind == OptionKind::Integer ? s.example : s.fallback;
    out.push_back(c);
  }
  Case local = base();
  local.strategy.policy = "local_sgd";
  local.strategy.name = "local_sgd period 3";
  local.strategy.policy_options = {{"local_sgd_period", "3"}};  // the checkpoint falls between two syncs
  out.push_back(local);
  Case accumulate = base();
  accumulate.strategy.policy = "overlap";
  accumulate.strategy.name = "overlap accumulate 2";
  accumulate.strategy.accumulate_steps = 2;
  out.push_back(accumulate);
  Case adam = base();
  adam.strategy.policy = "zero1";
  adam.strategy.name = "zero1 adam cosine clipped";
  adam.train.optimizer = "adam";
  adam.train.optimizer_options = {};
  adam.train.lr_schedule = "cosine";
  adam.train.warmup_steps = 2;
  adam.train.clip_grad_norm = 0.5;
  out.push_back(adam);
  return out;
}

TEST(Resume, EveryStrategyContinuesBitForBitFromAMidRunCheckpoint) {
  if (g_comm->size() < 2) GTEST_SKIP() << "needs 2 ranks or more";
  test::TempDir dir("ddplab-resume");
  // A rank's file, so that each case also goes through the file format.
  const std::string file = dir.file("rank-" + std::to_string(g_comm->rank()) + ".ckpt");
  for (const Case& c : cases()) {
    const std::string why = c.strategy.name + " (" + c.strategy.policy + ", codec " + c.strategy.codec + ")";
    const std::vector<float> straight = train(c, 0, nullptr, nullptr);
    // Stopped after 5 steps: past the bucket rebuild, PowerSGD's start and the cosine warm-up.
    const int stop = c.strategy.accumulate_steps == 2 ? 6 : 5;
    Checkpoint saved;
    train(c, stop, nullptr, &saved);
    write_checkpoint(file, saved);
    const Checkpoint back = read_checkpoint(file);
    const std::vector<float> resumed = train(c, 0, &back, nullptr);
    ASSERT_EQ(resumed.size(), straight.size()) << why;
    std::size_t differ = 0;
    for (std::size_t i = 0; i < straight.size(); ++i)
      differ += std::memcmp(&straight[i], &resumed[i], sizeof(float)) != 0;
    EXPECT_EQ(differ, 0u) << why << ": rank " << g_comm->rank() << " ends with " << differ << " of " << straight.size()
                          << " parameters other than the straight run's";
  }
}

TEST(Resume, LoadRefusesACheckpointOfAnotherModel) {
  Communicator& comm = *g_comm;
  auto ops = make_ops("cpu");
  Mlp model(*ops, kLayers, kBatch);
  model.init(7);
  StrategyConfig sc;
  sc.name = sc.policy = "overlap";
  sc.schedule = "ring";
  Strategy strategy(sc, ModelSpec::mlp(kLayers), context(false));
  PlanExecutor exec(comm, *ops, model, strategy, OptimizerConfig{});
  Checkpoint c;
  c.tensors["params"].assign(model.num_params() + 1, 0.0f);
  try {
    exec.load(c, "f.ckpt");
    FAIL() << "no throw";
  } catch (const CheckpointError& e) {
    EXPECT_NE(std::string(e.what()).find("f.ckpt: tensor \"params\" holds"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ddplab
