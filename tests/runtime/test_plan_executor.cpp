// PlanExecutor's comm thread on one process (no MPI): a bucket's collective starts once the backward op
// that completes the bucket is done, while the rest of backward still runs (policy overlap, as PyTorch DDP).
#include <gtest/gtest.h>

#include <algorithm>
#include <random>
#include <vector>

#include "ddplab/runtime/communicator.hpp"
#include "ddplab/runtime/mlp.hpp"
#include "ddplab/runtime/ops.hpp"
#include "ddplab/runtime/plan_executor.hpp"
#include "ddplab/strategies/strategy.hpp"

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
      EXPECT_LT(first_sync, backward_end) << "step " << step << ": first bucket's collective started at "
                                          << first_sync * 1e3 << " ms, backward ended at " << backward_end * 1e3 << " ms";
    }
  }
  ops->free_labels(y);
}

}  // namespace
}  // namespace ddplab
