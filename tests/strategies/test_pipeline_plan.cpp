// A pipeline stage's plan: the layers it holds, the passes of every microbatch in the schedule's order, and
// the point-to-point sends between stages, which must meet their receives one for one.
#include <gtest/gtest.h>

#include <map>
#include <tuple>
#include <vector>

#include "ddplab/core/error.hpp"
#include "ddplab/strategies/model_library.hpp"
#include "ddplab/strategies/pipeline.hpp"
#include "ddplab/strategies/stages.hpp"
#include "ddplab/strategies/strategy.hpp"

namespace ddplab {
namespace {

// 784-64-32-16-10: four layers, the boundaries' activations 4 B x width per sample.
const ModelSpec kPipelineMlp = ModelSpec::mlp({784, 64, 32, 16, 10});

TEST(PipelinePlan, StagesHoldConsecutiveLayersAndTheirParameters) {
  const PipelineInfo& s = *find_pipeline_schedule("1f1b");
  const StageModel a = pipeline_stage(kPipelineMlp, s, {2, 4, 1}, 0), b = pipeline_stage(kPipelineMlp, s, {2, 4, 1}, 1);
  EXPECT_EQ(a.model.layers.size(), 2u);
  EXPECT_EQ(a.model.parameter_count(), 784u * 64 + 64 + 64 * 32 + 32);
  EXPECT_EQ(b.model.parameter_count(), 32u * 16 + 16 + 16 * 10 + 10);
  EXPECT_EQ(b.model.params.front().name, "layers.2.weight");
  EXPECT_EQ(b.model.params.front().layer, 0) << "renumbered within the stage";
  ASSERT_EQ(a.stage.chunks.size(), 1u);
  EXPECT_EQ(a.stage.chunks[0].input_bytes, 0);
  EXPECT_EQ(a.stage.chunks[0].output_bytes, 4 * 32);
  EXPECT_EQ(b.stage.chunks[0].input_bytes, 4 * 32);
  EXPECT_EQ(b.stage.chunks[0].output_bytes, 0);

  // Interleaved, 2 stages x 2 chunks: rank 0 holds layers 0 and 2 (Megatron-LM's order), rank 1 layers 1 and 3.
  const PipelineInfo& il = *find_pipeline_schedule("interleaved");
  const StageModel i0 = pipeline_stage(kPipelineMlp, il, {2, 4, 2}, 0);
  ASSERT_EQ(i0.stage.chunks.size(), 2u);
  EXPECT_EQ(i0.model.layers[0].name, "layers.0");
  EXPECT_EQ(i0.model.layers[1].name, "layers.2");
  EXPECT_EQ(i0.stage.chunks[1].input_bytes, 4 * 32) << "chunk 1 of rank 0 follows chunk 0 of rank 1 (layer 1)";
  EXPECT_EQ(i0.stage.chunks[1].output_bytes, 4 * 16);

  EXPECT_THROW(pipeline_stage(kPipelineMlp, il, {4, 4, 2}, 0), ddplab::InputError) << "8 chunks of 4 layers";
  ModelSpec bn = kPipelineMlp;
  bn.layers[1].sync_channels = 64;
  EXPECT_THROW(pipeline_stage(bn, s, {2, 4, 1}, 0), ddplab::InputError);
}

// A model table is cut at its numbered blocks, the embeddings with the first stage and the head with the
// last, as Megatron-LM places them: GPT-2 XL's 48 transformer layers, 12 to each of 4 stages.
TEST(PipelinePlan, ATableIsCutAtItsBlocks) {
  const ModelSpec gpt2 = load_model_table("gpt2_xl");
  const PipelineInfo& s = *find_pipeline_schedule("1f1b");
  const StageModel first = pipeline_stage(gpt2, s, {4, 4, 1}, 0), last = pipeline_stage(gpt2, s, {4, 4, 1}, 3);
  EXPECT_EQ(first.model.layers.front().name, "transformer.wte");
  EXPECT_EQ(first.model.layers.back().name, "transformer.h.11.residual_mlp");
  EXPECT_EQ(last.model.layers.front().name, "transformer.h.36.ln_1");
  EXPECT_EQ(last.model.layers.back().name, "lm_head");
  EXPECT_EQ(first.stage.chunks[0].output_bytes, 1024.0 * 1600 * 4) << "one fp32 hidden state per token";
  std::size_t params = 0;
  for (int st = 0; st < 4; ++st) params += pipeline_stage(gpt2, s, {4, 4, 1}, st).model.parameter_count();
  EXPECT_EQ(params, gpt2.parameter_count()) << "every parameter on exactly one stage";
  // ResNet-50's 16 bottleneck blocks: the stem goes with the first of 4 stages, the pooling and fc with the last.
  const ModelSpec resnet = load_model_table("resnet50");
  EXPECT_EQ(pipeline_stage(resnet, s, {4, 4, 1}, 0).model.layers.front().name, "conv1");
  EXPECT_EQ(pipeline_stage(resnet, s, {4, 4, 1}, 3).model.layers.back().name, "fc");
  EXPECT_THROW(pipeline_stage(resnet, s, {32, 32, 1}, 0), ddplab::InputError) << "16 blocks for 32 stages";
}

Strategy stage_strategy(const std::string& schedule, const PipelineShape& shape, int stage, const std::string& policy) {
  StrategyConfig c;
  c.name = policy;
  c.policy = policy;
  c.schedule = "ring";
  StageModel sm = pipeline_stage(kPipelineMlp, *find_pipeline_schedule(schedule), shape, stage);
  StrategyContext ctx{2, 1, 32, 1, false, sm.stage};
  return Strategy(c, sm.model, ctx);
}

// Over every schedule and shape: each stage's compute runs its schedule's order; every send has its receive
// on the neighbouring stage, of the same bytes, in the same order per direction and chunk boundary; and the
// DP sync of each bucket waits for the last microbatch's backward of its layers.
TEST(PipelinePlan, EverySendMeetsItsReceiveInOrder) {
  for (const PipelineInfo& info : pipeline_schedules())
    for (const PipelineShape shape :
         {PipelineShape{2, 2, info.interleaved ? 2 : 1}, PipelineShape{2, 4, info.interleaved ? 2 : 1},
          PipelineShape{4, 4, 1}, PipelineShape{4, 8, 1}}) {
      if (shape.stages * shape.chunks > 4) continue;  // the MLP has 4 layers
      SCOPED_TRACE(info.name + " P " + std::to_string(shape.stages) + " M " + std::to_string(shape.microbatches) +
                   " v " + std::to_string(shape.chunks));
      const int P = shape.stages;
      // (src stage, dst stage, gradient, sender's place) -> the microbatches and bytes, in plan order
      std::map<std::tuple<int, int, bool, int>, std::vector<std::pair<int, std::uint64_t>>> sent, received;
      for (int s = 0; s < P; ++s) {
        const Strategy st = stage_strategy(info.name, shape, s, "overlap");
        const StepPlan plan = st.plan(3);
        std::vector<PipeOp> compute;
        for (const PlanOp& op : plan.ops) {
          if (op.kind == OpKind::Forward) compute.push_back({true, op.microbatch, op.chunk});
          if (op.kind == OpKind::Backward &&
              (compute.empty() || compute.back() != PipeOp{false, op.microbatch, op.chunk}))
            compute.push_back({false, op.microbatch, op.chunk});
          if (op.kind != OpKind::PpSend && op.kind != OpKind::PpRecv) continue;
          const int at = op.chunk * P + s;
          if (op.kind == OpKind::PpSend)
            sent[{s, op.peer, op.gradient, at}].push_back({op.microbatch, op.p2p_bytes});
          else
            received[{op.peer, s, op.gradient, op.gradient ? at + 1 : at - 1}].push_back({op.microbatch, op.p2p_bytes});
          EXPECT_TRUE(op.peer == (s + 1) % P || op.peer == (s + P - 1) % P);
          EXPECT_GT(op.p2p_bytes, 0u);
        }
        EXPECT_EQ(compute, info.order(shape, s)) << "stage " << s << " computes in its schedule's order";
        // Each bucket's sync waits for the last backward of its layers.
        for (const PlanOp& op : plan.ops) {
          if (op.kind != OpKind::SyncGrads) continue;
          ASSERT_EQ(op.deps.size(), 1u);
          const PlanOp& ready = plan.ops[static_cast<std::size_t>(op.deps[0])];
          EXPECT_EQ(ready.kind, OpKind::Backward);
          for (const PlanOp& later : plan.ops)
            if (later.id > ready.id && later.kind == OpKind::Backward) {
              EXPECT_NE(later.index, ready.index);
            }
        }
      }
      EXPECT_EQ(sent, received);
      // One activation and one gradient per microbatch and chunk boundary: (P v - 1) boundaries.
      std::size_t messages = 0;
      for (const auto& [key, v] : sent) messages += v.size();
      EXPECT_EQ(messages, 2u * shape.microbatches * (P * shape.chunks - 1));
    }
}

TEST(PipelinePlan, BytesAreTheBoundaryActivationsOfAMicrobatch) {
  const Strategy st = stage_strategy("1f1b", {2, 4, 1}, 0, "flat");
  const StepPlan plan = st.plan(0);
  double forward_flops = 0;
  for (const PlanOp& op : plan.ops) {
    if (op.kind == OpKind::PpSend || op.kind == OpKind::PpRecv) {
      EXPECT_EQ(op.p2p_bytes, 8u * 4 * 32) << "8 samples x 32 floats";
    }
    if (op.kind == OpKind::Forward) forward_flops += op.flops;
  }
  EXPECT_DOUBLE_EQ(forward_flops, 32 * (kPipelineMlp.layers[0].forward_flops + kPipelineMlp.layers[1].forward_flops))
      << "the microbatches' forwards add up to the stage's forward of the batch";
}

// stage_specs: one per stage, over the DP group's size and the ranks of that group on a node.
TEST(PipelinePlan, StageSpecsFollowTheLayout) {
  Scenario sc;
  sc.train.batch_size = 32;
  sc.parallel.pp = 2;
  sc.parallel.microbatches = 4;
  const ParallelLayout layout(sc.parallel, 8);
  const auto specs = stage_specs(sc, kPipelineMlp, layout, 4);
  ASSERT_EQ(specs.size(), 2u);
  EXPECT_EQ(specs[1].context.world_size, 4);
  EXPECT_EQ(specs[1].context.ranks_per_node, 4) << "tp-dp-pp: a stage's DP group is 4 adjacent ranks";
  EXPECT_EQ(specs[1].context.pipeline.stage, 1);
  EXPECT_EQ(specs[1].model.layers.size(), 2u);
  sc.parallel.placement = "tp-pp-dp";
  EXPECT_EQ(stage_specs(sc, kPipelineMlp, ParallelLayout(sc.parallel, 8), 4)[0].context.ranks_per_node, 2)
      << "tp-pp-dp: replicas are 2 ranks apart";
  EXPECT_EQ(group_ranks_per_node({0, 2, 4, 6}, 4), 2);
}

TEST(PipelinePlan, AModelThatDoesNotSplitIsRefusedAtParallelPp) {
  const Scenario sc = parse_scenario(
      "[model]\nlayers = [784, 64, 10]\n[parallel]\npp = 4\n[[strategy]]\nname = \"a\"\n"
      "policy = \"overlap\"\nschedule = \"ring\"\n",
      "p.toml");
  try {
    stage_specs(sc, model_spec_for(sc.model), ParallelLayout(sc.parallel, 4), 1);
    FAIL() << "a 2-layer MLP cut into 4 stages";
  } catch (const ScenarioError& e) {
    EXPECT_STREQ(e.what(), "p.toml:4:6: parallel.pp = 4: pipeline: mlp has 2 layers, fewer than the 4 pipeline chunks");
  }
}

}  // namespace
}  // namespace ddplab
