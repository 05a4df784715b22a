// Statistical efficiency: the gradient noise scale fit (McCandlish et al. 2018) against points made from
// known S_min and B_noise, the interpolated steps to a target accuracy, and the points gathered from stored
// runs (global batch over workers and accumulated micro-steps).
#include <gtest/gtest.h>

#include "ddplab/core/error.hpp"
#include "ddplab/simulator/statistical_efficiency.hpp"
#include "stored_runs.hpp"
#include "temp_dir.hpp"

namespace ddplab {
namespace {

std::vector<BatchPoint> exact_points(double s_min, double b_noise, std::vector<double> batches) {
  std::vector<BatchPoint> p;
  for (double b : batches) p.push_back({b, s_min * (1 + b_noise / b)});
  return p;
}

TEST(NoiseScaleFit, RecoversTheModelsParameters) {
  const NoiseScaleFit f = fit_noise_scale(exact_points(120, 800, {64, 256, 1024, 4096}));
  EXPECT_NEAR(f.s_min, 120, 1e-9);
  EXPECT_NEAR(f.b_noise, 800, 1e-7);
  EXPECT_LT(f.rms_rel_error, 1e-12);
  EXPECT_EQ(f.points, 4u);
  // 64 -> 1620 updates, 102,400 samples; at B = B_noise twice S_min updates, 2 E_min samples.
  EXPECT_NEAR(f.updates(800), 240, 1e-9);
}

TEST(NoiseScaleFit, StatesItsErrorOnNoisyPoints) {
  std::vector<BatchPoint> p = exact_points(100, 500, {32, 128, 512, 2048});
  const double noise[] = {1.05, 0.96, 1.03, 0.97};
  for (std::size_t i = 0; i < p.size(); ++i) p[i].updates *= noise[i];
  const NoiseScaleFit f = fit_noise_scale(p);
  EXPECT_NEAR(f.s_min, 100, 10);
  EXPECT_NEAR(f.b_noise, 500, 100);
  EXPECT_GT(f.rms_rel_error, 0.005);
  EXPECT_LT(f.max_rel_error, 0.06);
  for (const BatchPoint& q : p)
    EXPECT_LE(std::abs(f.updates(q.global_batch) - q.updates) / q.updates, f.max_rel_error + 1e-12);
}

TEST(NoiseScaleFit, RefusesWhatItCannotFit) {
  try {
    fit_noise_scale(exact_points(100, 500, {64, 256, 64}));
    FAIL() << "two batch sizes fitted";
  } catch (const ddplab::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("3 or more global batch sizes, got 2"), std::string::npos) << e.what();
  }
  // Updates growing with the batch: a negative noise scale.
  EXPECT_THROW(fit_noise_scale({{64, 100}, {256, 150}, {1024, 300}}), ddplab::InputError);
  EXPECT_THROW(fit_noise_scale({{64, 100}, {0, 150}, {1024, 300}}), ddplab::InputError);
}

using test::eval;

TEST(StepsToAccuracy, InterpolatesBetweenTheEvaluationsAroundTheTarget) {
  const std::vector<Evaluation> evals{eval(100, 0.70), eval(200, 0.80), eval(300, 0.86), eval(400, 0.85),
                                      eval(500, 0.90)};
  EXPECT_DOUBLE_EQ(*steps_to_accuracy(evals, 0.83), 250.0);  // halfway from 0.80 at 200 to 0.86 at 300
  EXPECT_DOUBLE_EQ(*steps_to_accuracy(evals, 0.86), 300.0);
  EXPECT_DOUBLE_EQ(*steps_to_accuracy(evals, 0.5), 100.0);    // already there at the first evaluation
  EXPECT_NEAR(*steps_to_accuracy(evals, 0.88), 460.0, 1e-9);  // from the dip at 400: 0.03 of 0.05 on
  EXPECT_FALSE(steps_to_accuracy(evals, 0.95).has_value());
  EXPECT_FALSE(steps_to_accuracy({}, 0.5).has_value());
}

TEST(MeasuredBatchPoints, GlobalBatchCountsWorkersAndAccumulation) {
  test::TempDir dir;
  Store store(dir.file("s.db"));
  Scenario sc;
  sc.name = "goodput";
  StrategyConfig st;
  st.name = "overlap";
  st.policy = "overlap";
  st.schedule = "ring";
  sc.strategies = {st};
  auto add_run = [&](int world, int batch, int accumulate, std::vector<Evaluation> evals, RunStatus status) {
    Scenario s = sc;
    s.train.batch_size = batch;
    StrategyConfig t = st;
    t.accumulate_steps = accumulate;
    const auto id = store.begin_run(
        {sc.name, st.name, "cpu", world, RunSource::Measured, test::run_config(s, t, world), "{}", batch});
    for (const Evaluation& e : evals) store.add_evaluation(id, e);
    store.finish_run(id, status);
    return id;
  };
  add_run(1, 32, 1, {eval(100, 0.7), eval(200, 0.9)}, RunStatus::Completed);     // batch 32: 150 updates to 0.8
  add_run(2, 32, 2, {eval(100, 0.8)}, RunStatus::Completed);                     // batch 128: 50 updates
  const auto never = add_run(2, 64, 1, {eval(100, 0.6)}, RunStatus::Completed);  // never reaches 0.8
  add_run(2, 16, 1, {eval(10, 0.9)}, RunStatus::Failed);                         // not completed: left out
  std::vector<std::int64_t> missed;
  const auto points = measured_batch_points(store, sc, st, 0.8, &missed);
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(points[0].global_batch, 32);
  EXPECT_DOUBLE_EQ(points[0].updates, 150);
  EXPECT_EQ(points[1].global_batch, 128);
  EXPECT_DOUBLE_EQ(points[1].updates, 50);
  EXPECT_EQ(missed, std::vector<std::int64_t>{never});
  StrategyConfig other = st;
  other.name = "zero1";
  EXPECT_TRUE(measured_batch_points(store, sc, other, 0.8).empty());
}

}  // namespace
}  // namespace ddplab
