// The failure model (failures.hpp): Daly's expected wall time against the process it describes, drawn at
// random; his interval against the formula's own minimum; and the limits that can be worked by hand.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>

#include "ddplab/simulator/failures.hpp"
#include "temp_dir.hpp"

namespace ddplab {
namespace {

constexpr double kHour = 3600;

FailureModel model(double node_mtbf_h, int nodes, double checkpoint_s, double restart_s) {
  return {node_mtbf_h * kHour, nodes, checkpoint_s, restart_s};
}

TEST(Failures, ExpectedWallTimeMatchesTheProcessDrawnAtRandom) {
  // From rare failures to ones every few intervals, each against 4000 drawn runs.
  for (const FailureModel& f : {model(5000, 128, 60, 300), model(1000, 512, 30, 120), model(200, 256, 20, 600)}) {
    const double work = 48 * kHour, interval = daly_interval(f);
    const double formula = expected_wall_time(work, interval, f);
    const double drawn = sampled_wall_time(work, interval, f, 4000, 7);
    EXPECT_NEAR(drawn / formula, 1.0, 0.01) << "M = " << f.mtbf_s() << " s: formula " << formula << ", drawn " << drawn;
    EXPECT_GT(formula, work);
  }
  // A job shorter than its interval: one segment of what there is.
  const FailureModel f = model(200, 256, 20, 600);
  EXPECT_NEAR(sampled_wall_time(600, 1800, f, 20000, 3) / expected_wall_time(600, 1800, f), 1.0, 0.01);
}

TEST(Failures, DalysIntervalIsTheMinimumOfTheExpectedTime) {
  for (const FailureModel& f : {model(5000, 128, 60, 300), model(1000, 1024, 120, 60), model(50, 64, 600, 0)}) {
    // A job far longer than any interval tried, so that its last, partial segment does not count.
    const double work = 1e5 * kHour;
    double best = std::numeric_limits<double>::infinity(), at = 0;
    for (double t = 1; t < 20 * kHour; t *= 1.001)
      if (const double w = expected_wall_time(work, t, f); w < best) best = w, at = t;
    const double daly = daly_interval(f);
    EXPECT_NEAR(expected_wall_time(work, daly, f) / best, 1.0, 1e-4) << "minimum at " << at << " s, Daly says " << daly;
    EXPECT_NEAR(daly / at, 1.0, 0.05);
    // Young's first-order interval is close when checkpoints are short against the MTBF.
    if (f.checkpoint_s < 0.01 * f.mtbf_s()) {
      EXPECT_NEAR(young_interval(f) / daly, 1.0, 0.1);
    }
  }
}

TEST(Failures, LimitsWorkedByHand) {
  // No failures: only the checkpoints' stalls, C per interval.
  FailureModel never{std::numeric_limits<double>::infinity(), 8, 10, 60};
  EXPECT_DOUBLE_EQ(expected_wall_time(1000, 100, never), 1100);
  // Young: sqrt(2 C M) with M = 1000 h / 100 nodes = 36000 s and C = 50 s.
  const FailureModel f = model(1000, 100, 50, 0);
  EXPECT_DOUBLE_EQ(young_interval(f), std::sqrt(2 * 50.0 * 36000));
  // First order in 1/M: T (1 + C/tau + (tau + C) / 2M) for R = 0.
  const double tau = 1800, first_order = 3600 * (1 + 50 / tau + (tau + 50) / (2 * 36000));
  EXPECT_NEAR(expected_wall_time(3600, tau, f) / first_order, 1.0, 2e-3);
  // Checkpoints longer than 2M: Daly says write one every M.
  EXPECT_DOUBLE_EQ(daly_interval(model(1, 1, 3 * kHour, 0)), kHour);
}

RunInfo measured(const std::string& strategy) {
  RunInfo info;
  info.scenario = "default", info.strategy = strategy, info.backend = "cpu", info.world_size = 2;
  info.source = RunSource::Measured, info.config_json = "{}", info.host_info = "{}", info.batch_size = 32;
  return info;
}

TEST(Failures, MeasuredCheckpointIsTheMedianOfTheStrategysRuns) {
  test::TempDir dir;
  Store s(dir.file("r.db"));
  EXPECT_FALSE(measured_checkpoint(s, "default", "ring"));
  const std::int64_t a = s.begin_run(measured("ring")), b = s.begin_run(measured("ring"));
  const std::int64_t other = s.begin_run(measured("tree"));
  s.add_checkpoint({a, 10, "x", 2, 100, 0.3, false, ""});
  s.add_checkpoint({a, 20, "x", 2, 100, 0.1, false, ""});
  s.add_checkpoint({b, 10, "x", 2, 120, 0.2, true, ""});
  s.add_checkpoint({other, 10, "x", 2, 100, 9.0, false, ""});
  const auto m = measured_checkpoint(s, "default", "ring");
  ASSERT_TRUE(m);
  EXPECT_DOUBLE_EQ(m->write_s, 0.2);
  EXPECT_EQ(m->checkpoints, 3);
  EXPECT_EQ(m->bytes, 120);
}

}  // namespace
}  // namespace ddplab
