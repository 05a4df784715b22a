// [parallel] layouts (layout.hpp): rank coordinates and groups against Megatron-LM's documented example
// (initialize_model_parallel's docstring: 16 GPUs, TP 2, PP 4), the other placement, and the checks that
// name the offending value's file:line:col.
#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "ddplab/strategies/layout.hpp"
#include "ddplab/strategies/strategy.hpp"

namespace ddplab {
namespace {

const std::string kStrategy = "[[strategy]]\nname = \"ddp\"\npolicy = \"overlap\"\n";

Scenario parse(const std::string& parallel, const std::string& rest = "") {
  return parse_scenario("[parallel]\n" + parallel + rest + kStrategy, "p.toml");
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const ScenarioError& e) {
    return e.what();
  }
  return "no error";
}

TEST(Layout, MegatronPlacesTensorGroupsInnermostAndStagesOutermost) {
  const ParallelLayout l(parse("tp = 2\npp = 4\n").parallel, 16);
  EXPECT_EQ(l.dp(), 2);
  // Megatron-LM's 8 DP groups [g0, g2], [g1, g3], [g4, g6], ..., 8 TP groups [g0, g1], [g2, g3], ... and 4
  // pipelines [g0, g4, g8, g12], [g1, g5, g9, g13], [g2, g6, g10, g14], [g3, g7, g11, g15].
  EXPECT_EQ(l.dp_group(0), (std::vector<int>{0, 2}));
  EXPECT_EQ(l.dp_group(5), (std::vector<int>{5, 7}));
  EXPECT_EQ(l.dp_group(13), (std::vector<int>{13, 15}));
  EXPECT_EQ(l.tp_group(6), (std::vector<int>{6, 7}));
  EXPECT_EQ(l.pp_group(0), (std::vector<int>{0, 4, 8, 12}));
  EXPECT_EQ(l.pp_group(14), (std::vector<int>{2, 6, 10, 14}));
  EXPECT_EQ(l.coord(13), (RankCoord{1, 3, 0}));
  for (int r = 0; r < 16; ++r) EXPECT_EQ(l.rank(l.coord(r)), r);
  EXPECT_EQ(l.describe(), "TP 2 x PP 4 x DP 2 (placement tp-dp-pp)");
}

TEST(Layout, StagesOfAReplicaAdjacentWithTheOtherPlacement) {
  const ParallelLayout l(parse("tp = 2\npp = 2\nplacement = \"tp-pp-dp\"\n").parallel, 8);
  // rank = tp + 2 (pp + 2 dp): replica 0 is ranks 0-3, its stages {0,1} and {2,3}.
  EXPECT_EQ(l.pp_group(1), (std::vector<int>{1, 3}));
  EXPECT_EQ(l.dp_group(1), (std::vector<int>{1, 5}));
  EXPECT_EQ(l.tp_group(5), (std::vector<int>{4, 5}));
  EXPECT_EQ(l.coord(6), (RankCoord{0, 1, 1}));
  for (int r = 0; r < 8; ++r) EXPECT_EQ(l.rank(l.coord(r)), r);
}

TEST(Layout, PureDataParallelIsOneGroupOfEveryRank) {
  const Scenario sc = parse_scenario(kStrategy, "p.toml");
  EXPECT_TRUE(sc.parallel.is_default());
  const ParallelLayout l(sc.parallel, 4);
  EXPECT_EQ(l.dp_group(2), (std::vector<int>{0, 1, 2, 3}));
  EXPECT_EQ(l.tp_group(2), (std::vector<int>{2}));
  EXPECT_EQ(sc.to_json().count("parallel"), 0u) << "a pure data-parallel configuration is stored as before";
}

TEST(Layout, AWorldTheLayoutDoesNotFitIsRefusedAtItsPosition) {
  const Scenario sc = parse("tp = 2\npp = 2\n");
  EXPECT_EQ(scenario_layout(sc, 8, "8 ranks").dp(), 2);
  EXPECT_EQ(error_of([&] { scenario_layout(sc, 6, "6 ranks"); }),
            "p.toml:2:6: [parallel] does not fit 6 ranks: tp x pp = 2 x 2 = 4 does not divide the world of 6 ranks");
  const Scenario fixed = parse("tp = 2\npp = 2\ndp = 2\n");
  EXPECT_EQ(error_of([&] { scenario_layout(fixed, 16, "16 ranks"); }),
            "p.toml:4:6: [parallel] does not fit 16 ranks: tp x pp x dp = 2 x 2 x 2 = 8 is not the world of 16 ranks");
}

TEST(Layout, ChecksThatNeedTheRestOfTheScenario) {
  // Microbatches divide the per-rank batch (train.batch_size 64 by default).
  EXPECT_EQ(error_of([] { validate_parallel(parse("pp = 2\nmicrobatches = 6\n")); }),
            "p.toml:3:16: parallel.microbatches must divide train.batch_size (64 samples per rank and step), got 6");
  EXPECT_NO_THROW(validate_parallel(parse("pp = 2\nmicrobatches = 8\n")));
  EXPECT_EQ(
      error_of([] { validate_parallel(parse("pp = 2\npipeline_schedule = \"zigzag\"\n")); }),
      "p.toml:3:21: parallel.pipeline_schedule must be one of \"gpipe\", \"1f1b\", \"interleaved\", got \"zigzag\"");
  // Interleaved: chunks per rank, and Megatron-LM's multiple-of-pp microbatches.
  EXPECT_EQ(
      error_of([] { validate_parallel(parse("pp = 4\nmicrobatches = 8\npipeline_schedule = \"interleaved\"\n")); }),
      "p.toml:4:21: parallel.virtual_stages must be 2 or more with pipeline_schedule = \"interleaved\" (model chunks "
      "per rank), got 1");
  EXPECT_EQ(
      error_of([] {
        validate_parallel(parse("pp = 4\nmicrobatches = 2\npipeline_schedule = \"interleaved\"\nvirtual_stages = 2\n"));
      }),
      "p.toml:3:16: parallel.microbatches must be a multiple of parallel.pp (4) with pipeline_schedule = "
      "\"interleaved\" (Megatron-LM's condition), got 2");
  EXPECT_NO_THROW(
      validate_parallel(parse("pp = 4\nmicrobatches = 8\npipeline_schedule = \"interleaved\"\nvirtual_stages = 3\n")));
  EXPECT_EQ(
      error_of([] { validate_parallel(parse("pp = 2\nvirtual_stages = 2\n")); }),
      "p.toml:3:18: parallel.virtual_stages applies to an interleaved pipeline_schedule only (pipeline_schedule is "
      "\"1f1b\"), got 2");
  // Parameter servers keep whole models' shards.
  EXPECT_EQ(
      error_of([] {
        validate_parallel(
            parse_scenario("[parallel]\ntp = 2\n[[strategy]]\nname = \"p\"\npolicy = \"ps\"\n", "p.toml"));
      }),
      "p.toml:2:6: parallel.tp splits the model, which strategy[0] (\"p\") cannot serve: its parameter servers keep "
      "whole models' shards");
}

TEST(Layout, TheSectionAloneIsCheckedAsItIsRead) {
  EXPECT_EQ(error_of([] { parse("tp = 0\n"); }), "p.toml:2:6: parallel.tp must be a positive integer, got 0");
  EXPECT_EQ(error_of([] { parse("tpp = 2\n"); }), "p.toml:2:1: unknown key parallel.tpp (did you mean parallel.tp?)");
  EXPECT_EQ(error_of([] { parse("placement = \"dp-tp-pp\"\n"); }),
            "p.toml:2:13: parallel.placement must be one of \"tp-dp-pp\", \"tp-pp-dp\", got \"dp-tp-pp\"");
  EXPECT_EQ(error_of([] { parse("microbatches = 4\n"); }),
            "p.toml:2:16: parallel.microbatches applies to a pipeline (parallel.pp > 1); parallel.pp is 1");
  // The ZeRO stage is a policy: the error says which, where the stage was written.
  EXPECT_EQ(error_of([] { parse("zero = 2\n"); })
                .rfind("p.toml:2:8: parallel.zero: the ZeRO stage is each [[strategy]]'s "
                       "policy: policy = \"zero1\"",
                       0),
            0u);
  const Scenario sc = parse("tp = 2\npp = 2\nmicrobatches = 4\n");
  EXPECT_EQ(sc.to_json().at("parallel").at("microbatches"), 4);
}

}  // namespace
}  // namespace ddplab
