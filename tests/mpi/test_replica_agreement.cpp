// Run under mpirun: ReplicaAgreement (replica_agreement.hpp) says, from the plans alone, after which steps the
// replicas' parameters are equal. For every registered policy, on real ranks with different batches, it must
// say so exactly when the workers' parameters are equal bit for bit: local SGD's replicas part between its
// syncs and meet at each one; every other policy keeps them equal at every step.
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "ddplab/runtime/mlp.hpp"
#include "ddplab/runtime/ops.hpp"
#include "ddplab/runtime/plan_executor.hpp"
#include "ddplab/strategies/optimizer.hpp"
#include "ddplab/strategies/replica_agreement.hpp"
#include "ddplab/strategies/strategy.hpp"
#include "mpi_test_main.hpp"

namespace ddplab {
namespace {

const std::vector<int> kLayers = {20, 16, 12, 4};
constexpr int kBatch = 8, kSteps = 7;

// Whether every worker holds the same parameters, bit for bit (every rank learns it).
bool workers_equal(Ops& ops, Mlp& model, const Strategy& strategy) {
  Communicator& comm = *g_comm;
  std::vector<float> mine(model.num_params());
  ops.to_host(mine.data(), model.params(), mine.size());
  std::vector<float> all(mine.size() * static_cast<std::size_t>(comm.size()));
  std::memcpy(all.data() + mine.size() * static_cast<std::size_t>(comm.rank()), mine.data(),
              mine.size() * sizeof(float));
  comm.all_gather(all.data(), mine.size() * sizeof(float));
  const float* first = nullptr;
  for (int r = 0; r < comm.size(); ++r) {
    if (!strategy.is_worker(r)) continue;
    const float* p = all.data() + mine.size() * static_cast<std::size_t>(r);
    if (!first)
      first = p;
    else if (std::memcmp(first, p, mine.size() * sizeof(float)) != 0)
      return false;
  }
  return true;
}

// Per step: (what ReplicaAgreement says, what the parameters are).
std::vector<std::pair<bool, bool>> run(const StrategyConfig& config) {
  Communicator& comm = *g_comm;
  auto ops = make_ops("cpu");
  Mlp model(*ops, kLayers, kBatch);
  model.init(7);
  StrategyContext ctx;
  ctx.world_size = comm.size();
  ctx.ranks_per_node = comm.size();
  ctx.batch_size = kBatch;
  Strategy strategy(config, ModelSpec::mlp(kLayers), ctx);
  const OptimizerConfig oc;  // sgd at a constant 0.05
  std::vector<std::pair<bool, bool>> out;
  PlanExecutor exec(comm, *ops, model, strategy, oc);
  ReplicaAgreement agreement;
  std::mt19937 rng(static_cast<unsigned>(100 + comm.rank()));  // different batches on every rank
  std::normal_distribution<float> x01;
  std::vector<float> x(static_cast<std::size_t>(kBatch * kLayers.front()));
  std::vector<std::int32_t> y(kBatch);
  float* dx = ops->alloc(x.size());
  std::int32_t* dy = ops->alloc_labels(y.size());
  for (int s = 0; s < kSteps; ++s) {
    for (float& v : x) v = x01(rng);
    for (std::size_t i = 0; i < y.size(); ++i) y[i] = static_cast<std::int32_t>((rng() >> 3) % 4);
    ops->to_device(dx, x.data(), x.size());
    ops->labels_to_device(dy, y.data(), y.size());
    exec.run_step(s, dx, dy, strategy.is_worker(comm.rank()) ? kBatch : 0);
    agreement.after(strategy.plan(s), strategy.bucketing().buckets.size());
    exec.gather_parameters();  // ZeRO-3 holds shards between steps; the trainer gathers them before its checks too
    out.emplace_back(agreement.agree(), workers_equal(*ops, model, strategy));
  }
  exec.finish(kSteps);
  ops->free(dx);
  ops->free_labels(dy);
  return out;
}

TEST(ReplicaAgreement, SaysExactlyWhenEveryPolicysReplicasAreEqual) {
  if (g_comm->size() < 2) GTEST_SKIP() << "one rank is always in agreement with itself";
  std::vector<StrategyConfig> configs;
  for (const PolicyInfo& p : policies()) {
    StrategyConfig c;
    c.name = c.policy = p.name;
    c.schedule = p.shards == Shards::Servers ? "native" : "ring";
    c.bucket_cap = 256;
    c.first_bucket_cap = 128;
    configs.push_back(c);
  }
  StrategyConfig local = configs.front();
  local.policy = "local_sgd";
  local.name = local.policy;
  local.policy_options = {{"local_sgd_period", "3"}};
  configs.push_back(local);
  StrategyConfig accumulate = configs.front();
  accumulate.policy = "overlap";
  accumulate.name = "overlap-accumulate2";
  accumulate.accumulate_steps = 2;
  configs.push_back(accumulate);
  bool some_disagree = false;
  for (const StrategyConfig& c : configs) {
    const auto steps = run(c);
    for (std::size_t s = 0; s < steps.size(); ++s) {
      EXPECT_EQ(steps[s].first, steps[s].second)
          << c.name << " after step " << s << ": ReplicaAgreement says " << (steps[s].first ? "equal" : "different");
      some_disagree |= !steps[s].first;
    }
  }
  EXPECT_TRUE(some_disagree) << "no policy let the replicas part: the check above proved nothing about parting";
}

}  // namespace
}  // namespace ddplab
