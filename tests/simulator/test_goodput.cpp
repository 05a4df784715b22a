// Goodput: the predicted training time to a target accuracy (updates from the noise-scale fit x simulated
// time per update) against hand-computed figures, the measured counterpart's time summed over the slowest
// rank, which runs the fit uses and which check it, the refusals, and the stored rows.
#include <gtest/gtest.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ddplab/core/error.hpp"
#include "ddplab/simulator/goodput.hpp"
#include "stored_runs.hpp"
#include "temp_dir.hpp"

namespace ddplab {
namespace {

using test::eval;
using test::run_config;

TEST(TrainingTime, CountsTheWarmUpAtItsOwnPace) {
  SimPatternResult r;
  r.warmup_steps = 10;
  r.warmup_s = 0.5;
  r.step_s = 0.02;
  EXPECT_DOUBLE_EQ(training_time(r, 5), 0.25);         // halfway through the warm-up
  EXPECT_DOUBLE_EQ(training_time(r, 110), 0.5 + 2.0);  // the warm-up, then 100 steady steps
  r.warmup_steps = 0;
  r.warmup_s = 0;
  EXPECT_DOUBLE_EQ(training_time(r, 50.5), 1.01);
}

TEST(RankByWorld, OrdersTheStrategiesByTimeAtEachWorldSize) {
  auto prediction = [](std::string name, std::vector<double> times) {
    GoodputPrediction p;
    p.strategy = std::move(name);
    for (std::size_t i = 0; i < times.size(); ++i) {
      GoodputWorld w;
      w.world_size = 4 << (3 * i);  // 4, 32
      w.time_s = times[i];
      p.worlds.push_back(w);
    }
    return p;
  };
  const auto ranked = rank_by_world(
      {prediction("overlap", {1.0, 8.0}), prediction("local", {2.0, 3.0}), prediction("fp16", {0.5, 3.0})});
  ASSERT_EQ(ranked.size(), 2u);
  EXPECT_EQ(ranked[0].world_size, 4);
  EXPECT_EQ(ranked[0].by_time,
            (std::vector<std::pair<std::string, double>>{{"fp16", 0.5}, {"overlap", 1.0}, {"local", 2.0}}));
  EXPECT_EQ(ranked[1].world_size, 32);
  // A tie keeps the scenario's order.
  EXPECT_EQ(ranked[1].by_time,
            (std::vector<std::pair<std::string, double>>{{"local", 3.0}, {"fp16", 3.0}, {"overlap", 8.0}}));
  EXPECT_THROW(rank_by_world({prediction("overlap", {1.0, 8.0}), prediction("short", {1.0})}), ddplab::InternalError);
  EXPECT_TRUE(rank_by_world({}).empty());
}

// A scenario whose strategy's runs are stored as `ddplab run` stores them (config JSON for measured_scenario).
struct GoodputStore : ::testing::Test {
  test::TempDir dir;
  Store store{dir.file("s.db")};
  Scenario sc;
  StrategyConfig st;

  GoodputStore() {
    sc.name = "goodput";
    sc.model.layers = {784, 32, 10};
    sc.train.batch_size = 32;
    sc.cluster.link_bandwidth = 10e9 / 8;
    st.name = "overlap";
    st.policy = "overlap";
    st.schedule = "ring";
    sc.strategies = {st};
  }

  // A completed measured run that reaches 0.8 after exactly `updates` steps (interpolated between evaluations
  // 10 steps either side), every rank taking `step_s` per step, rank 0 twice that at step 0.
  std::int64_t add_run(int world, int batch, double updates, double step_s = 0.001) {
    Scenario s = sc;
    s.train.batch_size = batch;
    const auto id =
        store.begin_run({sc.name, st.name, "cpu", world, RunSource::Measured, run_config(s, st, world), "{}", batch});
    for (std::int64_t step = 0; step < static_cast<std::int64_t>(updates) + 20; ++step)
      for (int rank = 0; rank < world; ++rank) {
        StepMetrics m;
        m.step = step, m.rank = rank, m.step_s = step == 0 && rank == 0 ? 2 * step_s : step_s;
        store.add_step(id, m);
      }
    store.add_evaluation(id, eval(0, 0.1));
    store.add_evaluation(id, eval(static_cast<std::int64_t>(updates - 10), 0.7));
    store.add_evaluation(id, eval(static_cast<std::int64_t>(updates + 10), 0.9));
    store.finish_run(id, RunStatus::Completed);
    return id;
  }
};

// S(B) = 50 (1 + 64 / B): 250, 150 and 100 updates at global batch 16, 32 and 64; 75 at 128, 62.5 at 256.
TEST_F(GoodputStore, PredictsUpdatesTimesTheSimulatedStepAndChecksItAgainstHeldOutRuns) {
  std::vector<std::int64_t> fit = {add_run(2, 8, 250), add_run(2, 16, 150), add_run(2, 32, 100)};
  const auto check_a = add_run(4, 32, 70, 0.003), check_b = add_run(4, 32, 80, 0.003);
  fit.push_back(add_run(4, 16, 100));  // world 4 at global batch 64: fitted, not a counterpart of batch 32
  GoodputOptions opt;
  opt.target = 0.8;
  opt.worlds = {4, 8};
  opt.fit_below = 128;  // the 2-rank runs at 16, 32 and 64, not the 4-rank ones at 128
  opt.sim.compute = "2ms";
  const GoodputPrediction p = predict_goodput(sc, st, store, opt);
  EXPECT_NEAR(p.fit.s_min, 50, 1e-6);
  EXPECT_NEAR(p.fit.b_noise, 64, 1e-6);
  ASSERT_EQ(p.points.size(), fit.size());
  for (std::size_t i = 0; i < fit.size(); ++i) EXPECT_EQ(p.points[i].run, fit[i]);
  EXPECT_EQ(p.compute_origin, "--compute 2ms");
  ASSERT_EQ(p.worlds.size(), 2u);

  const GoodputWorld& w4 = p.worlds[0];
  EXPECT_EQ(w4.world_size, 4);
  EXPECT_EQ(w4.global_batch, 128);
  EXPECT_NEAR(w4.updates, 75, 1e-6);
  EXPECT_GE(w4.step_s, 0.002);  // at least the compute
  EXPECT_NEAR(w4.time_s, w4.warmup_s + (75 - static_cast<double>(w4.warmup_steps)) * w4.step_s, 1e-9);
  EXPECT_EQ(w4.measured_runs, (std::vector<std::int64_t>{check_a, check_b}));
  EXPECT_TRUE(w4.in_fit.empty());
  // 70 and 80 steps of 3 ms, the first step of each 6 ms: (0.213 + 0.243) / 2.
  ASSERT_TRUE(w4.measured_s.has_value());
  EXPECT_NEAR(*w4.measured_s, 0.228, 1e-9);
  const auto sim = store.run(w4.sim_run);
  ASSERT_TRUE(sim.has_value());
  EXPECT_EQ(sim->info.source, RunSource::Simulated);
  EXPECT_EQ(sim->info.world_size, 4);

  const GoodputWorld& w8 = p.worlds[1];
  EXPECT_EQ(w8.global_batch, 256);
  EXPECT_NEAR(w8.updates, 62.5, 1e-6);
  EXPECT_FALSE(w8.measured_s.has_value());

  // Without --fit-below the 4-rank runs at batch 32 are fitted too: in the fit, no longer a check.
  opt.fit_below = 0;
  const GoodputPrediction all = predict_goodput(sc, st, store, opt);
  EXPECT_EQ(all.points.size(), 6u);
  EXPECT_EQ(all.worlds[0].in_fit, (std::vector<std::int64_t>{check_a, check_b}));
  EXPECT_FALSE(all.worlds[0].measured_s.has_value());

  // Stored as `ddplab predict` stores them: one row per world size, the fit and its points in JSON.
  store.add_predictions(prediction_rows(sc, p, opt.target));
  const auto rows = store.predictions();
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[0].strategy, "overlap");
  EXPECT_EQ(rows[0].world_size, 4);
  EXPECT_DOUBLE_EQ(rows[0].time_s, w4.time_s);
  EXPECT_EQ(rows[0].sim_run_id, w4.sim_run);
  EXPECT_NEAR(*rows[0].measured_s, 0.228, 1e-9);
  EXPECT_EQ(nlohmann::json::parse(rows[0].measured_runs_json), nlohmann::json({check_a, check_b}));
  const auto fit_json = nlohmann::json::parse(rows[0].fit_json);
  EXPECT_NEAR(fit_json.at("b_noise").get<double>(), 64, 1e-6);
  EXPECT_EQ(fit_json.at("points").size(), 4u);
  EXPECT_FALSE(rows[1].measured_s.has_value());
  EXPECT_FALSE(rows[0].version.empty());
}

TEST_F(GoodputStore, RefusesWhatItCannotPredict) {
  add_run(2, 8, 250);
  add_run(2, 16, 150);
  const auto other_model = [&] {  // a third batch, but of another model: not this scenario's point
    Scenario s = sc;
    s.model.layers = {784, 64, 10};
    s.train.batch_size = 32;
    const auto id = store.begin_run({sc.name, st.name, "cpu", 2, RunSource::Measured, run_config(s, st, 2), "{}", 32});
    store.add_evaluation(id, eval(100, 0.9));
    store.finish_run(id, RunStatus::Completed);
    return id;
  }();
  const auto missed =
      store.begin_run({sc.name, st.name, "cpu", 2, RunSource::Measured, run_config(sc, st, 2), "{}", 32});
  store.add_evaluation(missed, eval(100, 0.5));
  store.finish_run(missed, RunStatus::Completed);
  GoodputOptions opt;
  opt.target = 0.8;
  opt.worlds = {4};
  opt.sim.compute = "2ms";
  try {
    predict_goodput(sc, st, store, opt);
    FAIL() << "fitted two batch sizes";
  } catch (const ddplab::InputError& e) {
    const std::string m = e.what();
    for (const std::string& part :
         {std::string("strategy \"overlap\""), std::string("3 or more global batch sizes, got 2"),
          fmt::format("never reached it: #{}", missed), std::string("--batch-size")})
      EXPECT_NE(m.find(part), std::string::npos) << part << " not in: " << m;
    EXPECT_EQ(m.find(fmt::format("#{} ", other_model)), std::string::npos) << m;
  }
  Scenario join = sc;
  join.data.uneven = "join";
  try {
    predict_goodput(join, st, store, opt);
    FAIL() << "predicted a join scenario";
  } catch (const ddplab::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("data.uneven = \"join\""), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ddplab
