// Run under mpirun: the memory model (strategies/memory.hpp) is what the runtime allocates. A backend that
// counts its live allocations sees the model's parameters, gradients and activations, then the executor's
// optimizer state, which under a sharding policy is only the part this rank updates, also after the
// buckets were rebuilt from the observed gradient order. Every policy and optimizer of the registries.
#include <gtest/gtest.h>

#include "forwarding_ops.hpp"
#include "mpi_test_main.hpp"
#include "optimizer_runs.hpp"
#include "resident_pages.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <map>
#include <stdexcept>

#include "ddplab/runtime/mlp.hpp"
#include "ddplab/runtime/plan_executor.hpp"
#include "ddplab/strategies/memory.hpp"
#include "ddplab/strategies/strategy.hpp"

namespace ddplab {
namespace {

const std::vector<int> kLayers = {20, 16, 12, 4};
constexpr int kBatch = 8, kSteps = 3;

class CountingOps final : public ForwardingOps {
 public:
  float* alloc(std::size_t n) override {
    float* p = ForwardingOps::alloc(n);
    live_[p] = n * sizeof(float);
    return p;
  }
  void free(float* p) override {
    live_.erase(p);
    ForwardingOps::free(p);
  }
  double live_bytes() const {
    double sum = 0;
    for (const auto& [p, bytes] : live_) sum += static_cast<double>(bytes);
    return sum;
  }

 private:
  std::map<float*, std::size_t> live_;
};

std::vector<StrategyConfig> configs(int world) {
  std::vector<StrategyConfig> out;
  for (const PolicyInfo& p : policies()) {
    StrategyConfig c;
    c.name = p.name;
    c.policy = p.name;
    c.schedule = p.shards == Shards::Servers ? "native" : "ring";
    c.bucket_cap = 256;  // several buckets, so that shards are cut from each
    c.first_bucket_cap = 128;
    out.push_back(c);
    if (p.shards == Shards::Servers && world > 1) {
      c.name += "-dedicated";
      c.policy_options["ps_servers"] = "1";
      out.push_back(c);
    }
  }
  return out;
}

// The first of configs() (its bucket caps) under `policy` on the ring.
StrategyConfig ring_config(int world, const std::string& policy) {
  StrategyConfig c = configs(world).front();
  c.name = c.policy = policy;
  c.schedule = "ring";
  return c;
}

// kBatch per rank, every rank on one node.
StrategyContext one_node_context(int world) {
  StrategyContext ctx;
  ctx.world_size = world;
  ctx.ranks_per_node = world;
  ctx.batch_size = kBatch;
  return ctx;
}

TEST(DeviceMemory, TheRuntimeAllocatesWhatTheModelSays) {
  Communicator& comm = *g_comm;
  const int rank = comm.rank();
  for (const OptimizerConfig& oc : test::optimizer_runs({}))
    for (const StrategyConfig& c : configs(comm.size())) {
      const OptimizerInfo& info = *find_optimizer(oc.name);
      if (!optimizer_runs_with(info, *find_policy(c.policy))) continue;  // refused
      SCOPED_TRACE(c.name + " " + oc.name + " on rank " + std::to_string(rank));
      const StrategyContext ctx = one_node_context(comm.size());
      Strategy strategy(c, ModelSpec::mlp(kLayers), ctx);
      const DeviceMemory want = device_memory(strategy, rank, info, kSteps);

      CountingOps ops;
      Mlp model(ops, kLayers, kBatch);
      model.init(7);
      // The model: its parameters, gradients and layer outputs, and the two layer-wide buffers of its
      // backward, which the memory model leaves out. A dedicated server allocates the activations too,
      // though it runs no forward.
      const double widest = *std::max_element(kLayers.begin(), kLayers.end());
      double outputs = 0;
      for (const LayerSpec& l : model.spec().layers) outputs += l.activation_bytes * kBatch;
      EXPECT_EQ(want.activations, strategy.is_worker(rank) ? outputs : 0.0);
      // The gradients are allocated whole; ZeRO-2 gives back what is outside the shard during the step
      // (ZeroTwoKeepsOnlyItsShardOfTheGradients).
      const double whole_grads = sizeof(float) * static_cast<double>(model.num_params());
      double shard = 0;
      for (const Chunk& ch : strategy.optimizer_ranges(rank)) shard += sizeof(float) * static_cast<double>(ch.count);
      EXPECT_EQ(want.gradients, find_policy(c.policy)->zero >= 2 ? shard : whole_grads);
      EXPECT_EQ(ops.live_bytes(), want.parameters + whole_grads + outputs + 2 * kBatch * widest * sizeof(float));
      const double before = ops.live_bytes();
      {
        PlanExecutor exec(comm, ops, model, strategy, oc);
        // The executor: the optimizer state and NormSync's one float.
        EXPECT_EQ(ops.live_bytes() - before, want.optimizer + sizeof(float));
        std::vector<float> x(static_cast<std::size_t>(kBatch * kLayers.front()), 0.5f);
        std::vector<std::int32_t> y(kBatch, 1);
        float* dx = ops.alloc(x.size());
        std::int32_t* dy = ops.alloc_labels(y.size());
        ops.to_device(dx, x.data(), x.size());
        ops.labels_to_device(dy, y.data(), y.size());
        const double inputs = ops.live_bytes() - (before + want.optimizer + sizeof(float));
        for (int s = 0; s < kSteps; ++s) exec.run_step(s, dx, dy, kBatch);
        // The buckets may have been rebuilt after the first step (and the shards with them): the state is
        // that of the new layout.
        const DeviceMemory now = device_memory(strategy, rank, info, kSteps);
        EXPECT_EQ(ops.live_bytes() - before - inputs, now.optimizer + sizeof(float))
            << (strategy.rebuilt() ? "after the bucket rebuild" : "without a bucket rebuild");
        ops.free(dx);
        ops.free_labels(dy);
      }
      // Sharding divides the optimizer state over the ranks that update it: summed over the ranks, it is
      // the whole model's, once.
      double summed = 0;
      for (int r = 0; r < comm.size(); ++r) summed += device_memory(strategy, r, info, kSteps).optimizer;
      const double slots = info.state_slots + (info.scratch ? 1 : 0);
      const double whole = slots * sizeof(float) * static_cast<double>(model.num_params());
      EXPECT_EQ(summed, find_policy(c.policy)->shards == Shards::None ? comm.size() * whole : whole);
    }
}

// A batch of kBatch inputs and labels of its own for each rank (host memory: the CPU backend's).
std::pair<std::vector<float>, std::vector<std::int32_t>> rank_batch(int rank, const std::vector<int>& layers) {
  std::vector<float> x(static_cast<std::size_t>(kBatch * layers.front()));
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 7 + static_cast<std::size_t>(rank) * 3) % 11) / 11.0f;
  std::vector<std::int32_t> y(kBatch);
  for (std::size_t i = 0; i < y.size(); ++i) y[i] = static_cast<std::int32_t>((i + static_cast<std::size_t>(rank)) % layers.back());
  return {x, y};
}

// The state moves with the shards when the buckets are rebuilt after the first step: ZeRO-1 (reduce-scatter,
// update of the chunk, all-gather) trains as DDP does, Adam's moments carried over. Their sums run in
// another order: after 6 steps on 3 ranks the parameters differ by at most 5.2e-8; with the moments of the
// moved ranges lost at the rebuild they differ by 0.028.
TEST(DeviceMemory, ShardedStateFollowsTheBucketRebuild) {
  Communicator& comm = *g_comm;
  const StrategyContext ctx = one_node_context(comm.size());
  OptimizerConfig oc;
  oc.name = "adam";
  oc.lr = LrPlan::constant(1e-2);
  auto train = [&](const std::string& policy, bool& rebuilt) {
    StrategyConfig c = ring_config(comm.size(), policy);
    Strategy strategy(c, ModelSpec::mlp(kLayers), ctx);
    auto ops = make_ops("cpu");
    Mlp model(*ops, kLayers, kBatch);
    model.init(7);
    const auto [x, y] = rank_batch(comm.rank(), kLayers);
    {
      PlanExecutor exec(comm, *ops, model, strategy, oc);
      for (int s = 0; s < 6; ++s) exec.run_step(s, x.data(), y.data(), kBatch);
    }
    rebuilt = strategy.rebuilt();
    return test::params_in_order(*ops, model);
  };
  bool ddp_rebuilt = false, zero_rebuilt = false;
  const std::vector<float> ddp = train("bucketed", ddp_rebuilt), zero = train("zero1", zero_rebuilt);
  EXPECT_TRUE(zero_rebuilt) << "no bucket rebuild: the test does not reach the reshard";
  ASSERT_EQ(ddp.size(), zero.size());
  double worst = 0;
  for (std::size_t i = 0; i < ddp.size(); ++i) worst = std::max(worst, std::abs(static_cast<double>(ddp[i]) - zero[i]));
  EXPECT_LT(worst, 1e-5) << "on rank " << comm.rank();
}

// ZeRO-2 in the runtime: once a bucket is reduce-scattered, the pages of its gradients outside the rank's
// shard go back to the system, so between steps the rank holds its shard of the gradients (what the memory
// model counts) to within the pages the shard boundaries cut; measured with mincore. It trains as ZeRO-1
// does, bit for bit (the released gradients are never read).
TEST(DeviceMemory, ZeroTwoKeepsOnlyItsShardOfTheGradients) {
  Communicator& comm = *g_comm;
  const std::vector<int> layers = {256, 256, 256, 10};  // 134,922 parameters: ~132 pages of gradients
  const StrategyContext ctx = one_node_context(comm.size());
  OptimizerConfig oc;
  oc.name = "sgd";
  oc.lr = LrPlan::constant(1e-2);
  const auto page = static_cast<double>(sysconf(_SC_PAGESIZE));
  std::map<std::string, std::vector<float>> trained;
  for (const char* policy : {"zero1", "zero2"}) {
    SCOPED_TRACE(std::string(policy) + " on rank " + std::to_string(comm.rank()));
    StrategyConfig c = ring_config(comm.size(), policy);
    c.bucket_cap = 100000, c.first_bucket_cap = 40000;  // a few buckets of many pages
    Strategy strategy(c, ModelSpec::mlp(layers), ctx);
    auto ops = make_ops("cpu");
    Mlp model(*ops, layers, kBatch);
    model.init(7);
    const auto [x, y] = rank_batch(comm.rank(), layers);
    {
      PlanExecutor exec(comm, *ops, model, strategy, oc);
      for (int s = 0; s < kSteps; ++s) {
        exec.run_step(s, x.data(), y.data(), kBatch);
        const double held = static_cast<double>(test::resident_bytes(model.grads(), model.num_params() * sizeof(float)));
        const double want = device_memory(strategy, comm.rank(), *find_optimizer("sgd"), s).gradients;
        const double whole = sizeof(float) * static_cast<double>(model.num_params());
        if (std::string(policy) == "zero1") {
          EXPECT_EQ(held, whole) << "step " << s;
        } else {
          // Each bucket's shard may hold on to a partial page at either end.
          const double slack = 2 * page * static_cast<double>(strategy.bucketing().buckets.size());
          EXPECT_LE(std::abs(held - want), slack) << "step " << s << ": " << held << " bytes of gradients held";
          // On several ranks the slack is smaller than what is given back, so keeping it all would fail.
          if (comm.size() > 1) {
            EXPECT_LT(slack, whole - want);
          }
        }
      }
    }
    trained[policy] = test::params_in_order(*ops, model);
  }
  EXPECT_EQ(trained["zero1"], trained["zero2"]);
}

}  // namespace
}  // namespace ddplab
