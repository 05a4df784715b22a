// Run under mpirun: PlanExecutor's host staging (the cuda+mpi path: device-memory compute, MPI on host
// buffers) must not change a single bit. A backend that computes like the CPU one but reports device
// memory makes the executor stage every bucket through its page-locked mirror; each strategy then has to
// end with exactly the parameters of the unstaged run.
#include <gtest/gtest.h>

#include "forwarding_ops.hpp"
#include "mpi_test_main.hpp"
#include "optimizer_runs.hpp"

#include <random>

#include "ddplab/runtime/mlp.hpp"
#include "ddplab/runtime/ops.hpp"
#include "ddplab/runtime/plan_executor.hpp"
#include "ddplab/strategies/strategy.hpp"

namespace ddplab {
namespace {

const std::vector<int> kLayers = {20, 16, 12, 4};
constexpr int kBatch = 8, kSteps = 5;

// Trains kSteps steps of `config` on this rank's deterministic random batches; returns the parameters.
std::vector<float> train(Ops& ops, const StrategyConfig& config, const OptimizerConfig& oc) {
  Communicator& comm = *g_comm;
  Mlp model(ops, kLayers, kBatch);
  model.init(7);  // same seed everywhere: no broadcast needed
  StrategyContext ctx;
  ctx.world_size = comm.size();
  ctx.ranks_per_node = comm.size();
  ctx.batch_size = kBatch;
  ctx.clip_grad_norm = oc.clip_grad_norm > 0;
  Strategy strategy(config, ModelSpec::mlp(kLayers), ctx);
  {
    PlanExecutor exec(comm, ops, model, strategy, oc);
    std::mt19937 rng(static_cast<unsigned>(100 + comm.rank()));
    std::normal_distribution<float> x01;
    std::vector<float> x(static_cast<std::size_t>(kBatch * kLayers.front()));
    std::vector<std::int32_t> y(kBatch);
    float* dx = ops.alloc(x.size());
    std::int32_t* dy = ops.alloc_labels(y.size());
    for (int s = 0; s < kSteps; ++s) {
      for (float& v : x) v = x01(rng);
      for (std::size_t i = 0; i < y.size(); ++i) y[i] = static_cast<std::int32_t>((rng() >> 3) % 4);
      ops.to_device(dx, x.data(), x.size());
      ops.labels_to_device(dy, y.data(), y.size());
      exec.run_step(s, dx, dy, kBatch);
    }
    exec.finish(kSteps);
    ops.free(dx);
    ops.free_labels(dy);
  }
  std::vector<float> params(model.num_params());
  ops.to_host(params.data(), model.params(), params.size());
  return params;
}

StrategyConfig config(const std::string& policy, const std::string& schedule, const std::string& codec = "none") {
  StrategyConfig c;
  c.name = policy + "-" + schedule + "-" + codec;
  c.policy = policy;
  c.schedule = schedule;
  c.codec = codec;
  c.bucket_cap = 256;  // several buckets for this small model
  c.first_bucket_cap = 128;
  return c;
}

TEST(StagedExecutor, EveryPolicyAndCodecGivesTheUnstagedBits) {
  std::vector<StrategyConfig> configs = {config("flat", "native"),
                                         config("overlap", "ring"),
                                         config("overlap", "native", "fp16"),
                                         config("bucketed", "ring", "bf16"),
                                         config("overlap", "native", "topk"),
                                         config("zero1", "ring"),
                                         config("zero1", "native"),
                                         config("ps", "native"),
                                         config("local_sgd", "ring")};
  configs.back().policy_options["local_sgd_period"] = "2";
  configs.push_back(config("overlap", "ring"));
  configs.back().accumulate_steps = 2;
  configs.back().name += "-accumulate2";
  configs.push_back(config("overlap", "ring", "powersgd"));
  configs.back().codec_options = {{"rank", "2"}, {"start_iter", "2"}};
  // And whatever else the registries hold: every schedule, codec and policy at least once.
  auto covered = [&](auto same) {
    for (const StrategyConfig& c : configs)
      if (same(c)) return true;
    return false;
  };
  for (const std::string& s : allreduce_schedule_names())
    if (!covered([&](const StrategyConfig& c) { return c.schedule == s; })) configs.push_back(config("overlap", s));
  for (const CodecInfo& k : codecs())
    if (!covered([&](const StrategyConfig& c) { return c.codec == k.name; }))
      configs.push_back(config("overlap", "ring", k.name));
  for (const PolicyInfo& p : policies())
    if (!covered([&](const StrategyConfig& c) { return c.policy == p.name; }))
      configs.push_back(config(p.name, p.shards == Shards::Servers ? "native" : "ring"));
  // Every optimizer, and clipping by the global norm (small enough to clip: its NormSync on sharded policies).
  for (const OptimizerConfig& oc : test::optimizer_runs({"sgd", "adam"}))
    for (const StrategyConfig& c : configs) {
      if (!optimizer_runs_with(*find_optimizer(oc.name), *find_policy(c.policy))) continue;  // refused
      auto cpu = make_ops("cpu");
      StagedCpuOps staged;
      const std::vector<float> want = train(*cpu, c, oc), got = train(staged, c, oc);
      EXPECT_GT(staged.host_allocs, 0) << c.name << ": the executor did not stage";
      ASSERT_EQ(got.size(), want.size());
      std::size_t differ = 0;
      for (std::size_t i = 0; i < got.size(); ++i) differ += got[i] != want[i];
      EXPECT_EQ(differ, 0u) << c.name << " " << oc.name << (oc.clip_grad_norm > 0 ? " clipped" : "") << " on rank "
                            << g_comm->rank();
    }
}

}  // namespace
}  // namespace ddplab
