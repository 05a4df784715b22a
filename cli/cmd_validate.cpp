// `ddplab validate`: replays every measured configuration in the results store on the simulator and reports
// predicted vs measured, with % error. Measured training runs are simulated with their own scenario,
// strategy, world size and measured compute means (step time, comm time); stored collective benches with
// simulate_schedule (busbw). With a calibration (--name, else the latest stored) its network fit replaces
// the scenario's links. Rows go to table validations. Exits non-zero on errors only, never on large
// prediction errors.
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <map>
#include <tuple>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "ddplab/core/scenario.hpp"
#include "ddplab/core/store.hpp"
#include "ddplab/runtime/collective_bench.hpp"
#include "ddplab/simulator/calibration.hpp"
#include "ddplab/simulator/simulator.hpp"
#include "ddplab/strategies/schedule.hpp"

namespace ddplab::cli {
namespace {

struct ValidateRequest {
  std::string db = kDefaultDb;
  std::string name;  // calibration; empty: the latest stored, if any
  std::string network_model = "LV08";
};

// The parts of a measured run's scenario that the simulator needs, from its stored config JSON (trainer.cpp:
// Scenario::to_json plus "strategy" and "world_size").
Scenario scenario_of(const RunRow& run) {
  const auto cfg = nlohmann::json::parse(run.info.config_json);
  Scenario sc;
  sc.name = run.info.scenario;
  const auto& model = cfg.at("model");
  sc.model.type = model.at("type").get<std::string>();
  if (sc.model.type != "mlp") throw std::invalid_argument(fmt::format("model type \"{}\" (only the MLP is trained)", sc.model.type));
  sc.model.layers = model.at("layers").get<std::vector<int>>();
  sc.train.batch_size = cfg.at("train").at("batch_size").get<int>();
  sc.train.seed = cfg.at("train").at("seed").get<std::uint64_t>();
  const auto& cl = cfg.at("cluster");
  sc.cluster.link_bandwidth = cl.at("link_bandwidth").get<double>();
  sc.cluster.link_latency = cl.at("link_latency").get<double>();
  const auto& s = cfg.at("strategy");
  StrategyConfig st;
  st.name = s.at("name").get<std::string>();
  st.policy = s.at("policy").get<std::string>();
  st.schedule = s.at("schedule").get<std::string>();
  st.bucket_cap = s.at("bucket_cap").get<std::uint64_t>();
  st.first_bucket_cap = s.at("first_bucket_cap").get<std::uint64_t>();
  st.codec = s.at("codec").get<std::string>();
  st.codec_options = s.at("codec_options").get<std::map<std::string, std::string>>();
  st.accumulate_steps = s.at("accumulate_steps").get<int>();
  st.local_sgd_period = s.at("local_sgd_period").get<int>();
  st.local_sgd_warmup = s.at("local_sgd_warmup").get<int>();
  st.ps_servers = s.value("ps_servers", 0);
  sc.strategies = {st};
  return sc;
}

bool on_testbed(const std::string& config_json) {
  const auto cfg = nlohmann::json::parse(config_json, nullptr, false);
  return cfg.is_object() && cfg.contains("testbed");
}

ValidationRow row(const std::string& cal, const std::string& kind, std::int64_t ref, const std::string& label, int world,
                  std::int64_t bytes, const std::string& metric, double measured, double predicted) {
  ValidationRow v;
  v.calibration = cal;
  v.kind = kind;
  v.ref_id = ref;
  v.label = label;
  v.world_size = world;
  v.bytes = bytes;
  v.metric = metric;
  v.measured = measured;
  v.predicted = predicted;
  v.error_pct = measured > 0 ? 100 * (predicted - measured) / measured : NAN;
  return v;
}

int validate(const ValidateRequest& req) {
  if (access(req.db.c_str(), F_OK) != 0)
    throw std::runtime_error(req.db + ": no results store here (run `ddplab run` or `ddplab calibrate` first)");
  Store store(req.db);
  SimOptions opt;
  opt.network_model = req.network_model;
  std::string cal_name = req.name;
  if (cal_name.empty()) {
    const auto all = store.calibrations();
    if (!all.empty()) cal_name = all.back().name;
  }
  if (!cal_name.empty()) {
    auto cal = std::make_shared<Calibration>(*load_calibration(store, cal_name));
    cal->layers.clear();  // compute comes from each run's own measured means
    opt.calibration = cal;
    std::printf("# calibration \"%s\": latency %.3f us, bandwidth %.3f GB/s, %zu size intervals\n", cal_name.c_str(),
                cal->latency_s * 1e6, cal->bandwidth / 1e9, cal->segments.size());
  } else {
    std::printf("# no calibration stored: each scenario's own [cluster] links\n");
  }

  std::vector<ValidationRow> rows;
  int errors = 0;
  std::printf("%-10s %6s %-20s %5s %12s %-10s %12s %12s %9s\n", "kind", "id", "label", "world", "size (B)", "metric",
              "measured", "predicted", "error %");
  auto print = [](const ValidationRow& v) {
    const bool bw = v.metric == "busbw_gbs";
    const double scale = bw ? 1.0 : 1e3;  // seconds shown as ms
    std::printf("%-10s %6lld %-20s %5d %12lld %-10s %12.4f %12.4f %9.1f\n", v.kind.c_str(), static_cast<long long>(v.ref_id),
                v.label.c_str(), v.world_size, static_cast<long long>(v.bytes),
                (bw ? v.metric : v.metric.substr(0, v.metric.size() - 2) + "_ms").c_str(), v.measured * scale,
                v.predicted * scale, v.error_pct);
  };

  for (const RunSummary& s : store.summaries()) {
    const RunRow& run = s.run;
    if (run.info.source != "measured" || run.status != "completed" || s.steps == 0) continue;
    try {
      const Scenario sc = scenario_of(run);
      const StrategyConfig& st = sc.strategies.front();
      const int world = run.info.world_size;
      const SimStepSpec spec{representative_step(st), on_testbed(run.info.config_json) ? 1 : world};
      const SimStepResult r = simulate_step(sc, st, world, s.compute_s, s.optimizer_s, opt, spec);
      for (auto [metric, measured, predicted] :
           {std::tuple{"step_s", s.step_s, r.step_s}, std::tuple{"comm_s", s.comm_s, r.comm_s}}) {
        rows.push_back(row(cal_name, "run", run.id, st.name, world, 0, metric, measured, predicted));
        print(rows.back());
      }
    } catch (const std::exception& e) {
      ++errors;
      std::fprintf(stderr, "error: run %lld (%s / %s): %s\n", static_cast<long long>(run.id), run.info.scenario.c_str(),
                   run.info.strategy.c_str(), e.what());
    }
  }

  for (const BenchRunRow& b : store.benches()) {
    if (b.status != "completed") continue;
    const int world = b.info.world_size;
    if (world < 2) continue;
    ClusterConfig cluster;  // star; links from the calibration, else the defaults
    for (const CollectiveBenchRow& br : store.bench_rows(b.id)) {
      if (br.collective != "allreduce" || !(br.time_us > 0)) continue;
      try {
        const std::string name = br.schedule == "native" ? "ring" : br.schedule;  // MPI's algorithm is unknown
        const Schedule sched = make_schedule(name, {world, static_cast<std::size_t>(br.count), b.info.ranks_per_node, 0});
        const SimStepResult r = simulate_schedule(cluster, sched, 4, opt);
        const double busbw = r.step_s > 0 ? static_cast<double>(br.bytes) / r.step_s / 1e9 * bus_factor("allreduce", world) : 0;
        rows.push_back(row(cal_name, "collective", b.id, br.schedule, world, br.bytes, "busbw_gbs", br.busbw_gbs, busbw));
        print(rows.back());
      } catch (const std::exception& e) {
        ++errors;
        std::fprintf(stderr, "error: bench %lld schedule %s at %lld B: %s\n", static_cast<long long>(b.id),
                     br.schedule.c_str(), static_cast<long long>(br.bytes), e.what());
      }
    }
  }

  if (!rows.empty()) store.add_validations(rows);
  double sum = 0;
  int counted = 0;
  for (const char* kind : {"run", "collective"}) {
    double ks = 0;
    int kn = 0;
    for (const auto& v : rows)
      if (v.kind == kind && std::isfinite(v.error_pct)) ks += std::abs(v.error_pct), ++kn;
    if (kn) std::printf("# %s: mean |error| %.1f%% over %d comparisons\n", kind, ks / kn, kn);
    sum += ks;
    counted += kn;
  }
  if (counted) std::printf("# mean absolute error %.1f%% over %d comparisons (stored in table validations)\n", sum / counted, counted);
  else std::printf("# nothing to validate: the store has no completed measured runs or collective benches\n");
  if (errors) std::fprintf(stderr, "error: %d configurations could not be replayed\n", errors);
  return errors ? 1 : 0;
}

}  // namespace

void add_validate(CLI::App& app) {
  auto req = std::make_shared<ValidateRequest>();
  auto* cmd = app.add_subcommand("validate", "Replay every measured run and collective bench on the simulator: predicted vs measured");
  cmd->add_option("--db", req->db, "Results store (SQLite)")->capture_default_str();
  cmd->add_option("--name", req->name, "Calibration to simulate with (default: the latest stored; none: scenarios' links)");
  cmd->add_option("--network-model", req->network_model, "SimGrid network model")->capture_default_str();
  cmd->footer(
      "Runs: step_s and comm_s (means over steps of the slowest rank / over ranks) against simulate_step of the\n"
      "run's scenario, strategy and world size, with compute from the run's own measured means.\n"
      "Benches: busbw of each stored allreduce row against simulate_schedule (native replayed as ring).\n"
      "error % = 100 (predicted - measured) / measured. Exit status 1 only when a configuration cannot be replayed.");
  cmd->callback([req] { g_exit_code = validate(*req); });
}

}  // namespace ddplab::cli
