// A baseline DDP step on the simulator, compute sources, and sweeps written to a results store.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <stdexcept>

#include <nlohmann/json.hpp>

#include "ddplab/core/error.hpp"
#include "ddplab/core/store.hpp"
#include "ddplab/simulator/simulator.hpp"
#include "stored_runs.hpp"
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
  // "native" replays as the backend's own collective; here the ring, to check it against its formula.
  SimOptions o = alpha_beta();
  o.native = NativeReplay{std::nullopt, "ring"};
  const auto r = simulate_step(sc, sc.strategies[0], n, 0.05, 0.01, o);
  EXPECT_EQ(r.schedule, "native (replayed as ring)");
  EXPECT_NEAR(r.compute_s, 0.05, 1e-9);
  EXPECT_NEAR(r.optimizer_s, 0.01, 1e-9);
  EXPECT_NEAR(r.step_s, r.compute_s + r.comm_s + r.optimizer_s, 1e-9);
  EXPECT_DOUBLE_EQ(r.exposed_comm_s, r.comm_s);

  const std::size_t count = sc.model.parameter_count();
  const ClusterConfig& c = sc.cluster;
  const double chunk = static_cast<double>(chunk_of(count, n, 0).count * kGradientElemBytes);
  const double ring = 2.0 * (n - 1) * (chunk / c.link_bandwidth + 2 * c.link_latency);
  // Then the codec's average: a divide of every element (8 bytes each at a core's 10 GB/s).
  const double divide = 8.0 * static_cast<double>(count) / 10e9;
  EXPECT_NEAR(r.comm_s, ring + divide, 0.02 * ring);

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
  EXPECT_THROW(simulate_step(sc, st, 2, 0.01, 0.0), ddplab::InputError);
  st = StrategyConfig{};
  st.codec = "nope";
  EXPECT_THROW(simulate_step(sc, st, 2, 0.01, 0.0), ddplab::InputError);
  EXPECT_THROW(simulate_step(sc, StrategyConfig{}, 2, 0.01, 0.0, {}, {.step = -1}), ddplab::InputError);
  EXPECT_THROW(simulate_step(sc, StrategyConfig{}, 2, 0.01, 0.0, {}, {.ranks_per_node = 0}), ddplab::InputError);
  st = StrategyConfig{};
  st.schedule = "nope";
  EXPECT_THROW(simulate_step(sc, st, 2, 0.01, 0.0), ddplab::InputError);
  EXPECT_THROW(simulate_step(sc, StrategyConfig{}, 0, 0.01, 0.0), ddplab::InputError);
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

// A completed measured run of `st` as the trainer stores it: config with model, train and strategy, and
// host info with its ranks on the host and the cores there. Every rank's every step has the same times,
// times the scenario's straggler factor of the rank (as the runtime stretches a straggler's compute).
std::int64_t measured_run(Store& store, const Scenario& sc, const StrategyConfig& st, int world, double compute_s,
                          double optimizer_s, int ranks_on_host, int cores, int steps = 4) {
  RunInfo info;
  info.scenario = sc.name;
  info.strategy = st.name;
  info.backend = "cpu";
  info.world_size = world;
  info.source = RunSource::Measured;
  info.config_json = test::run_config(sc, st, world);
  info.host_info = nlohmann::json{{"cores", cores}, {"ranks_on_host", ranks_on_host}}.dump();
  info.batch_size = sc.train.batch_size;
  const auto id = store.begin_run(info);
  for (int step = 0; step < steps; ++step)
    for (int rank = 0; rank < world; ++rank) {
      StepMetrics m;
      m.step = step;
      m.rank = rank;
      m.compute_s = compute_s * sc.cluster.compute_factor(rank);
      m.optimizer_s = optimizer_s * sc.cluster.compute_factor(rank);
      m.comm_s = m.exposed_comm_s = 0.004;
      m.step_s = m.compute_s + m.optimizer_s + 0.004;
      m.samples = 64;
      store.add_step(id, m);
    }
  store.finish_run(id, RunStatus::Completed);
  return id;
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
  EXPECT_EQ(src.kind, "scenario");

  const auto id = measured_run(store, sc, sc.strategies[0], 2, 0.012, 0.002, 2, 2);
  // The scenario's compute_s still wins (it corrects a measurement)...
  src = compute_source(sc, sc.strategies[0], store);
  EXPECT_DOUBLE_EQ(src.compute_s, 0.02);
  EXPECT_EQ(src.origin, "scenario [cluster].compute_s");
  // ...and without it the completed measured run is used, and named with its cores.
  sc.cluster.compute_s.reset();
  src = compute_source(sc, sc.strategies[0], store);
  EXPECT_NEAR(src.compute_s, 0.012, 1e-12);
  EXPECT_NEAR(src.optimizer_s, 0.002, 1e-12);
  EXPECT_EQ(src.kind, "run");
  EXPECT_EQ(src.run_id, id);
  EXPECT_EQ(src.origin, "measured run #" + std::to_string(id) + " (2 ranks, 2 ranks on 2 cores, steady state)");
  // Asked for by id, the same.
  EXPECT_NEAR(compute_source(sc, sc.strategies[0], store, "run:" + std::to_string(id)).compute_s, 0.012, 1e-12);
}

// A newer run with more ranks than cores is passed over by auto (and the origin says so), and refused
// when named, with the reason and the fix, unless allowed.
TEST(SimulatorSources, OversubscribedRunIsPassedOverOrRefused) {
  const test::TempDir tmp("ddplab-sim");
  Store store(tmp.file("results.db"));
  Scenario sc = scenario();
  const auto good = measured_run(store, sc, sc.strategies[0], 2, 0.012, 0.002, 2, 2);
  const auto over = measured_run(store, sc, sc.strategies[0], 4, 0.030, 0.004, 4, 2);
  ComputeSource src = compute_source(sc, sc.strategies[0], store);
  EXPECT_EQ(src.run_id, good);
  EXPECT_NEAR(src.compute_s, 0.012, 1e-12);
  EXPECT_NE(src.origin.find("run #" + std::to_string(over) + " (4 ranks on 2 cores) passed over"), std::string::npos)
      << src.origin;
  const std::string named = "run:" + std::to_string(over);
  try {
    compute_source(sc, sc.strategies[0], store, named);
    FAIL() << "expected a refusal";
  } catch (const std::runtime_error& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("4 ranks on 2 cores"), std::string::npos) << msg;
    EXPECT_NE(msg.find("--allow-oversubscribed"), std::string::npos) << msg;
  }
  EXPECT_NEAR(compute_source(sc, sc.strategies[0], store, named, true).compute_s, 0.030, 1e-12);
  // With only the oversubscribed run, auto has nothing and says why.
  Store alone(tmp.file("alone.db"));
  measured_run(alone, sc, sc.strategies[0], 4, 0.030, 0.004, 4, 2);
  try {
    compute_source(sc, sc.strategies[0], alone);
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("passed over"), std::string::npos) << e.what();
  }
}

// A sweep over global batches leaves runs at other per-rank batches in the store: auto takes the newest
// run at the scenario's own batch, not the newest run.
TEST(SimulatorSources, RunsAtAnotherBatchAreNotItsCompute) {
  const test::TempDir tmp("ddplab-sim");
  Store store(tmp.file("results.db"));
  Scenario sc = scenario();
  const auto own = measured_run(store, sc, sc.strategies[0], 2, 0.012, 0.002, 2, 2);
  Scenario smaller = sc;
  smaller.train.batch_size = sc.train.batch_size / 4;
  measured_run(store, smaller, sc.strategies[0], 2, 0.003, 0.002, 2, 2);
  const ComputeSource src = compute_source(sc, sc.strategies[0], store);
  EXPECT_EQ(src.run_id, own);
  EXPECT_NEAR(src.compute_s, 0.012, 1e-12);
}

// A measured run's means per micro-step and rank become one worker's micro-step and one whole-model update
// through the strategy's own plans.
TEST(SimulatorSources, MeasuredMeansAreBroughtToOneWorkerAndOneUpdate) {
  const test::TempDir tmp("ddplab-sim");
  Store store(tmp.file("results.db"));
  Scenario sc = scenario();
  StrategyConfig zero = sc.strategies[0];
  zero.name = "zero1";
  zero.policy = "zero1";
  zero.schedule = "ring";
  StrategyConfig acc = sc.strategies[0];
  acc.name = "acc";
  acc.accumulate_steps = 4;
  StrategyConfig ps = sc.strategies[0];
  ps.name = "ps";
  ps.policy = "ps";
  ps.policy_options["ps_servers"] = "1";
  // ZeRO-1 on 4 ranks: each rank updates a quarter of the model.
  const auto z = measured_run(store, sc, zero, 4, 0.010, 0.001, 4, 4);
  const ComputeSource zs = compute_source(sc, zero, store, "run:" + std::to_string(z));
  EXPECT_NEAR(zs.compute_s, 0.010, 1e-12);
  EXPECT_NEAR(zs.optimizer_s, 0.004, 1e-6);  // chunk sizes are within one element of a quarter
  // Accumulation of 4: one update per 4 micro-steps; the rows' mean optimizer is a quarter of it.
  const auto a = measured_run(store, sc, acc, 2, 0.010, 0.0005, 2, 2, 8);
  EXPECT_NEAR(compute_source(sc, acc, store, "run:" + std::to_string(a)).optimizer_s, 0.002, 1e-12);
  // A dedicated server computes nothing: 3 workers' compute over 4 ranks' rows.
  const auto p = measured_run(store, sc, ps, 4, 0.0075, 0.0, 4, 4);
  EXPECT_NEAR(compute_source(sc, ps, store, "run:" + std::to_string(p)).compute_s, 0.010, 1e-12);
}

// The simulator stretches a straggler's compute by its factor: a run's own straggler must not count twice.
TEST(SimulatorSources, AMeasuredStragglersTimeIsDividedByItsFactor) {
  const test::TempDir tmp("ddplab-sim");
  Store store(tmp.file("results.db"));
  Scenario sc = scenario();
  sc.cluster.stragglers = {{1, -1, 3.0}};
  const auto id = measured_run(store, sc, sc.strategies[0], 4, 0.010, 0.001, 4, 4);
  const ComputeSource src = compute_source(sc, sc.strategies[0], store, "run:" + std::to_string(id));
  EXPECT_NEAR(src.compute_s, 0.010, 1e-12) << "not the rows' mean, 0.015";
  EXPECT_NEAR(src.optimizer_s, 0.001, 1e-12);
  EXPECT_NE(src.origin.find("each straggler's time divided by its factor"), std::string::npos) << src.origin;
}

TEST(SimulatorSources, ExplicitSpecsAndTheirErrors) {
  const test::TempDir tmp("ddplab-sim");
  Store store(tmp.file("results.db"));
  Scenario sc = scenario();
  sc.cluster.optimizer_s = 0.001;
  ComputeSource src = compute_source(sc, sc.strategies[0], store, "13ms");
  EXPECT_DOUBLE_EQ(src.compute_s, 0.013);
  EXPECT_DOUBLE_EQ(src.optimizer_s, 0.001);
  EXPECT_EQ(src.kind, "given");
  auto expect_error = [&](const std::string& spec, const std::string& part) {
    try {
      compute_source(sc, sc.strategies[0], store, spec);
      ADD_FAILURE() << spec << ": expected an error";
    } catch (const std::exception& e) {
      EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << spec << ": " << e.what();
    }
  };
  expect_error("fast", "expected auto, calibration, run:ID, flops or a time");
  expect_error("0ms", "must be positive");
  expect_error("run:x", "run:ID with a positive integer ID");
  expect_error("run:99", "has no run #99");
  expect_error("flops", "no [cluster].device_flops");
  expect_error("calibration", "names no [cluster].calibration");
  StrategyConfig other = sc.strategies[0];
  Scenario wider = sc;
  wider.model.layers = {784, 32, 10};
  const auto id = measured_run(store, wider, other, 2, 0.01, 0.0, 2, 2);
  expect_error("run:" + std::to_string(id),
               "trained model {\"layers\":[784,32,10],\"parameter_count\":25450,\"type\":\"mlp\"}");
  // Nothing stored was changed by the refusals.
  EXPECT_EQ(store.runs().size(), 1u);
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
    EXPECT_EQ(run.info.source, RunSource::Simulated);
    EXPECT_EQ(run.info.backend, "simgrid");
    EXPECT_EQ(run.info.world_size, p.world_size);
    EXPECT_EQ(run.info.scenario, "simtest");
    EXPECT_EQ(run.info.batch_size, 64);
    EXPECT_EQ(run.status, RunStatus::Completed);
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
      EXPECT_EQ(static_cast<std::uint64_t>(m.bytes_sent),
                p.result.steps.at(0).bytes_sent[static_cast<std::size_t>(m.rank)]);
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

namespace ddplab {
namespace {

// MFU: the model's FLOPs per second over the world's peak. With compute from device_flops x
// compute_efficiency, it is the sweep's efficiency x compute_efficiency x the compute's share of compute
// plus optimizer; without device_flops there is none.
TEST(SimulatorSweep, MfuIsTheModelsFlopsOverTheWorldsPeak) {
  const test::TempDir tmp("ddplab-sim");
  Store store(tmp.file("results.db"));
  Scenario sc = test::small_mlp_scenario("mfu");
  const StrategyConfig st = test::strategy_config("overlap", "ring");
  sc.strategies = {st};
  sc.cluster.device_flops = 1e12;
  sc.cluster.compute_efficiency = 0.4;
  sc.cluster.optimizer_s = 0.0;
  const auto points = simulate_sweep(sc, st, {4}, store);
  ASSERT_TRUE(points.front().mfu);
  EXPECT_NEAR(*points.front().mfu, points.front().efficiency * 0.4, 1e-9);
  const ComputeSource src = compute_source(sc, st, store);
  EXPECT_NE(describe_mfu(sc, points.front(), src).find("compute_efficiency = 0.40"), std::string::npos);
  sc.cluster.device_flops.reset();
  sc.cluster.compute_s = 0.01;
  EXPECT_FALSE(simulate_sweep(sc, st, {4}, store).front().mfu);
}

}  // namespace
}  // namespace ddplab
