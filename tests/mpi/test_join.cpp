// Run under mpirun: data.uneven = "join" in the PlanExecutor. The last rank has run out of data (batch 0):
// it computes nothing, syncs zero gradients, and still updates, so all ranks keep the same parameters. One
// SGD step (no momentum) must move them by lr x the sum of the training ranks' gradients over the ranks still
// training, or over every rank (join_divide_by_initial), checked against each rank's own gradients.
#include <gtest/gtest.h>

#include <random>

#include "mpi_test_main.hpp"
#include "optimizer_runs.hpp"

#include "ddplab/runtime/mlp.hpp"
#include "ddplab/runtime/ops.hpp"
#include "ddplab/runtime/plan_executor.hpp"
#include "ddplab/strategies/strategy.hpp"

namespace ddplab {
namespace {

const std::vector<int> kLayers = {12, 8, 3};
constexpr int kBatch = 4;
constexpr float kLr = 0.5f;

struct Batch {
  std::vector<float> x;
  std::vector<std::int32_t> y;
};
Batch batch_of(int rank) {
  std::mt19937 rng(static_cast<unsigned>(40 + rank));
  std::normal_distribution<float> d;
  Batch b{std::vector<float>(kBatch * kLayers.front()), std::vector<std::int32_t>(kBatch)};
  for (float& v : b.x) v = d(rng);
  for (auto& v : b.y) v = static_cast<std::int32_t>(rng() % 3);
  return b;
}

// Parameters (PyTorch order) after one step in which the last rank shadows.
std::vector<float> one_step(const std::string& policy, int divisor) {
  Communicator& comm = *g_comm;
  auto ops = make_ops("cpu");
  Mlp model(*ops, kLayers, kBatch);
  model.init(5);
  StrategyConfig c;
  c.policy = policy;
  c.schedule = "ring";
  c.bucket_cap = 200, c.first_bucket_cap = 64;
  Strategy strategy(c, ModelSpec::mlp(kLayers), {comm.size(), 1, kBatch, 1});
  OptimizerConfig oc;
  oc.options = {{"momentum", "0"}};
  oc.lr = LrPlan::constant(kLr);
  const bool shadow = comm.rank() == comm.size() - 1;
  const Batch b = batch_of(comm.rank());
  {
    PlanExecutor exec(comm, *ops, model, strategy, oc);
    // Stale gradients, as a previous step leaves them: backward overwrites them, and a shadow must zero them.
    const std::vector<float> stale(model.num_params(), 7.0f);
    ops->to_device(model.grads(), stale.data(), stale.size());
    exec.set_grad_divisor(divisor);
    exec.run_step(0, b.x.data(), b.y.data(), shadow ? 0 : kBatch);
  }
  return test::params_in_order(*ops, model);
}

TEST(Join, AShadowRankSyncsZerosAndTheSumDividesByTheRanksTraining) {
  Communicator& comm = *g_comm;
  const int n = comm.size();
  if (n < 2) GTEST_SKIP() << "needs a rank that trains and one that shadows";
  // The reference: every rank's own gradients, summed over the ranks that train.
  auto ops = make_ops("cpu");
  Mlp ref(*ops, kLayers, kBatch);
  ref.init(5);
  const Batch b = batch_of(comm.rank());
  ref.forward(b.x.data(), kBatch);
  ref.backward(b.y.data());
  std::vector<double> g(ref.num_params(), 0.0), p0(ref.num_params());
  std::vector<float> gf(ref.num_params()), pf(ref.num_params());
  ops->to_host(gf.data(), ref.grads(), gf.size());
  ops->to_host(pf.data(), ref.params(), pf.size());
  for (std::size_t i = 0; i < g.size(); ++i) g[i] = comm.rank() == n - 1 ? 0.0 : gf[i], p0[i] = pf[i];
  comm.allreduce_sum(g.data(), g.size());
  for (const char* policy : {"overlap", "zero1"})
    for (const int divisor : {n - 1, n}) {  // the ranks training, and every rank (join_divide_by_initial)
      const std::vector<float> got = one_step(policy, divisor);
      std::vector<float> all(got.size() * static_cast<std::size_t>(n));  // every rank's parameters
      std::copy(got.begin(), got.end(),
                all.begin() + static_cast<std::ptrdiff_t>(got.size() * static_cast<std::size_t>(comm.rank())));
      comm.all_gather(all.data(), got.size() * sizeof(float));
      for (std::size_t i = 0; i < got.size(); ++i) {
        ASSERT_NEAR(got[i], p0[i] - kLr * g[i] / divisor, 1e-6) << policy << " divisor " << divisor << " element " << i;
        for (int r = 0; r < n; ++r)
          ASSERT_EQ(all[static_cast<std::size_t>(r) * got.size() + i], got[i])
              << policy << ": rank " << r << " differs";
      }
    }
}

}  // namespace
}  // namespace ddplab
