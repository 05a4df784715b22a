// Activation recomputation and 16-bit activations ([train] recompute, precision) in the plan and the
// memory model, on a small transformer-shaped table whose numbers can be followed by hand: an embedding,
// two numbered blocks ("h.0", "h.1") of a column- then a row-parallel layer, and a head. Per sample, the
// layers' outputs are 32, 128, 32, 128, 32 and 64 bytes (fp32); each block's forward is 1024 FLOPs.
#include <gtest/gtest.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "ddplab/strategies/memory.hpp"
#include "ddplab/strategies/model_library.hpp"
#include "ddplab/strategies/stages.hpp"
#include "ddplab/strategies/strategy.hpp"

namespace ddplab {
namespace {

const char* kTable =
    "name,params,forward_flops,backward_flops,activation_bytes,tp\n"
    "embed,weight:16x8,0,0,32,\n"
    "h.0.fc1,weight:32x8,512,1024,128,column\n"
    "h.0.fc2,weight:8x32,512,1024,32,row\n"
    "h.1.fc1,weight:32x8,512,1024,128,column\n"
    "h.1.fc2,weight:8x32,512,1024,32,row\n"
    "head,,256,512,64,\n";

const ModelSpec& tiny() {
  static const ModelSpec m = parse_model_table(kTable, "tiny.csv");
  return m;
}

Scenario scenario(int batch, const std::string& recompute, const std::string& precision = "fp32") {
  Scenario sc;
  sc.train.batch_size = batch;
  sc.train.recompute = recompute;
  sc.train.precision = precision;
  return sc;
}

StrategyConfig overlap() {
  StrategyConfig c;
  c.name = c.policy = "overlap";
  c.schedule = "ring";
  return c;
}

// The stages of the tiny model on `world` ranks under sc.parallel.
std::vector<StageSpec> stages(const Scenario& sc, int world) {
  return stage_specs(sc, tiny(), ParallelLayout(sc.parallel, world), world);
}

double activations(const Scenario& sc, int world, std::size_t stage = 0) {
  const auto st = stages(sc, world);
  return device_memory(Strategy(overlap(), st.at(stage).model, st.at(stage).context), 0, *find_optimizer("sgd"), 0)
      .activations;
}

TEST(Recompute, BlocksComeFromTheLayerNames) {
  EXPECT_EQ(layer_block("transformer.h.12.attn.c_attn"), "transformer.h.12");
  EXPECT_EQ(layer_block("lm_head"), "");
  EXPECT_EQ(tiny().block_start(0), -1);
  EXPECT_EQ(tiny().block_start(2), 1);
  EXPECT_EQ(tiny().block_start(4), 3);
  EXPECT_EQ(tiny().block_start(5), -1);
  EXPECT_EQ(tiny().block_forward_flops(), 4 * 512);
}

// Without layout: before the backward of each block's last layer, the block's forward again, of the batch.
TEST(Recompute, EachBlockRunsItsForwardAgainBeforeItsBackward) {
  const Scenario sc = scenario(4, "full");
  const Strategy s(overlap(), tiny(), strategy_context(sc, 2, 2));
  const StepPlan plan = s.plan(0);
  std::vector<int> recomputed;
  for (const PlanOp& op : plan.ops) {
    if (op.kind != OpKind::Recompute) continue;
    recomputed.push_back(op.index);
    EXPECT_EQ(op.flops, 4 * 1024) << "the block's two layers, 4 samples";
    const auto next = std::find_if(plan.ops.begin(), plan.ops.end(), [&](const PlanOp& o) {
      return o.kind == OpKind::Backward && std::count(o.deps.begin(), o.deps.end(), op.id);
    });
    ASSERT_NE(next, plan.ops.end());
    EXPECT_EQ(next->index, op.index) << "the block's last layer's backward waits for it";
  }
  EXPECT_EQ(recomputed, (std::vector<int>{4, 2})) << "h.1, then h.0; the embedding and the head are not recomputed";
  const Strategy plain(overlap(), tiny(), strategy_context(scenario(4, "none"), 2, 2));
  for (const PlanOp& op : plain.plan(0).ops) EXPECT_NE(op.kind, OpKind::Recompute);
}

// By hand, per sample. Without recomputation every output is kept: 32 + 128 + 32 + 128 + 32 + 64 = 416.
// With it the most is held during h.1's backward: the embedding's output (32), h.1's input (h.0's output,
// 32) and h.1's recomputed outputs (128 + 32): 224. bf16 halves either.
TEST(Recompute, MemoryKeepsTheBlocksInputsAndOneBlock) {
  EXPECT_EQ(activations(scenario(4, "none"), 1), 4 * 416);
  EXPECT_EQ(activations(scenario(4, "full"), 1), 4 * 224);
  EXPECT_EQ(activations(scenario(4, "full", "bf16"), 1), 4 * 112);
  EXPECT_EQ(activations(scenario(4, "none", "fp16"), 1), 4 * 208);
}

// PP 2, 1F1B, 2 microbatches of 2 samples. Stage 0 (embedding, h.0) has 2 microbatches in flight: one
// keeps the embedding's output (32), the one in backward 32 + h.0's outputs 160; 2 x (32 + 192) = 448
// (768 without recomputation: 2 x 2 x 192). Stage 1 (h.1, head) has one in flight: its input (32), the
// head's input and output (32 + 64) kept, at most 32 + 160 during h.1's backward: 2 x 192 = 384 (448
// without: 2 x (160 + 64)). Its sends are the boundary's 32 B a sample, 16 in bf16.
TEST(Recompute, PipelineStagesHoldTheirMicrobatchesInputs) {
  Scenario sc = scenario(4, "full");
  sc.parallel.pp = 2;
  sc.parallel.microbatches = 2;
  EXPECT_EQ(activations(sc, 2, 0), 448);
  EXPECT_EQ(activations(sc, 2, 1), 384);
  sc.train.recompute = "none";
  EXPECT_EQ(activations(sc, 2, 0), 768);
  EXPECT_EQ(activations(sc, 2, 1), 448);
  for (const std::string precision : {"fp32", "bf16"}) {
    sc.train.precision = precision;
    const auto st = stages(sc, 2);
    for (const PlanOp& op : Strategy(overlap(), st[0].model, st[0].context).plan(0).ops) {
      if (op.kind == OpKind::PpSend || op.kind == OpKind::PpRecv) {
        EXPECT_EQ(op.p2p_bytes, precision == "bf16" ? 32u : 64u);
      }
    }
  }
}

// TP 2: each row layer's forward allreduce runs again in its block's recomputed forward, in the activations'
// type; the backward's (the column layers' input gradients) do not.
TEST(Recompute, TensorParallelAllreducesRunAgainInTheRecomputedForward) {
  for (const std::string recompute : {"none", "full"}) {
    Scenario sc = scenario(4, recompute, "bf16");
    sc.parallel.tp = 2;
    const auto st = stages(sc, 2);
    const StepPlan plan = Strategy(overlap(), st[0].model, st[0].context).plan(0);
    int forward = 0, backward = 0, after_recompute = 0;
    for (const PlanOp& op : plan.ops) {
      if (op.kind != OpKind::TpSync) continue;
      ASSERT_EQ(op.calls.size(), 1u);
      EXPECT_EQ(op.calls[0].type, ElemType::BF16);
      EXPECT_EQ(op.calls[0].count, 4u * 8) << "a row layer's 8 outputs per sample, 4 samples";
      (op.gradient ? backward : forward)++;
      after_recompute += plan.ops.at(static_cast<std::size_t>(op.deps.at(0))).kind == OpKind::Recompute;
    }
    EXPECT_EQ(forward, recompute == "full" ? 4 : 2) << recompute;
    EXPECT_EQ(after_recompute, recompute == "full" ? 2 : 0) << recompute;
    EXPECT_EQ(backward, 2) << recompute;
  }
}

TEST(Recompute, ScenarioSettingsAreCheckedWhereWritten) {
  const std::string base = "[model]\nlayers = [784, 10]\n[train]\n";
  const std::string tail = "\n[[strategy]]\nname = \"a\"\npolicy = \"overlap\"\n";
  const Scenario sc = parse_scenario(base + "precision = \"bf16\"\nrecompute = \"full\"" + tail, "r.toml");
  EXPECT_EQ(sc.train.precision, "bf16");
  EXPECT_EQ(sc.train.recompute, "full");
  EXPECT_EQ(sc.to_json().at("train").at("recompute"), "full");
  try {  // the MLP's layers ("layers.0", ...) are blocks; a CNN's are not
    const Scenario cnn = parse_scenario("[model]\ntype = \"cnn\"\n[train]\nrecompute = \"full\"" + tail, "r.toml");
    scenario_stages(cnn, 2, 2);
    FAIL() << "a CNN has no numbered blocks";
  } catch (const ScenarioError& e) {
    EXPECT_EQ(std::string(e.what()).rfind("r.toml:4:13: train.recompute = \"full\": cnn has no numbered blocks", 0), 0u)
        << e.what();
  }
  try {
    parse_scenario(base + "precision = \"fp8\"" + tail, "r.toml");
    FAIL() << "fp8";
  } catch (const ScenarioError& e) {
    EXPECT_NE(std::string(e.what()).find("r.toml:4:13: train.precision"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ddplab
