// Run under mpirun: SyncBatchNorm in the PlanExecutor. Each rank holds its slice of one global batch; with
// bn = "sync" a step on n ranks is the step of one replica on the whole batch (its statistics and their
// gradient summed over the ranks by the plan's sync_bn ops), for every policy that updates exactly; with
// bn = "local" it is not. A rank without a batch (join) adds nothing to the statistics.
#include <gtest/gtest.h>

#include <random>

#include "forwarding_ops.hpp"
#include "mpi_test_main.hpp"
#include "small_cnn.hpp"
#include "optimizer_runs.hpp"

#include "ddplab/runtime/cnn.hpp"
#include "ddplab/runtime/model_optimizer.hpp"
#include "ddplab/runtime/plan_executor.hpp"
#include "ddplab/strategies/strategy.hpp"

namespace ddplab {
namespace {

constexpr int kBatch = 3, kSteps = 2;
constexpr float kLr = 0.1f;

ModelConfig cnn(const std::string& bn) { return test::small_cnn(1, 6, 3, bn); }

// Samples [first, first + count) of step s's global batch (deterministic).
void batch(int s, int first, int count, std::vector<float>& x, std::vector<std::int32_t>& y) {
  x.clear(), y.clear();
  for (int i = first; i < first + count; ++i) {
    std::mt19937 rng(static_cast<unsigned>(1000 * s + i));
    std::normal_distribution<float> d(0.5f, 1.0f);
    for (int k = 0; k < 64; ++k) x.push_back(d(rng));
    y.push_back(static_cast<std::int32_t>(rng() % 3));
  }
}

OptimizerConfig sgd() {
  OptimizerConfig oc;
  oc.options = {{"momentum", "0"}};
  oc.lr = LrPlan::constant(kLr);
  return oc;
}

struct Result {
  std::vector<float> params, running;
};

// Parameters in PyTorch order (the executor moved them bucket by bucket), running statistics as they are.
Result read(Ops& ops, Model& m) {
  Result r{test::params_in_order(ops, m), std::vector<float>(m.num_buffers())};
  ops.to_host(r.running.data(), m.buffers(), r.running.size());
  return r;
}

// kSteps on this rank's slice; `active` ranks take a batch, the rest shadow (join).
Result distributed(const std::string& policy, const std::string& bn, int active, bool staged = false) {
  Communicator& comm = *g_comm;
  std::unique_ptr<Ops> ops = staged ? std::make_unique<StagedCpuOps>() : make_ops("cpu");
  Cnn model(*ops, cnn(bn), kBatch);
  model.init(5);
  StrategyConfig c;
  c.policy = policy;
  c.schedule = "ring";
  c.bucket_cap = 400, c.first_bucket_cap = 100;  // several buckets
  Strategy strategy(c, model.spec(), {comm.size(), 1, kBatch, 1});
  const bool mine = comm.rank() < active;
  {
    PlanExecutor exec(comm, *ops, model, strategy, sgd());
    exec.set_grad_divisor(active);
    std::vector<float> x;
    std::vector<std::int32_t> y;
    for (int s = 0; s < kSteps; ++s) {
      batch(s, comm.rank() * kBatch, kBatch, x, y);
      exec.run_step(s, x.data(), y.data(), mine ? kBatch : 0);
    }
    exec.gather_parameters();  // ZeRO-3: the whole model
  }
  return read(*ops, model);
}

// One replica on every active rank's samples at once (its batch norm needs no sync).
Result whole_batch(int active) {
  auto ops = make_ops("cpu");
  Cnn model(*ops, cnn("local"), kBatch * active);
  model.init(5);
  ModelOptimizer opt(*ops, model, sgd());
  std::vector<float> x;
  std::vector<std::int32_t> y;
  for (int s = 0; s < kSteps; ++s) {
    batch(s, 0, kBatch * active, x, y);
    model.forward(x.data(), kBatch * active);
    model.backward(y.data());
    opt.step(s + 1);
  }
  return read(*ops, model);
}

double worst(const std::vector<float>& got, const std::vector<float>& want) {
  EXPECT_EQ(got.size(), want.size());
  double w = 0;
  for (std::size_t i = 0; i < want.size() && i < got.size(); ++i)
    w = std::max(w, std::abs(static_cast<double>(got[i]) - want[i]) / (1e-5 + 1e-4 * std::abs(want[i])));
  return w;
}

TEST(SyncBatchNorm, EveryExactPolicyStepsAsOneReplicaOnTheWholeBatch) {
  const int n = g_comm->size();
  const Result want = whole_batch(n);
  for (const PolicyInfo& p : policies()) {
    if (p.name == "local_sgd" || p.shards == Shards::Servers)
      continue;  // parameters averaged / served: not one replica
    const Result got = distributed(p.name, "sync", n);
    EXPECT_LE(worst(got.params, want.params), 1.0) << p.name << " on rank " << g_comm->rank();
    EXPECT_LE(worst(got.running, want.running), 1.0) << p.name << ": running statistics on rank " << g_comm->rank();
  }
  if (n > 1) {  // per-replica statistics are another model
    EXPECT_GT(worst(distributed("overlap", "local", n).params, want.params), 10.0);
  }
}

TEST(SyncBatchNorm, StagedThroughHostMemoryGivesTheSameBits) {
  // cuda+mpi stages the sync ops' buffers through host memory; a shadowing rank stages its zeros.
  for (int active : {g_comm->size(), std::max(1, g_comm->size() - 1)}) {
    const Result plain = distributed("overlap", "sync", active), staged = distributed("overlap", "sync", active, true);
    EXPECT_EQ(staged.params, plain.params) << active << " ranks with a batch, on rank " << g_comm->rank();
    EXPECT_EQ(staged.running, plain.running) << active << " ranks with a batch, on rank " << g_comm->rank();
  }
}

TEST(SyncBatchNorm, AShadowRankAddsNothing) {
  const int n = g_comm->size();
  if (n < 2) GTEST_SKIP() << "needs a second rank to shadow";
  const Result got = distributed("overlap", "sync", n - 1), want = whole_batch(n - 1);
  EXPECT_LE(worst(got.params, want.params), 1.0) << "on rank " << g_comm->rank();
  EXPECT_LE(worst(got.running, want.running), 1.0) << "on rank " << g_comm->rank();
}

}  // namespace
}  // namespace ddplab
