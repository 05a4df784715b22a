// The per-rank report: means per rank from the skipped step on, the slowest rank by compute and optimizer,
// and the others' wait for it, against sums worked by hand; one rank has no straggler line.
#include <gtest/gtest.h>

#include "ddplab/core/error.hpp"
#include "ddplab/core/rank_report.hpp"

namespace ddplab {
namespace {

StepMetrics row(std::int64_t step, int rank, double compute, double optimizer, double exposed) {
  StepMetrics m;
  m.step = step, m.rank = rank;
  m.compute_s = compute, m.optimizer_s = optimizer, m.exposed_comm_s = exposed, m.comm_s = exposed + 0.001;
  m.step_s = compute + optimizer + exposed;
  return m;
}

TEST(RankReport, MeansFromTheSkippedStepSlowestRankAndWhatItCosts) {
  std::vector<StepMetrics> steps;
  // Step 0 is a warm-up with a huge compute on rank 0: skipped.
  steps.push_back(row(0, 0, 9.0, 0, 0)), steps.push_back(row(0, 1, 0.1, 0, 0)), steps.push_back(row(0, 2, 0.1, 0, 0));
  for (std::int64_t s = 1; s <= 2; ++s) {
    steps.push_back(row(s, 0, 0.010, 0.001, 0.020 + 0.002 * s));  // waits 0.022, 0.024
    steps.push_back(row(s, 1, 0.030, 0.003, 0.002));              // the straggler
    steps.push_back(row(s, 2, 0.012, 0.001, 0.018));
  }
  const RankReport r = rank_report(steps, 1);
  ASSERT_EQ(r.ranks.size(), 3u);
  EXPECT_EQ(r.ranks[0].steps, 2);
  EXPECT_NEAR(r.ranks[0].compute_s, 0.010, 1e-12);
  EXPECT_NEAR(r.ranks[0].exposed_comm_s, 0.023, 1e-12);
  EXPECT_EQ(r.slowest, 1);
  EXPECT_NEAR(r.others_work_s, (0.011 + 0.013) / 2, 1e-12);
  EXPECT_NEAR(r.others_wait_s, ((0.023 - 0.002) + (0.018 - 0.002)) / 2, 1e-12);
  RunRow run;
  run.id = 7;
  run.info.strategy = "baseline", run.info.world_size = 3, run.info.source = RunSource::Measured;
  const std::string text = rank_report_text(run, r);
  EXPECT_NE(text.find("run 7 baseline (3 ranks, measured): means per step over 2 steps, ms"), std::string::npos)
      << text;
  EXPECT_NE(text.find("slowest: rank 1, compute and optimizer 33.000 ms a step against 12.000 ms (the others' median); "
                      "the others wait 18.500 ms a step for it (their exposed comm beyond its own 2.000 ms)"),
            std::string::npos)
      << text;
  EXPECT_EQ(rank_report(steps, 0).ranks[0].steps, 3) << "nothing skipped";
  EXPECT_EQ(rank_report(steps, 99).ranks[0].steps, 1) << "the last step always counts";
}

TEST(RankReport, ResourcesByRankWhenStored) {
  std::vector<StepMetrics> steps = {row(0, 0, 0.01, 0, 0), row(0, 1, 0.02, 0, 0)};
  Resources r1;
  r1.rank = 1, r1.cpu_s = 3.0, r1.wall_s = 2.0, r1.peak_rss_bytes = 3 * 1024 * 1024 / 2,
  r1.peak_device_bytes = 64 << 20;
  const RankReport r = rank_report(steps, 0, {r1});
  EXPECT_FALSE(r.ranks[0].resources);
  ASSERT_TRUE(r.ranks[1].resources);
  const std::string text = rank_report_text(RunRow{}, r);
  EXPECT_NE(text.find("cpu % peak RSS MiB peak device MiB"), std::string::npos) << text;
  EXPECT_NE(text.find("    150          1.5            64.0\n"), std::string::npos) << "rank 1: 1.5 cores\n" << text;
  EXPECT_NE(text.find("      -            -               -\n"), std::string::npos) << "rank 0: none stored\n" << text;
  EXPECT_EQ(rank_report_text(RunRow{}, rank_report(steps, 0)).find("cpu %"), std::string::npos)
      << "no column without any";
}

TEST(RankReport, OneRankHasNoStragglerAndNoStepsIsAnError) {
  const RankReport r = rank_report({row(0, 0, 0.01, 0, 0)}, 0);
  EXPECT_EQ(r.slowest, -1);
  EXPECT_EQ(rank_report_text(RunRow{}, r).find("slowest"), std::string::npos);
  EXPECT_THROW(rank_report({}, 0), ddplab::InputError);
}

}  // namespace
}  // namespace ddplab
