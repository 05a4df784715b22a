// PlanExecutor's comm thread on one process (no MPI): a bucket's collective starts once the backward op
// that completes the bucket is done, while the rest of backward still runs (policy overlap, as PyTorch DDP).
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <vector>

#include "ddplab/core/error.hpp"
#include "ddplab/runtime/communicator.hpp"
#include "ddplab/runtime/mlp.hpp"
#include "ddplab/runtime/ops.hpp"
#include "ddplab/runtime/plan_executor.hpp"
#include "ddplab/strategies/strategy.hpp"
#include "forwarding_ops.hpp"
#include "optimizer_runs.hpp"

namespace ddplab {
namespace {

TEST(PlanExecutor, OverlapStartsABucketWhileBackwardRuns) {
  // Backward of the two 1024-wide layers takes about 100 ms at batch 1024 (long enough that a comm thread
  // kept waiting for a core by other tests, as under ctest -j2, still starts inside it); the last layer's
  // small bucket is ready after its own backward op, long before. The plan lists every sync after the whole
  // backward pass, so a comm thread that only got ops as the compute loop reached them started none early.
  const std::vector<int> layers = {784, 1024, 1024, 10};
  const int batch = 1024;
  auto comm = make_single_process_communicator();
  auto ops = make_ops("cpu");
  Mlp model(*ops, layers, batch);
  model.init(3);
  StrategyConfig cfg;
  cfg.name = "overlap";
  cfg.policy = "overlap";
  cfg.schedule = "ring";
  cfg.bucket_cap = 1u << 20;
  cfg.first_bucket_cap = 64u << 10;  // the last layer (10 x 1024 weights + bias) and little more
  Strategy strategy(cfg, ModelSpec::mlp(layers), {1, 1, batch, 3});
  DeviceBuffer x(*ops, static_cast<std::size_t>(batch) * layers.front());
  std::int32_t* y = ops->alloc_labels(batch);
  std::mt19937 rng(5);
  std::vector<float> hx(static_cast<std::size_t>(batch) * layers.front());
  for (float& v : hx) v = std::uniform_real_distribution<float>(0, 1)(rng);
  std::vector<std::int32_t> hy(batch);
  for (auto& v : hy) v = static_cast<std::int32_t>(rng() % 10);
  ops->to_device(x.data(), hx.data(), hx.size());
  ops->labels_to_device(y, hy.data(), hy.size());
  {
    PlanExecutor exec(*comm, *ops, model, strategy, OptimizerConfig{});
    for (int step = 0; step < 3; ++step) {  // step 0 rebuilds the buckets from the observed order
      const StepRecord rec = exec.run_step(step, x.data(), y, batch);
      double first_sync = 1e30, backward_end = 0;
      int syncs = 0;
      for (const OpRecord& op : rec.ops) {
        if (op.kind == OpKind::SyncGrads) first_sync = std::min(first_sync, op.start_s), ++syncs;
        if (op.kind == OpKind::Backward) backward_end = std::max(backward_end, op.end_s);
      }
      ASSERT_GE(syncs, 2) << "step " << step << ": the caps should give several buckets";
      EXPECT_LT(first_sync, backward_end)
          << "step " << step << ": first bucket's collective started at " << first_sync * 1e3
          << " ms, backward ended at " << backward_end * 1e3 << " ms";
    }
  }
  ops->free_labels(y);
}

// Clipping as torch.nn.utils.clip_grad_norm_: one SGD step (no momentum) moves the parameters by
// lr g min(1, max_norm / (||g|| + 1e-6)), ||g|| over every gradient of the model.
TEST(PlanExecutor, ClipsTheGlobalGradientNorm) {
  const std::vector<int> layers = {20, 16, 4};
  const int batch = 8;
  auto comm = make_single_process_communicator();
  auto ops = make_ops("cpu");
  std::mt19937 rng(9);
  std::vector<float> x(static_cast<std::size_t>(batch) * layers.front());
  for (float& v : x) v = std::normal_distribution<float>()(rng);
  const std::vector<std::int32_t> y = {0, 1, 2, 3, 0, 1, 2, 3};
  // The reference: the same model's gradients, computed directly.
  Mlp ref(*ops, layers, batch);
  ref.init(4);
  ref.forward(x.data(), batch);
  ref.backward(y.data());
  std::vector<float> p0 = test::params_in_order(*ops, ref), g(ref.num_params());
  ops->to_host(g.data(), ref.grads(), g.size());
  double sq = 0;
  for (float v : g) sq += static_cast<double>(v) * v;
  const double norm = std::sqrt(sq);
  for (const char* policy : {"flat", "overlap", "zero1"}) {
    for (const double max_norm : {0.1 * norm, 10 * norm}) {  // clipped, and left alone
      Mlp model(*ops, layers, batch);
      model.init(4);
      StrategyConfig cfg;
      cfg.policy = policy;
      cfg.schedule = "ring";
      cfg.bucket_cap = 256, cfg.first_bucket_cap = 64;
      Strategy strategy(cfg, ModelSpec::mlp(layers), {1, 1, batch, 1, true});
      OptimizerConfig oc;
      oc.options = {{"momentum", "0"}};
      oc.lr = LrPlan::constant(0.5);
      oc.clip_grad_norm = max_norm;
      {
        PlanExecutor exec(*comm, *ops, model, strategy, oc);
        exec.run_step(0, x.data(), y.data(), batch);
      }
      const std::vector<float> got = test::params_in_order(*ops, model);
      const double factor = std::min(1.0, max_norm / (norm + 1e-6));
      for (std::size_t i = 0; i < got.size(); ++i)
        ASSERT_NEAR(got[i], p0[i] - 0.5 * factor * g[i], 1e-6)
            << policy << " max_norm " << max_norm << " element " << i;
    }
  }
  // A plan without the norm's ops cannot clip: the executor refuses rather than silently not clipping.
  Mlp model(*ops, layers, batch);
  Strategy plain(StrategyConfig{}, ModelSpec::mlp(layers), {1, 1, batch, 1, false});
  OptimizerConfig oc;
  oc.clip_grad_norm = 1.0;
  EXPECT_THROW(PlanExecutor(*comm, *ops, model, plain, oc), InternalError);
}

// ZeRO-2 gives memory back (Ops::release); a backend that cannot is refused before the first step, by name.
TEST(PlanExecutor, ZeroTwoNeedsABackendThatReleasesMemory) {
  class Whole final : public ForwardingOps {
   public:
    std::string name() const override { return "whole"; }
    bool can_release() const override { return false; }
  } ops;
  auto comm = make_single_process_communicator();
  const std::vector<int> layers = {8, 4};
  Mlp model(ops, layers, 2);
  StrategyConfig cfg;
  cfg.name = cfg.policy = "zero2";
  cfg.schedule = "ring";
  Strategy strategy(cfg, ModelSpec::mlp(layers), {1, 1, 2, 3});
  try {
    PlanExecutor exec(*comm, ops, model, strategy, OptimizerConfig{});
    FAIL() << "zero2 ran on a backend that cannot release memory";
  } catch (const ddplab::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("policy \"zero2\" gives back the gradients outside a rank's shard"),
              std::string::npos)
        << e.what();
    EXPECT_NE(std::string(e.what()).find("backend \"whole\" cannot"), std::string::npos) << e.what();
  }
  cfg.name = cfg.policy = "zero1";  // keeps its gradients whole: runs anywhere
  Strategy zero1(cfg, ModelSpec::mlp(layers), {1, 1, 2, 3});
  EXPECT_NO_THROW(PlanExecutor(*comm, ops, model, zero1, OptimizerConfig{}));
}

}  // namespace
}  // namespace ddplab
