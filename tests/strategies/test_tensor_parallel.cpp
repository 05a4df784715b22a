// Tensor parallelism on a ModelSpec and in the plan: what a rank of the TP group holds (checked against
// the closed-form count of transformer_memory.hpp, an independent implementation), and the allreduces the
// plan puts on its critical path.
#include <gtest/gtest.h>

#include <fstream>
#include <string>

#include "ddplab/core/error.hpp"
#include "ddplab/strategies/model_library.hpp"
#include "ddplab/strategies/stages.hpp"
#include "ddplab/strategies/tensor_parallel.hpp"
#include "ddplab/strategies/transformer_memory.hpp"

namespace ddplab {
namespace {

TEST(TensorParallel, Gpt3SharesMatchMegatronsCount) {
  const ModelSpec gpt3 = load_model_table("gpt3_175b");
  const TransformerDims d{96, 12288, 96, 2048, 51200};
  for (int t : {1, 2, 4, 8}) {
    TransformerLayout l;
    l.tp = t;
    EXPECT_EQ(static_cast<double>(tensor_parallel_shard(gpt3, t).parameter_count()), device_parameters(d, l, 0))
        << "tp " << t;
  }
  // With 8 stages, the first and the middle ones as Megatron-LM holds them. The last holds no copy of the
  // tied word embedding here: Megatron-LM's, and its gradient allreduce with the first stage, are not modelled.
  Scenario sc;
  sc.parallel.tp = 8;
  sc.parallel.pp = 8;
  sc.parallel.microbatches = 1;
  sc.train.batch_size = 1;
  const auto stages = stage_specs(sc, gpt3, ParallelLayout(sc.parallel, 64), 8);
  TransformerLayout l;
  l.tp = 8, l.pp = 8;
  EXPECT_EQ(static_cast<double>(stages[0].model.parameter_count()), device_parameters(d, l, 0));
  EXPECT_EQ(static_cast<double>(stages[3].model.parameter_count()), device_parameters(d, l, 3));
  EXPECT_EQ(static_cast<double>(stages[7].model.parameter_count()), device_parameters(d, l, 7) - 51200.0 * 12288 / 8);
  EXPECT_EQ(stages[0].context.tp, 8);
  EXPECT_EQ(stages[0].context.tp_ranks_per_node, 8);
  EXPECT_EQ(stages[0].context.world_size, 1) << "DP 1";
}

TEST(TensorParallel, SharesWorkAndMarksTheAllreduces) {
  const ModelSpec mlp = ModelSpec::mlp({784, 64, 32, 10});  // column, row, then the classifier replicated
  const ModelSpec half = tensor_parallel_shard(mlp, 2);
  EXPECT_EQ(half.layers[0].tp, TpSplit::Column);
  EXPECT_DOUBLE_EQ(half.layers[0].forward_flops, mlp.layers[0].forward_flops / 2);
  EXPECT_DOUBLE_EQ(half.layers[0].activation_bytes, 4.0 * 32) << "half of the 64 outputs";
  EXPECT_DOUBLE_EQ(half.layers[0].tp_sync_bytes, 0) << "the first layer's input is the data";
  EXPECT_DOUBLE_EQ(half.layers[1].tp_sync_bytes, 4.0 * 32) << "the row layer's whole output, allreduced";
  EXPECT_DOUBLE_EQ(half.layers[1].activation_bytes, 4.0 * 32);
  EXPECT_DOUBLE_EQ(half.layers[2].forward_flops, mlp.layers[2].forward_flops) << "replicated";
  // 784 x 32 + 32 (column: weight and bias split), 32 x 32 + 32 (row: weight split, bias whole), 10 x 32 + 10.
  EXPECT_EQ(half.parameter_count(), 784u * 32 + 32 + 32 * 32 + 32 + 10 * 32 + 10);
  EXPECT_THROW(tensor_parallel_shard(ModelSpec::mlp({784, 63, 10}), 2), ddplab::InputError) << "63 outputs over 2";
}

// A scenario at tp = 2 (dp = 2 at 4 ranks): the pass is a one-stage pipeline of one microbatch; each
// row-parallel layer's forward and each column-parallel layer's backward (but the first's) end in a TpSync
// on the TP group, natively, before the next pass needs it.
TEST(TensorParallel, PlanHasTheAllreducesOnTheCriticalPath) {
  Scenario sc;
  sc.model.layers = {784, 64, 64, 64, 10};  // column, row, column, row
  sc.train.batch_size = 8;
  sc.parallel.tp = 2;  // microbatches belong to pipelines: one here
  StrategyConfig c;
  c.name = c.policy = "overlap";
  c.schedule = "ring";
  const auto stages = stage_specs(sc, model_spec_for(sc.model), ParallelLayout(sc.parallel, 4), 4);
  ASSERT_EQ(stages.size(), 1u);
  const Strategy s(c, stages[0].model, stages[0].context);
  const StepPlan plan = s.plan(2);
  int forward_syncs = 0, backward_syncs = 0;
  for (const PlanOp& op : plan.ops) {
    if (op.kind != OpKind::TpSync) continue;
    EXPECT_EQ(op.group, CommGroup::Tensor);
    EXPECT_EQ(op.schedule, "native");
    ASSERT_EQ(op.calls.size(), 1u);
    EXPECT_EQ(op.calls[0].count, 8u * (op.index == 3 ? 10 : 64)) << "the batch of 8 samples x the layer's floats";
    (op.gradient ? backward_syncs : forward_syncs)++;
    EXPECT_EQ(s.schedule_for(op.calls[0], "ring", NativeReplay{}, nullptr, CommGroup::Tensor).world_size, 2);
    // The next compute op waits for it.
    bool waited = false;
    for (const PlanOp& later : plan.ops)
      for (int d : later.deps) waited = waited || (d == op.id && !is_comm(later.kind));
    if (op.index == (op.gradient ? 2 : 1)) {
      EXPECT_TRUE(waited) << (op.gradient ? "layer 1's backward waits for layer 2's input gradient"
                                          : "layer 2's forward waits for layer 1's output");
    }
  }
  EXPECT_EQ(forward_syncs, 2) << "two row layers";
  EXPECT_EQ(backward_syncs, 1) << "one column layer after the first";
}

}  // namespace
}  // namespace ddplab
