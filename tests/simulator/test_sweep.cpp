// A baseline DDP step on the simulator, compute sources, and sweeps written to a results store.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "ddplab/core/store.hpp"
#include "ddplab/simulator/simulator.hpp"
#include "temp_dir.hpp"
#include "sim_test_util.hpp"

namespace ddplab {
namespace {


Scenario scenario() {
  Scenario s;
  s.name = "simtest";
  s.strategies = {StrategyConfig{}};
  return s;
}

using test::alpha_beta;

TEST(SimulatorStep, StepIsComputePlusCommPlusOptimizer) {
  const Scenario sc = scenario();
  const int n = 4;
  const auto r = simulate_step(sc, sc.strategies[0], n, 0.05, 0.01, alpha_beta());
  EXPECT_EQ(r.schedule, "ring");  // "native" is replayed as ring
  EXPECT_NEAR(r.compute_s, 0.05, 1e-9);
  EXPECT_NEAR(r.optimizer_s, 0.01, 1e-9);
  EXPECT_NEAR(r.step_s, r.compute_s + r.comm_s + r.optimizer_s, 1e-9);
  EXPECT_DOUBLE_EQ(r.exposed_comm_s, r.comm_s);

  const std::size_t count = sc.model.parameter_count();
  const ClusterConfig& c = sc.cluster;
  const double chunk = static_cast<double>(chunk_of(count, n, 0).count * kGradientElemBytes);
  const double ring = 2.0 * (n - 1) * (chunk / c.link_bandwidth + 2 * c.link_latency);
  EXPECT_NEAR(r.comm_s, ring, 0.02 * ring);

  ASSERT_EQ(r.ranks.size(), static_cast<std::size_t>(n));
  const Schedule s = ring_allreduce(n, count);
  for (int rank = 0; rank < n; ++rank) {
    const auto& t = r.ranks[static_cast<std::size_t>(rank)];
    EXPECT_NEAR(t.step_s, t.compute_s + t.comm_s + t.optimizer_s, 1e-9);
    EXPECT_EQ(r.bytes_sent[static_cast<std::size_t>(rank)], s.bytes_sent(rank, kGradientElemBytes));
  }
}

TEST(SimulatorStep, RejectsUnsupportedStrategies) {
  const Scenario sc = scenario();
  StrategyConfig st;
  st.policy = "nope";
  EXPECT_THROW(simulate_step(sc, st, 2, 0.01, 0.0), std::invalid_argument);
  st = StrategyConfig{};
  st.codec = "nope";
  EXPECT_THROW(simulate_step(sc, st, 2, 0.01, 0.0), std::invalid_argument);
  EXPECT_THROW(simulate_step(sc, StrategyConfig{}, 2, 0.01, 0.0, {}, {.step = -1}), std::invalid_argument);
  EXPECT_THROW(simulate_step(sc, StrategyConfig{}, 2, 0.01, 0.0, {}, {.ranks_per_node = 0}), std::invalid_argument);
  st = StrategyConfig{};
  st.schedule = "nope";
  EXPECT_THROW(simulate_step(sc, st, 2, 0.01, 0.0), std::invalid_argument);
  EXPECT_THROW(simulate_step(sc, StrategyConfig{}, 0, 0.01, 0.0), std::invalid_argument);
}

TEST(SimulatorSources, ErrorsClearlyWithoutASource) {
  const test::TempDir tmp("ddplab-sim");
  Store store(tmp.file("results.db"));
  const Scenario sc = scenario();
  try {
    compute_source(sc, sc.strategies[0], store);
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("ddplab run"), std::string::npos) << msg;
    EXPECT_NE(msg.find("[cluster].compute_s"), std::string::npos) << msg;
  }
  std::vector<int> worlds{2};
  EXPECT_THROW(simulate_sweep(sc, sc.strategies[0], worlds, store), std::runtime_error);
  EXPECT_TRUE(store.runs().empty());
}

TEST(SimulatorSources, ScenarioOverridesMeasured) {
  const test::TempDir tmp("ddplab-sim");
  Store store(tmp.file("results.db"));
  Scenario sc = scenario();
  sc.cluster.compute_s = 0.02;
  auto src = compute_source(sc, sc.strategies[0], store);
  EXPECT_DOUBLE_EQ(src.compute_s, 0.02);
  EXPECT_DOUBLE_EQ(src.optimizer_s, 0.0);  // defaults to 0 when only compute_s is given
  EXPECT_EQ(src.origin, "scenario [cluster].compute_s");

  // A completed measured run of the same scenario and strategy.
  RunInfo info;
  info.scenario = sc.name;
  info.strategy = sc.strategies[0].name;
  info.backend = "cpu";
  info.world_size = 2;
  info.source = "measured";
  info.config_json = "{}";
  info.host_info = "{}";
  info.batch_size = 64;
  const auto id = store.begin_run(info);
  for (int rank = 0; rank < 2; ++rank) {
    StepMetrics m;
    m.rank = rank;
    m.compute_s = 0.012;
    m.optimizer_s = 0.002;
    m.comm_s = m.exposed_comm_s = 0.004;
    m.step_s = 0.018;
    m.samples = 64;
    store.add_step(id, m);
  }
  store.finish_run(id, "completed");
  // The scenario's compute_s still wins (it corrects a measurement on oversubscribed cores)...
  src = compute_source(sc, sc.strategies[0], store);
  EXPECT_DOUBLE_EQ(src.compute_s, 0.02);
  EXPECT_EQ(src.origin, "scenario [cluster].compute_s");
  // ...and without it the completed measured run is used.
  sc.cluster.compute_s.reset();
  src = compute_source(sc, sc.strategies[0], store);
  EXPECT_NEAR(src.compute_s, 0.012, 1e-12);
  EXPECT_NEAR(src.optimizer_s, 0.002, 1e-12);
  EXPECT_EQ(src.origin, "measured run #" + std::to_string(id));
}

TEST(SimulatorSweep, WritesSimulatedRuns) {
  const test::TempDir tmp("ddplab-sim");
  Scenario sc = scenario();
  sc.cluster.compute_s = 0.02;
  sc.cluster.optimizer_s = 0.005;
  std::vector<std::pair<int, int>> calls;
  std::vector<SweepPoint> points;
  {
    Store store(tmp.file("results.db"));
    points = simulate_sweep(sc, sc.strategies[0], {2, 4}, store, alpha_beta(),
                            [&](int done, int total) { calls.emplace_back(done, total); });
  }
  ASSERT_EQ(points.size(), 2u);
  EXPECT_EQ(calls, (std::vector<std::pair<int, int>>{{1, 2}, {2, 2}}));
  for (const auto& p : points) {
    EXPECT_NEAR(p.result.samples_per_s, p.world_size * 64 / p.result.step_s, 1e-6);
    EXPECT_GT(p.efficiency, 0.0);
    EXPECT_LT(p.efficiency, 1.0);
    EXPECT_NEAR(p.efficiency, 0.025 / p.result.step_s, 1e-9);
  }

  Store store(tmp.file("results.db"));  // read back from a fresh handle
  const auto runs = store.runs();
  ASSERT_EQ(runs.size(), 2u);
  for (std::size_t i = 0; i < runs.size(); ++i) {
    const auto& run = runs[i];
    const auto& p = points[i];
    EXPECT_EQ(run.id, p.run_id);
    EXPECT_EQ(run.info.source, "simulated");
    EXPECT_EQ(run.info.backend, "simgrid");
    EXPECT_EQ(run.info.world_size, p.world_size);
    EXPECT_EQ(run.info.scenario, "simtest");
    EXPECT_EQ(run.info.batch_size, 64);
    EXPECT_EQ(run.status, "completed");
    const auto config = nlohmann::json::parse(run.info.config_json);
    EXPECT_EQ(config.at("world_size").get<int>(), p.world_size);
    EXPECT_EQ(config.at("simulation").at("compute_origin").get<std::string>(), "scenario [cluster].compute_s");
    EXPECT_EQ(config.at("simulation").at("network_model").get<std::string>(), "CM02");
    // A flat strategy's steps are all alike: one steady step, no warm-up.
    EXPECT_EQ(config.at("simulation").at("steps"), nlohmann::json::array({0}));
    EXPECT_EQ(StepPattern::from_json(config.at("pattern")).segments.size(), 1u);
    EXPECT_EQ(config.at("strategy").at("policy").get<std::string>(), "flat");
    const auto steps = store.steps(run.id);
    ASSERT_EQ(steps.size(), static_cast<std::size_t>(p.world_size));
    for (const auto& m : steps) {
      EXPECT_EQ(m.samples, 64);
      EXPECT_EQ(static_cast<std::uint64_t>(m.bytes_sent), p.result.steps.at(0).bytes_sent[static_cast<std::size_t>(m.rank)]);
      EXPECT_NEAR(m.compute_s, 0.02, 1e-9);
    }
    const auto summary = store.summary(run.id);
    EXPECT_NEAR(summary.step_s, p.result.step_s, 1e-9);
    EXPECT_NEAR(summary.samples_per_s, p.result.samples_per_s, 1e-6);
    EXPECT_EQ(summary.warmup_steps, 0);
  }
}

}  // namespace
}  // namespace ddplab
