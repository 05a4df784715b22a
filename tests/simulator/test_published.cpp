// The GPU presets against public measurements (bench/published/points.toml, published.hpp): the bounds that
// docs/published-comparisons.md states, and the points file's errors.
#include <unistd.h>

#include <filesystem>

#include <gtest/gtest.h>

#include <cmath>
#include <fstream>

#include "ddplab/core/error.hpp"
#include "ddplab/core/stats.hpp"
#include "ddplab/simulator/published.hpp"

namespace ddplab {
namespace {

const std::string kPoints = std::string(DDPLAB_SOURCE_DIR) + "/bench/published/points.toml";

TEST(Published, PresetsHoldAgainstPublishedMeasurements) {
  const auto points = load_published_points(kPoints);
  ASSERT_GE(points.size(), 30u);
  const auto results = compare_published(points);
  std::vector<double> errors;
  int over_25 = 0;
  for (const auto& r : results) {
    errors.push_back(std::fabs(r.error_pct));
    if (std::fabs(r.error_pct) > 25) ++over_25;
    std::printf("[ point ] %-4s %-34s %12llu B  published %9.3g  predicted %9.3g  %+6.1f%%  %s\n", r.point.id.c_str(),
                r.point.case_name.c_str(), static_cast<unsigned long long>(r.point.bytes), r.point.published,
                r.predicted, r.error_pct, r.detail.c_str());
  }
  // The goal docs/published-comparisons.md states: median within 10%. The one miss over 25% is Azure's A100
  // ring at 128 MiB (the ring's own ramp to full bandwidth is not modelled); none may pass 30%, and no new
  // one may appear.
  EXPECT_LE(median(errors), 10.0);
  EXPECT_LE(*std::max_element(errors.begin(), errors.end()), 30.0);
  EXPECT_LE(over_25, 1);
}

// Megatron-LM's Table 1 (bench/published/layouts.toml): compute_efficiency is fitted to row 5.1, so that row
// must agree; the others are predictions, every row under the published figure, with the median and largest
// errors that docs/published-comparisons.md states; a change that moves them past these bounds must change
// that page too.
TEST(Published, LayoutsAgainstMegatronLm) {
  const auto points = load_published_points(std::string(DDPLAB_SOURCE_DIR) + "/bench/published/layouts.toml");
  ASSERT_EQ(points.size(), 7u);
  std::vector<double> predictions;
  for (const auto& r : compare_published(points)) {
    std::printf("[ layout ] %-4s %-28s tp %d pp %d world %4d  published %5.1f  predicted %5.1f  %+6.1f%%  %s\n",
                r.point.id.c_str(), r.point.case_name.c_str(), r.point.tp, r.point.pp, r.point.world, r.point.published,
                r.predicted, r.error_pct, r.detail.c_str());
    if (r.point.id == "5.1") {
      EXPECT_LE(std::fabs(r.error_pct), 1.0) << "the row compute_efficiency is fitted to";
      continue;
    }
    predictions.push_back(std::fabs(r.error_pct));
    EXPECT_LT(r.error_pct, 0) << r.point.id;
    EXPECT_GT(r.error_pct, -20) << r.point.id;
  }
  EXPECT_LE(median(predictions), 13.0);
}

// Narayanan et al.'s Table 2: ZeRO-3 (pure DP) against PTD-P on GPT-3 175B. The ZeRO-3 rows only (the PTD-P
// rows' 384 to 96 microbatches take minutes each; docs/published-comparisons.md gives their figures): at 384 GPUs,
// where compute dominates, the prediction holds; at 768 and 1536 the simulator hides ZeRO-3's gathers behind compute at
// NCCL's node-wide bandwidth where DeepSpeed's of 2021 did not (it ranks them wrongly there).
TEST(Published, ZeroThreeAgainstPtdP) {
  const auto all = load_published_points(std::string(DDPLAB_SOURCE_DIR) + "/bench/published/zero3.toml");
  ASSERT_EQ(all.size(), 6u);
  std::vector<PublishedPoint> zero3;
  for (const auto& p : all)
    if (p.policy == "zero3") zero3.push_back(p);
  ASSERT_EQ(zero3.size(), 3u);
  std::vector<double> predicted;
  for (const auto& r : compare_published(zero3)) {
    std::printf("[ layout ] %-4s %-22s world %4d  published %5.1f  predicted %5.1f  %+6.1f%%  %s\n", r.point.id.c_str(),
                r.point.case_name.c_str(), r.point.world, r.point.published, r.predicted, r.error_pct,
                r.detail.c_str());
    predicted.push_back(r.predicted);
  }
  EXPECT_LT(std::fabs(error_pct(zero3[0].published, predicted[0])), 10.0) << "row 6.1, 384 GPUs";
  // Half the work per GPU at each doubling, the same shards to gather: throughput per GPU does not rise.
  EXPECT_LE(predicted[1], predicted[0] * 1.01);
  EXPECT_LE(predicted[2], predicted[1] * 1.01);
}

std::string load_error(const std::string& text) {
  const std::string dir = testing::TempDir() + "ddplab-points-" + std::to_string(getpid());
  std::filesystem::create_directories(dir);
  const std::string path = dir + "/points.toml";
  std::ofstream(path) << text;
  try {
    load_published_points(path);
  } catch (const ddplab::InputError& e) {
    const std::string m = e.what();
    return m.substr(m.find("points.toml"));
  }
  return "";
}

TEST(Published, BadPointsNameFileLineAndField) {
  const std::string head = "[[point]]\nid = \"1\"\ncase = \"c\"\n";
  EXPECT_EQ(load_error(head + "preset = \"dgx-h200\"\nkind = \"busbw\"\nworld = 8\nsweep = [[1024, 1.0]]\n"),
            "points.toml:4: preset: unknown cluster preset \"dgx-h200\"");
  EXPECT_EQ(load_error(head + "preset = \"dgx-h100\"\nkind = \"busbw\"\nworld = 8\nsweep = [[2, 1.0]]\n"),
            "points.toml:7: sweep: each entry must be [bytes >= 4, value]");
  EXPECT_EQ(load_error(head + "preset = \"dgx-h100\"\nkind = \"latency\"\nworld = 8\nsweep = [[1024, 1.0]]\n"),
            "points.toml:5: kind: must be busbw, time, efficiency or layout");
  EXPECT_EQ(load_error(head + "preset = \"dgx-h100\"\nkind = \"busbw\"\nworld = 8\n"),
            "points.toml:1: sweep: is required");
  EXPECT_EQ(load_error(head + "preset = \"dgx-h100\"\nkind = \"busbw\"\nworld = 8\nsweep = [[1024, -1]]\n"),
            "points.toml:7: sweep: must be a number greater than 0");
  EXPECT_EQ(load_error(head + "preset = \"dgx-h100\"\nkind = \"busbw\"\nwold = 8\n"),
            "points.toml:6: wold: is not a point field");
  const std::string layout = head +
                             "preset = \"dgx-a100\"\nkind = \"layout\"\nmodel = \"gpt2_xl\"\ntp = 2\npp = 2\n"
                             "microbatch = 1\nschedule = \"1f1b\"\nprecision = \"bf16\"\nrecompute = \"none\"\n"
                             "compute_efficiency = 0.5\ncompute_model = \"flops\"\npublished = 100\n";
  EXPECT_EQ(load_error(layout + "world = 6\nbatch = 8\n"), "points.toml:16: world: 6 is not a multiple of tp x pp = 4");
  EXPECT_EQ(load_error(layout + "world = 8\nbatch = 5\n"),
            "points.toml:17: batch: 5 is not a multiple of dp x microbatch = 2 x 1");
  EXPECT_EQ(load_error(layout + "world = 8\n"), "points.toml:1: batch: is required");
  std::string fp8 = layout;
  fp8.replace(fp8.find("\"bf16\""), 6, "\"fp8\"");
  EXPECT_EQ(load_error(fp8 + "world = 8\nbatch = 8\n"),
            "points.toml:11: precision: must be one of \"fp32\", \"bf16\", \"fp16\", got \"fp8\"");
  EXPECT_EQ(load_error(layout + "world = 8\nbatch = 8\npolicy = \"zero4\"\n"),
            "points.toml:18: policy: unknown sync policy \"zero4\"");
  EXPECT_EQ(
      load_error(layout + "world = 8\nbatch = 8\npolicy = \"zero3\"\n")
          .rfind(
              "points.toml:18: policy: parallel.tp splits the model, which strategy[0] (\"zero3\", policy \"zero3\") "
              "cannot shard",
              0),
      0u);
  EXPECT_EQ(load_error("[[point]\n").rfind("points.toml:1: ", 0), 0u);  // TOML syntax: toml++'s message, with the line
  EXPECT_EQ(load_error("title = 1\n"), "points.toml: no [[point]] entries");
}

}  // namespace
}  // namespace ddplab
