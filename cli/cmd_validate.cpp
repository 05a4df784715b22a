// `ddplab validate`: replays every measured configuration in the results store on the simulator and reports
// predicted vs measured, with % error. Measured training runs are simulated with their own scenario,
// strategy and world size, and compared on the medians of their steady-state steps (step time, comm time);
// compute comes from the calibration's per-layer times when it measured the run's model, else from the run
// itself. Stored collective benches are replayed with simulate_schedule (busbw). With a calibration (--name,
// else the latest stored) its network fit replaces the scenario's links. Rows go to table validations. Exits
// non-zero on errors only, never on large prediction errors.
#include <unistd.h>

#include <algorithm>
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
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "launch.hpp"
#include "validators.hpp"
#include "ddplab/core/metrics.hpp"
#include "ddplab/core/scenario.hpp"
#include "ddplab/core/stats.hpp"
#include "ddplab/core/store.hpp"
#include "ddplab/runtime/collective_bench.hpp"
#include "ddplab/simulator/calibration.hpp"
#include "ddplab/simulator/diagnosis.hpp"
#include "ddplab/simulator/simulator.hpp"
#include "ddplab/simulator/steady_state.hpp"
#include "ddplab/strategies/model_library.hpp"
#include "ddplab/strategies/schedule.hpp"
#include "ddplab/strategies/strategy.hpp"

namespace ddplab::cli {
namespace {

// Step errors beyond this get their likely causes printed (diagnosis.hpp).
constexpr double kLargeErrorPct = 10.0;

struct ValidateRequest {
  std::string db = kDefaultDb;
  std::string name;  // calibration; empty: the latest stored, if any
  std::string network_model = "auto";
  int warmup = 2;                  // steps skipped at the start of each run
  std::string compute = "auto";    // "auto", "calibration", "measured"
  bool runs_only = false;          // skip the collective benches
};

// A stored metric as the table shows it: times (stored in seconds, "_s") in milliseconds.
std::string shown(const std::string& metric) {
  const bool seconds = metric.size() > 2 && metric.compare(metric.size() - 2, 2, "_s") == 0;
  return seconds ? metric.substr(0, metric.size() - 2) + "_ms" : metric;
}

bool on_testbed(const std::string& config_json) {
  const auto cfg = nlohmann::json::parse(config_json, nullptr, false);
  return cfg.is_object() && cfg.contains("testbed");
}

ValidationRow row(const std::string& cal, const std::string& kind, std::int64_t ref, const std::string& label, int world,
                  std::int64_t bytes, const std::string& metric, double measured, double predicted) {
  return ValidationRow::compare(cal, kind, ref, label, world, bytes, metric, measured, predicted);
}

int validate(const ValidateRequest& req) {
  if (access(req.db.c_str(), F_OK) != 0)
    throw std::runtime_error(req.db + ": no results store here (run `ddplab run` or `ddplab calibrate` first)");
  require_writable_store(req.db);  // validate stores its rows: say so before simulating, not after
  Store store(req.db);
  if (req.compute != "auto" && req.compute != "calibration" && req.compute != "measured")
    throw std::invalid_argument("--compute must be auto, calibration or measured, got \"" + req.compute + "\"");
  SimOptions opt;  // network from the calibration, compute from each run's own measurements
  opt.network_model = req.network_model;
  SimOptions opt_cal;  // network and per-layer compute from the calibration
  opt_cal.network_model = req.network_model;
  std::shared_ptr<const Calibration> full;
  std::string cal_name = req.name;
  std::optional<CalibrationRecord> cal_record;
  {
    const auto all = store.calibrations();
    if (cal_name.empty() && !all.empty()) cal_name = all.back().name;
    for (const auto& c : all)
      if (c.name == cal_name) cal_record = c;  // the latest of that name, as load_calibration takes it
  }
  if (!cal_name.empty()) {
    full = load_calibration(store, cal_name);
    auto net_only = std::make_shared<Calibration>(*full);
    net_only->layers.clear();
    opt.calibration = net_only;
    opt_cal.calibration = full;
    std::printf("# calibration \"%s\": latency %.3f us, bandwidth %.4g GB/s, %zu size intervals%s\n", cal_name.c_str(),
                full->latency_s * 1e6, full->bandwidth / 1e9, full->segments.size(),
                full->layers.empty() ? "" : fmt::format(", compute of {} layers at batch {}", full->layers.size(), full->batch_size).c_str());
  } else {
    if (req.compute == "calibration") throw std::invalid_argument("--compute calibration needs a stored calibration");
    std::printf("# no calibration stored: each scenario's own [cluster] links\n");
  }

  std::vector<ValidationRow> rows;
  int errors = 0;
  std::printf("%-10s %6s %-20s %5s %12s %-10s %12s %12s %9s\n", "kind", "id", "label", "world", "size (B)", "metric",
              "measured", "predicted", "error %");
  auto print = [](const ValidationRow& v) {
    const double scale = v.metric == "busbw_gbs" ? 1.0 : 1e3;  // seconds shown as ms
    std::printf("%-10s %6lld %-20s %5d %12lld %-10s %12.4f %12.4f %9.1f\n", v.kind.c_str(), static_cast<long long>(v.ref_id),
                v.label.c_str(), v.world_size, static_cast<long long>(v.bytes), shown(v.metric).c_str(),
                v.measured * scale, v.predicted * scale, v.error_pct);
  };

  // A calibration describes one transport: NCCL between GPUs, or MPI (on the test bed too). Measured
  // configurations that ran on the other are left out, and said so after the table.
  const auto transport_of = [](const Calibration& c) { return c.link_class == "nccl" ? "nccl" : "mpi"; };
  const std::string cal_transport = full ? transport_of(*full) : "";
  std::map<std::string, std::string> latest_of;  // transport -> the latest calibration of it, for the hint
  for (const auto& rec : store.calibrations()) {
    try {
      latest_of[transport_of(Calibration::from_json(nlohmann::json::parse(rec.fit_json)))] = rec.name;
    } catch (const std::exception&) {  // a malformed one is reported when named, not here
    }
  }
  std::string not_compared;
  auto other_transport = [&](const std::string& transport, const std::string& what) {
    if (cal_transport.empty() || transport == cal_transport) return false;
    const auto other = latest_of.find(transport);
    not_compared += fmt::format("# {} ran over {}, calibration \"{}\" measured {}: not compared{}\n", what, transport,
                                cal_name, full->link_class,
                                other == latest_of.end() ? std::string(" (no calibration of " + transport + " stored)")
                                                         : fmt::format(" (`--name {}` compares it)", other->second));
    return true;
  };

  // Per run, where the step's time goes, measured (steady-state medians) and predicted: printed after the table.
  std::string breakdown;
  // Per world size, the runs' measured and predicted step times: does the simulator rank them alike?
  std::map<int, std::pair<std::vector<double>, std::vector<double>>> ranking;
  for (const RunSummary& s : store.summaries()) {
    const RunRow& run = s.run;
    if (run.info.source != "measured" || run.status != "completed" || s.steps == 0) continue;
    // Backend cuda (and cuda-tf32) runs the plan's collectives over NCCL; cpu and cuda+mpi over MPI.
    const bool plan_on_nccl = run.info.backend.rfind("cuda", 0) == 0 && run.info.backend.find("+mpi") == std::string::npos;
    if (other_transport(plan_on_nccl ? "nccl" : "mpi",
                        fmt::format("run {} ({}, backend {})", run.id, run.info.strategy, run.info.backend)))
      continue;
    try {
      const Scenario sc = measured_scenario(run);
      const StrategyConfig& st = sc.strategies.front();
      const int world = run.info.world_size;
      const int ranks_per_node = on_testbed(run.info.config_json) ? 1 : world;
      const std::vector<StepMetrics> steps = store.steps(run.id);
      // The strategy's own pattern: the plans the run went through (runs before patterns were stored too).
      const StepPattern pattern =
          Strategy(st, model_spec_for(sc.model), {world, ranks_per_node, sc.train.batch_size, sc.train.seed}).pattern();
      const SteadyState m = steady_state(steps, pattern, req.warmup);
      const bool cal_fits = full && calibration_fits_model(*full, sc);
      const bool use_cal = req.compute == "calibration" || (req.compute == "auto" && cal_fits);
      if (use_cal && !cal_fits)
        throw std::invalid_argument(fmt::format(
            "--compute calibration: calibration \"{}\" measured {} at batch {} on {}, the run trained {} at batch {} on {}",
            cal_name,
            full->layers.empty() ? std::string("no compute") : fmt::format("layers {}", fmt::join(full->layer_widths, "-")),
            full->batch_size, full->compute_backend, fmt::join(sc.model.layers, "-"), sc.train.batch_size,
            compute_backend_of(sc)));
      // The calibration's per-layer times, or the run's own medians of its steady blocks brought back to one
      // worker's micro-step and one whole-model update (as simulate --compute run:ID does with its means).
      const ComputeSource compute =
          use_cal ? from_calibration(*full) : compute_from_means(sc, world, m.compute_s, m.optimizer_s);
      const SimPatternResult sim = simulate_pattern(sc, st, world, compute.compute_s, compute.optimizer_s,
                                                    use_cal ? opt_cal : opt, ranks_per_node);
      const SteadyState r = steady_state(sim);
      ranking[world].first.push_back(m.step_s);
      ranking[world].second.push_back(r.step_s);
      for (auto [metric, measured, predicted] :
           {std::tuple{"step_s", m.step_s, r.step_s}, std::tuple{"comm_s", m.comm_s, r.comm_s}}) {
        rows.push_back(row(cal_name, "run", run.id, st.name, world, 0, metric, measured, predicted));
        print(rows.back());
      }
      breakdown += fmt::format("# run {} {} (world {}): medians over {}; compute {}\n", run.id, st.name, world,
                               m.describe(),
                               use_cal ? fmt::format("from calibration \"{}\"", cal_name) : std::string("as measured"));
      for (auto [part, measured, predicted] :
           {std::tuple{"compute", m.compute_s, r.compute_s}, std::tuple{"optimizer", m.optimizer_s, r.optimizer_s},
            std::tuple{"comm", m.comm_s, r.comm_s}, std::tuple{"exposed", m.exposed_comm_s, r.exposed_comm_s},
            std::tuple{"other", std::max(0.0, m.step_s - m.compute_s - m.optimizer_s - m.exposed_comm_s), 0.0},
            std::tuple{"step", m.step_s, r.step_s}})
        breakdown += fmt::format("#   {:<10} measured {:10.3f} ms  predicted {:10.3f} ms  error {:7.1f}%\n", part,
                                 measured * 1e3, predicted * 1e3, measured > 0 ? error_pct(measured, predicted) : 0.0);
      if (const double err = m.step_s > 0 ? error_pct(m.step_s, r.step_s) : 0.0; std::abs(err) > kLargeErrorPct) {
        const auto causes = likely_causes(run, cal_record ? &*cal_record : nullptr, full.get());
        if (causes.empty())
          breakdown += fmt::format("#   step error {:+.1f}%: no recorded cause (the parts above say which is off)\n", err);
        for (const std::string& c : causes) breakdown += fmt::format("#   step error {:+.1f}%, likely cause: {}\n", err, c);
      }
    } catch (const std::exception& e) {
      ++errors;
      std::fprintf(stderr, "error: run %lld (%s / %s): %s\n", static_cast<long long>(run.id), run.info.scenario.c_str(),
                   run.info.strategy.c_str(), e.what());
    }
  }

  for (const BenchRunRow& b : store.benches()) {
    // Only measurements are validated: a simulated bench (--simulate) is itself a prediction.
    if (req.runs_only || b.status != "completed" || b.info.backend == "simgrid") continue;
    const int world = b.info.world_size;
    if (world < 2) continue;
    if (other_transport(b.info.backend == "nccl" ? "nccl" : "mpi", fmt::format("bench {}", b.id))) continue;
    ClusterConfig cluster;  // star; links from the calibration, else the defaults
    // An imported nccl-tests log may name the preset it ran on.
    if (const auto cfg = nlohmann::json::parse(b.info.config_json, nullptr, false); cfg.is_object() && cfg.contains("preset"))
      apply_cluster_preset(cluster, cfg["preset"].get<std::string>());
    for (const CollectiveBenchRow& br : store.bench_rows(b.id)) {
      if (br.collective != "allreduce" || !(br.time_us > 0)) continue;
      try {
        // native (and an nccl-tests log's "native (in-place)"): the backend's own choice at this size, as the
        // simulator models it (native.cpp).
        const bool native = br.schedule.rfind("native", 0) == 0;
        const std::string name = native ? native_schedule(b.info.backend == "nccl" ? "nccl" : "mpi", "allreduce", world,
                                                          static_cast<std::size_t>(br.count), 4)
                                        : br.schedule;
        const Schedule sched = make_schedule(name, {world, static_cast<std::size_t>(br.count), b.info.ranks_per_node, 0});
        SimOptions o = opt;
        if (native && full && b.info.backend != "nccl") o.serialize_exchanges_from = full->tcp_rendezvous_bytes;
        const SimStepResult r = simulate_schedule(cluster, sched, 4, o);
        CollectiveBenchRow predicted = br;
        set_bandwidths(predicted, r.step_s, world);
        const double busbw = predicted.busbw_gbs;
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
  if (!not_compared.empty()) std::printf("#\n%s", not_compared.c_str());
  if (!breakdown.empty()) std::printf("#\n# where the step goes (other = step - compute - optimizer - exposed)\n%s", breakdown.c_str());
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
  for (const char* metric : {"step_s", "comm_s", "busbw_gbs"}) {
    std::vector<double> e;
    for (const auto& v : rows)
      if (v.metric == metric && std::isfinite(v.error_pct)) e.push_back(std::abs(v.error_pct));
    if (!e.empty())
      std::printf("# %s: median |error| %.1f%%, max %.1f%% over %zu comparisons\n", shown(metric).c_str(), median(e),
                  *std::max_element(e.begin(), e.end()), e.size());
  }
  for (const auto& [world, times] : ranking)
    if (times.first.size() >= 2)
      std::printf("# ranking of the %zu runs at world %d by step time, simulated against measured: Kendall tau %.2f\n",
                  times.first.size(), world, kendall_tau(times.first, times.second));
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
  cmd->add_option("--network-model", req->network_model, kNetworkModelHelp)
      ->check(CLI::IsMember({"auto", "LV08", "CM02"}))
      ->capture_default_str();
  cmd->add_option("--warmup", req->warmup,
                  "Steps skipped at the start of each measured run, at least (the strategy's own warm-up, such as local "
                  "SGD's, is always skipped; blocks start at a block boundary)")
      ->capture_default_str()
      ->check(non_negative_int());
  cmd->add_option("--compute", req->compute,
                  "Compute of a run: calibration (the calibration's per-layer times: a prediction), measured (the run's "
                  "own), auto (calibration when it measured the run's model and batch)")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "calibration", "measured"}));
  cmd->add_flag("--runs-only", req->runs_only, "Validate training runs only, not the stored collective benches");
  cmd->footer(
      "Runs: step_s (the slowest rank's median) and comm_s (mean over ranks of their medians) per micro-step over\n"
      "whole blocks of the strategy's step pattern (after its warm-up and --warmup), against simulate_pattern of the\n"
      "run's scenario, strategy and world size. Compute: the calibration's per-layer times when it measured the run's MLP and batch (a prediction),\n"
      "else the run's own medians (--compute). A breakdown per run (compute, optimizer, comm, exposed, other) follows.\n"
      "Benches: busbw of each stored allreduce row against simulate_schedule (native as the backend's own choice:\n"
      "Open MPI 4.1's by size on MPI, the ring on NCCL).\n"
      "error % = 100 (predicted - measured) / measured. Exit status 1 only when a configuration cannot be replayed.");
  cmd->callback([req] { g_exit_code = validate(*req); });
}

}  // namespace ddplab::cli
