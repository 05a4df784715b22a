// require_runnable_layout: what the runtime refuses on a split model, each refusal at its setting's
// file:line:col, and nothing refused without a split but what only the simulator models.
#include <gtest/gtest.h>

#include <functional>

#include "ddplab/runtime/model_parallel.hpp"

namespace ddplab {
namespace {

std::string error_of(const std::string& toml) {
  const Scenario sc = parse_scenario(toml + "[[strategy]]\nname = \"ddp\"\npolicy = \"overlap\"\n", "r.toml");
  try {
    require_runnable_layout(sc);
  } catch (const ScenarioError& e) {
    return e.what();
  }
  return "no error";
}

const std::string kPipeline = "[parallel]\npp = 2\n";

TEST(RunnableLayout, ASplitMlpOrCnnOnTheCpuRuns) {
  EXPECT_EQ(error_of(kPipeline), "no error");
  EXPECT_EQ(error_of("[model]\ntype = \"cnn\"\n" + kPipeline), "no error");
  EXPECT_EQ(error_of("[parallel]\ntp = 2\npp = 2\nmicrobatches = 4\n[train]\noptimizer = \"adam\"\n"), "no error");
  // Without a split nothing is refused: these run on whole replicas.
  EXPECT_EQ(error_of("[model]\ntype = \"cnn\"\n[train]\ncheckpoint_every = 4\nclip_grad_norm = 1.0\n"), "no error");
}

TEST(RunnableLayout, WhatAssumesWholeReplicasIsRefusedAtItsSetting) {
  EXPECT_EQ(
      error_of(kPipeline + "[train]\ncheckpoint_every = 4\n")
          .rfind(
              "r.toml:4:20: train.checkpoint_every = 4: the runtime does not run it on a split model (parallel.pp = 2) "
              "yet: a checkpoint holds whole replicas",
              0),
      0u);
  EXPECT_EQ(
      error_of(kPipeline + "[train]\nconsistency_every = 2\n").rfind("r.toml:4:21: train.consistency_every = 2", 0),
      0u);
  EXPECT_EQ(error_of(kPipeline + "[train]\nclip_grad_norm = 1.0\n").rfind("r.toml:4:18: train.clip_grad_norm = 1", 0),
            0u);
  EXPECT_EQ(
      error_of(kPipeline + "[train]\nbackend = \"cuda+mpi\"\n").rfind("r.toml:4:11: train.backend = \"cuda+mpi\"", 0),
      0u);
  EXPECT_EQ(error_of("[model]\ntype = \"cnn\"\nbn = \"sync\"\n" + kPipeline)
                .rfind("r.toml:3:6: model.bn = \"sync\": the runtime "
                       "does not run it on a split model "
                       "(parallel.pp = 2) yet: batch norm",
                       0),
            0u);
  EXPECT_EQ(error_of("[model]\ntype = \"table\"\ntable = \"gpt2_xl\"\n" + kPipeline)
                .rfind("r.toml:2:8: model.type = \"table\"", 0),
            0u);
  // [data] keeps no positions: the layout's is named.
  EXPECT_EQ(
      error_of("[parallel]\ntp = 2\n[data]\npartition = \"quantity\"\nuneven = \"join\"\n")
          .rfind("r.toml:2:6: data.uneven = \"join\": the runtime does not run it on a split model (parallel.tp = 2)",
                 0),
      0u);
  EXPECT_EQ(error_of(kPipeline + "[data]\npartition = \"shards\"\nbalance = \"class_weighted\"\n")
                .rfind("r.toml:2:6: data.balance", 0),
            0u);
}

TEST(RunnableLayout, APerTensorOptimizerIsRefusedOnTensorSplitsOnly) {
  EXPECT_EQ(
      error_of("[parallel]\ntp = 2\n[train]\noptimizer = \"lamb\"\n")
          .rfind("r.toml:4:13: train.optimizer = \"lamb\": the runtime does not run it on a split model (parallel.tp = "
                 "2) yet: its per-tensor norms would see a TP share of each tensor",
                 0),
      0u);
  EXPECT_EQ(error_of(kPipeline + "[train]\noptimizer = \"lamb\"\n"), "no error");  // a stage holds whole tensors
}

// Mixed precision and recomputation are the simulator's, split or not.
TEST(RunnableLayout, PrecisionAndRecomputationAreRefusedWithOrWithoutASplit) {
  EXPECT_EQ(error_of("[train]\nprecision = \"bf16\"\n"),
            "r.toml:2:13: train.precision = \"bf16\": the runtime trains in fp32 and keeps every activation "
            "(train.precision = \"fp32\"); ddplab simulate models it");
  EXPECT_EQ(error_of(kPipeline + "[train]\nrecompute = \"full\"\n").rfind("r.toml:4:13: train.recompute = \"full\"", 0),
            0u);
  EXPECT_EQ(error_of("[train]\nprecision = \"fp32\"\nrecompute = \"none\"\n"), "no error");
}

}  // namespace
}  // namespace ddplab
