// Run under mpirun -np 4: the MLP and the CNN trained on model-parallel layouts (TP x DP, PP x DP, TP x PP,
// interleaved) through the real PlanExecutor, against pure data parallelism on as many replicas, for every policy that
// keeps replicas exact (no compression): PP with one microbatch computes the same sums in the same order and
// ends bit for bit on pure DP's parameters; TP and microbatches reorder sums, within a stated tolerance.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "mpi_test_main.hpp"
#include "optimizer_runs.hpp"
#include "small_cnn.hpp"

#include "ddplab/runtime/mlp.hpp"
#include "ddplab/runtime/model_parallel.hpp"
#include "ddplab/runtime/plan_executor.hpp"
#include "ddplab/runtime/split_model.hpp"
#include "ddplab/strategies/strategy.hpp"

namespace ddplab {
namespace {

constexpr int kBatch = 8, kSteps = 4;
const std::vector<int> kWidths{12, 8, 6, 4, 5};

// Replica d's batch of step s: samples [d * kBatch, (d + 1) * kBatch) of the step's global batch.
void batch(const ModelConfig& model, int s, int d, std::vector<float>& x, std::vector<std::int32_t>& y) {
  x.clear(), y.clear();
  for (int i = d * kBatch; i < (d + 1) * kBatch; ++i) {
    std::mt19937 rng(static_cast<unsigned>(1000 * s + i));
    std::normal_distribution<float> n(0.0f, 1.0f);
    for (int k = 0; k < model.input_features(); ++k) x.push_back(n(rng));
    y.push_back(static_cast<std::int32_t>(rng() % 5));
  }
}

OptimizerConfig sgd() {
  OptimizerConfig oc;
  oc.options = {{"momentum", "0.9"}};
  oc.lr = LrPlan::constant(0.1);
  return oc;
}

Scenario scenario(int tp, int pp, int microbatches, const std::string& schedule, int virtual_stages = 1,
                  bool cnn = false) {
  Scenario sc;
  sc.path = "<test>";
  sc.model.type = ModelType::Mlp;
  sc.model.layers = kWidths;
  if (cnn) sc.model = test::small_cnn(2, 6, 5);
  sc.train.batch_size = kBatch;
  sc.parallel.tp = tp, sc.parallel.pp = pp, sc.parallel.microbatches = microbatches;
  sc.parallel.pipeline_schedule = schedule, sc.parallel.virtual_stages = virtual_stages;
  return sc;
}

StrategyConfig strategy_config(const std::string& policy) {
  StrategyConfig c;
  c.policy = policy;
  c.schedule = "ring";
  c.bucket_cap = 60, c.first_bucket_cap = 30;  // several buckets per stage
  if (policy == "local_sgd") c.policy_options = {{"local_sgd_period", "2"}};
  return c;
}

struct Trained {
  std::vector<float> whole;    // the whole model's parameters, parameter order
  std::vector<double> losses;  // this rank's replica's loss per step (NaN where it holds no loss)
};

// kSteps of the scenario's layout on every rank of the world.
Trained split_run(const Scenario& sc, const std::string& policy) {
  Communicator& world = *g_comm;
  RankParallel rp(sc, world, world.size());
  auto ops = make_ops("cpu");
  const std::unique_ptr<Model> model = rp.make_model(*ops, sc.model, kBatch);
  model->init(3);
  Strategy strategy(strategy_config(policy), rp.stage().model, rp.stage().context);
  Trained out;
  {
    PlanExecutor exec(rp.data(), *ops, *model, strategy, sgd());
    rp.attach(exec);
    std::vector<float> x;
    std::vector<std::int32_t> y;
    for (int s = 0; s < kSteps; ++s) {
      batch(sc.model, s, rp.coord().dp, x, y);
      out.losses.push_back(exec.run_step(s, x.data(), y.data(), kBatch).loss);
    }
    exec.finish(kSteps);
  }
  out.whole = rp.whole_parameters(*model);
  return out;
}

// The same on `replicas` ranks of pure data parallelism (the world cut into groups of that many).
Trained pure_dp(const ModelConfig& config, const std::string& policy, int replicas) {
  Communicator& world = *g_comm;
  std::unique_ptr<Communicator> group = world.split(world.rank() / replicas);
  auto ops = make_ops("cpu");
  const std::unique_ptr<Model> owned = make_model(*ops, config, kBatch);
  Model& model = *owned;
  model.init(3);
  StrategyContext ctx{replicas, replicas, kBatch, 1};
  Strategy strategy(strategy_config(policy), model.spec(), ctx);
  Trained out;
  {
    PlanExecutor exec(*group, *ops, model, strategy, sgd());
    std::vector<float> x;
    std::vector<std::int32_t> y;
    for (int s = 0; s < kSteps; ++s) {
      batch(config, s, group->rank(), x, y);
      out.losses.push_back(exec.run_step(s, x.data(), y.data(), kBatch).loss);
    }
    exec.finish(kSteps);
  }
  out.whole = test::params_in_order(*ops, model);
  // Every rank learns every replica's losses (group 0's ranks are replicas 0, 1, ...), kSteps each.
  std::vector<double> all(static_cast<std::size_t>(world.size() * kSteps));
  std::copy(out.losses.begin(), out.losses.end(), all.begin() + world.rank() * kSteps);
  world.all_gather(all.data(), kSteps * sizeof(double));
  out.losses = all;
  return out;
}

struct Case {
  const char* name;
  Scenario sc;
  bool exact;  // the same sums in the same order as pure DP
};

std::vector<Case> cases() {
  return {
      {"PP 2 x DP 2, gpipe, 1 microbatch", scenario(1, 2, 1, "gpipe"), true},
      {"PP 2 x DP 2, 1f1b, 4 microbatches", scenario(1, 2, 4, "1f1b"), false},
      {"PP 2 x DP 2, interleaved x 2, 2 microbatches", scenario(1, 2, 2, "interleaved", 2), false},
      {"TP 2 x DP 2", scenario(2, 1, 1, "1f1b"), false},
      {"TP 2 x PP 2, 1f1b, 2 microbatches", scenario(2, 2, 2, "1f1b"), false},
      // The CNN: its layers are marked for no TP split, so the TP ranks hold them whole and run the same sums.
      {"CNN, PP 2 x DP 2, gpipe, 1 microbatch", scenario(1, 2, 1, "gpipe", 1, true), true},
      {"CNN, PP 2 x DP 2, 1f1b, 4 microbatches", scenario(1, 2, 4, "1f1b", 1, true), false},
      {"CNN, TP 2 x DP 2", scenario(2, 1, 1, "1f1b", 1, true), true},
  };
}

TEST(ModelParallel, EveryLayoutTrainsAsPureDataParallelism) {
  if (g_comm->size() != 4) GTEST_SKIP() << "the layouts are of 4 ranks";
  for (const Case& c : cases()) {
    const ParallelLayout layout(c.sc.parallel, 4);
    const RankCoord me = layout.coord(g_comm->rank());
    for (const PolicyInfo& p : policies()) {
      if (p.shards == Shards::Servers || p.zero >= 3) continue;  // refused with a split model (validate_parallel)
      const Trained want = pure_dp(c.sc.model, p.name, layout.dp());
      const Trained got = split_run(c.sc, p.name);
      const std::string what = std::string(c.name) + ", " + p.name + " on rank " + std::to_string(g_comm->rank());
      ASSERT_EQ(got.whole.size(), want.whole.size()) << what;
      if (c.exact) {
        EXPECT_EQ(got.whole, want.whole) << what;
      } else {
        double worst = 0;
        for (std::size_t i = 0; i < want.whole.size(); ++i)
          worst = std::max(worst, std::abs(static_cast<double>(got.whole[i]) - want.whole[i]) /
                                      (1e-6 + 1e-5 * std::abs(want.whole[i])));
        EXPECT_LE(worst, 1.0) << what;
      }
      for (int s = 0; s < kSteps; ++s) {
        const double l = got.losses[static_cast<std::size_t>(s)],
                     w = want.losses[static_cast<std::size_t>(me.dp * kSteps + s)];
        if (me.pp + 1 < layout.pp()) {
          EXPECT_TRUE(std::isnan(l)) << what << ": a first stage has no loss";
        } else if (c.exact) {
          EXPECT_EQ(l, w) << what << " step " << s;
        } else {
          EXPECT_NEAR(l, w, 1e-5 * std::abs(w)) << what << " step " << s;
        }
      }
    }
  }
}

}  // namespace
}  // namespace ddplab
