// `ddplab predict`: time to a target accuracy per strategy at larger world sizes (goodput.hpp), from the
// strategy's measured runs (statistical efficiency) and the simulator (time per update).
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <limits>
#include <map>
#include <optional>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "commands.hpp"
#include "validators.hpp"
#include "ddplab/core/error.hpp"
#include "ddplab/core/scenario.hpp"
#include "ddplab/core/store.hpp"
#include "ddplab/core/stats.hpp"
#include "ddplab/core/units.hpp"
#include "ddplab/simulator/failures.hpp"
#include "ddplab/simulator/goodput.hpp"
#include "ddplab/strategies/strategy.hpp"

namespace ddplab::cli {
namespace {

struct PredictRequest {
  std::string scenario, db = kDefaultDb, strategy, network_model = "auto", compute = "auto";
  std::string worlds;
  double target = 0, fit_below = 0;
  bool allow_oversubscribed = false;
  // Failures (failures.hpp): durations as text ("5000h", "60s"); node_mtbf empty = none.
  std::string node_mtbf, restart = "60s", checkpoint_write, checkpoint_interval;
};

// The failure model's inputs, or nullopt without --node-mtbf. The checkpoint's write time is the strategy's
// measured one unless --checkpoint-write gives it.
std::optional<FailureOptions> failure_options(const PredictRequest& req, const Store& store, const Scenario& sc,
                                              const StrategyConfig& st, std::string& origin) {
  if (req.node_mtbf.empty()) return std::nullopt;
  FailureOptions o;
  o.node_mtbf_s = parse_duration(req.node_mtbf);
  o.restart_s = parse_duration(req.restart);
  o.interval_s = req.checkpoint_interval.empty() ? 0 : parse_duration(req.checkpoint_interval);
  if (!req.checkpoint_write.empty()) {
    o.checkpoint_s = parse_duration(req.checkpoint_write);
    origin = "--checkpoint-write";
  } else if (const auto m = measured_checkpoint(store, sc.name, st.name)) {
    o.checkpoint_s = m->write_s;
    origin = fmt::format(
        "the median of {} measured checkpoint{} of {}, {} the newest; every rank writes its own file "
        "at once, as measured",
        m->checkpoints, m->checkpoints == 1 ? "" : "s", st.name, format_bytes(static_cast<double>(m->bytes)));
  } else {
    throw InputError(
        fmt::format("--node-mtbf: strategy \"{}\" has no measured checkpoint to take its write "
                    "time from (ddplab run with train.checkpoint_every = N); or give --checkpoint-write",
                    st.name));
  }
  return o;
}

void print_failures(const std::vector<FailureWorld>& fw, const FailureOptions& o, const std::string& origin) {
  std::printf("  with failures: node MTBF %s, restart %s, checkpoint write %s (%s); checkpoint every %s\n",
              format_duration(o.node_mtbf_s).c_str(), format_duration(o.restart_s).c_str(),
              format_duration(o.checkpoint_s).c_str(), origin.c_str(),
              o.interval_s > 0 ? format_duration(o.interval_s).c_str() : "Daly's interval");
  std::printf("%7s %6s %11s %11s %10s %11s %11s %8s\n", "world", "nodes", "job_mtbf_h", "interval_s", "young_s",
              "predicted_s", "expected_s", "goodput");
  for (const FailureWorld& f : fw)
    std::printf("%7d %6d %11.1f %11.1f %10.1f %11.2f %11.2f %7.2f%%\n", f.world_size, f.nodes, f.mtbf_s / 3600,
                f.interval_s, f.young_s, f.work_s, f.expected_s, 100 * f.goodput());
}

std::string ids(const std::vector<std::int64_t>& v) {
  std::string out;
  for (std::int64_t id : v) out += fmt::format("{}#{}", out.empty() ? "" : " ", id);
  return out;
}

void print_prediction(const GoodputPrediction& p, double target) {
  const NoiseScaleFit& f = p.fit;
  std::map<double, int> runs_at;  // global batch -> runs
  for (const BatchPoint& b : p.points) ++runs_at[b.global_batch];
  std::string batches;
  for (const auto& [b, n] : runs_at)
    batches += fmt::format("{}{:g}{}", batches.empty() ? "" : ", ", b, n > 1 ? fmt::format(" (x{})", n) : "");
  std::printf(
      "%s: S(B) = %.1f (1 + %.1f / B) updates to %.3g, fitted to %zu runs at global batch %s: rms error %.1f%%, max "
      "%.1f%%\n",
      p.strategy.c_str(), f.s_min, f.b_noise, target, f.points, batches.c_str(), f.rms_rel_error * 100,
      f.max_rel_error * 100);
  if (!p.missed.empty())
    std::printf("  runs that never reached %.3g (not fitted): %s\n", target, ids(p.missed).c_str());
  std::printf("  time per update simulated, compute from %s\n", p.compute_origin.c_str());
  std::printf("%7s %12s %9s %10s %10s %11s %11s %9s %8s\n", "world", "global_batch", "updates", "step_ms", "warmup_s",
              "predicted_s", "measured_s", "error", "sim_run");
  for (const GoodputWorld& w : p.worlds) {
    const std::string measured = w.measured_s ? fmt::format("{:.2f}", *w.measured_s) : "-";
    const std::string error = w.measured_s ? fmt::format("{:+.1f}%", error_pct(*w.measured_s, w.time_s)) : "-";
    std::printf("%7d %12.0f %9.1f %10.3f %10.3f %11.2f %11s %9s %8lld\n", w.world_size, w.global_batch, w.updates,
                w.step_s * 1e3, w.warmup_s, w.time_s, measured.c_str(), error.c_str(),
                static_cast<long long>(w.sim_run));
  }
  double largest = 0;
  for (const BatchPoint& b : p.points) largest = std::max(largest, b.global_batch);
  for (const GoodputWorld& w : p.worlds) {
    if (w.global_batch > 2 * largest)  // the fit says nothing about where linear lr scaling breaks
      std::printf(
          "  world %d: global batch %.0f is %.0fx the largest fitted (%.0f): S(B) extrapolated, as far as the "
          "model and the scenario's lr scaling hold\n",
          w.world_size, w.global_batch, w.global_batch / largest, largest);
    if (!w.measured_runs.empty())
      std::printf("  world %d: measured = mean training time to %.3g of runs %s, outside the fit\n", w.world_size,
                  target, ids(w.measured_runs).c_str());
    if (!w.in_fit.empty())
      std::printf("  world %d: runs %s are in the fit, not a check of it (hold them out with --fit-below)\n",
                  w.world_size, ids(w.in_fit).c_str());
  }
}

int predict(const PredictRequest& req) {
  const Scenario sc = load_validated_scenario(req.scenario);
  GoodputOptions opt;
  opt.target = req.target;
  opt.worlds = req.worlds.empty() ? sc.cluster.simulate_world : world_sizes_option("--world", req.worlds);
  opt.fit_below = req.fit_below;
  opt.sim.network_model = req.network_model;
  opt.sim.compute = req.compute;
  opt.sim.allow_oversubscribed = req.allow_oversubscribed;
  opt.sim.keep_trace = false;
  Store store(req.db);
  std::printf(
      "%s: predicted training time to test accuracy %.3g (evaluation not counted) = updates S(B) at the "
      "global batch B, fitted to the strategy's measured runs, x the simulated time per update\n",
      sc.name.c_str(), req.target);
  std::vector<GoodputPrediction> done;
  int failed = 0;
  int exit_code = 0;  // the worst kind among the strategies that could not be predicted (error.hpp)
  bool found = false;
  for (const StrategyConfig& st : sc.strategies) {
    if (!req.strategy.empty() && st.name != req.strategy) continue;
    found = true;
    try {
      std::string origin;
      const auto failures = failure_options(req, store, sc, st, origin);
      GoodputPrediction p = predict_goodput(sc, st, store, opt);
      print_prediction(p, req.target);
      store.add_predictions(prediction_rows(sc, p, req.target));  // failure-free, as the table predictions says
      if (failures) {
        const std::vector<FailureWorld> fw = with_failures(p, *failures, sc.cluster.devices_per_node);
        print_failures(fw, *failures, origin);
        // The ranking below is by the time failures leave (not stored).
        for (std::size_t i = 0; i < fw.size(); ++i) p.worlds[i].time_s = fw[i].expected_s;
      }
      done.push_back(std::move(p));
    } catch (const std::exception& e) {  // no fit, no compute source, a failed simulation: the others go on
      std::fprintf(stderr, "error: %s\n", e.what());
      ++failed;
      exit_code = std::max(exit_code, exit_code_of(e));  // a bug over bad input over a fault of the run
    }
    std::fflush(stdout);
  }
  if (!found) throw InputError(fmt::format("{}: no strategy named \"{}\"", req.scenario, req.strategy));
  if (done.size() > 1) {
    std::printf("best strategy per world size (predicted training time to %.3g%s):\n", req.target,
                req.node_mtbf.empty() ? "" : ", with failures");
    for (const WorldRanking& r : rank_by_world(done)) {
      const auto& [best, best_s] = r.by_time.front();
      std::printf("  world %d: %s, %.2f s", r.world_size, best.c_str(), best_s);
      for (std::size_t i = 1; i < r.by_time.size(); ++i)
        std::printf("; %s %.2fx", r.by_time[i].first.c_str(), r.by_time[i].second / best_s);
      std::printf("\n");
    }
  }
  if (failed) std::fprintf(stderr, "%d of the scenario's strategies could not be predicted (above)\n", failed);
  return exit_code;
}

}  // namespace

void add_predict(CLI::App& app) {
  auto req = std::make_shared<PredictRequest>();
  auto* cmd = app.add_subcommand(
      "predict", "Predict each strategy's training time to a target accuracy at larger world sizes (goodput)");
  cmd->add_option("scenario", req->scenario, "Scenario TOML file")->required();
  cmd->add_option("--target-accuracy", req->target, "Test accuracy to reach")->required()->check(CLI::Range(0.0, 1.0));
  cmd->add_option("--world", req->worlds, "World sizes, as simulate's --world (default: cluster.simulate_world)")
      ->option_text("LIST");
  cmd->add_option("--fit-below", req->fit_below,
                  "Fit only the measured runs at a smaller global batch (default: every run), so that runs at the "
                  "predicted sizes check the prediction")
      ->option_text("B")
      ->check(number_in(0, std::numeric_limits<double>::max(), true));
  cmd->add_option("--strategy", req->strategy, "Only this strategy (default: all of the scenario's)");
  cmd->add_option("--db", req->db, "Results store (SQLite)")->capture_default_str();
  cmd->add_option("--network-model", req->network_model, kNetworkModelHelp)
      ->check(CLI::IsMember({"auto", "LV08", "CM02"}))
      ->capture_default_str();
  cmd->add_option("--compute", req->compute, "Compute time per micro-step, as simulate's --compute")
      ->capture_default_str();
  cmd->add_flag("--allow-oversubscribed", req->allow_oversubscribed,
                "Accept --compute run:ID of a run that had more ranks than cores on its host");
  auto duration = [](const std::string& v) {
    try {
      return parse_duration(v) > 0 ? std::string() : "must be a duration greater than 0, got \"" + v + "\"";
    } catch (const std::exception& e) {
      return std::string(e.what());
    }
  };
  cmd->add_option("--node-mtbf", req->node_mtbf,
                  "Mean time between failures of one node (\"5000h\"): adds each world's expected training time with "
                  "failures, checkpoints and restarts (Daly), and its goodput")
      ->check(CLI::Validator(duration, "DURATION"));
  cmd->add_option("--restart", req->restart, "With --node-mtbf: from a failure to training again")
      ->check(CLI::Validator(duration, "DURATION"))
      ->capture_default_str()
      ->needs("--node-mtbf");
  cmd->add_option("--checkpoint-write", req->checkpoint_write,
                  "With --node-mtbf: a checkpoint's write time (default: the strategy's measured checkpoints)")
      ->check(CLI::Validator(duration, "DURATION"))
      ->needs("--node-mtbf");
  cmd->add_option("--checkpoint-interval", req->checkpoint_interval,
                  "With --node-mtbf: training time between checkpoints (default: Daly's optimum for each world)")
      ->check(CLI::Validator(duration, "DURATION"))
      ->needs("--node-mtbf");
  cmd->footer(
      "Statistical efficiency: the updates to the target at global batch B (batch x workers x accumulate_steps)\n"
      "follow S(B) = S_min (1 + B_noise / B) (McCandlish et al. 2018), fitted per strategy to its completed\n"
      "measured runs of this scenario's name and model at 3 or more global batches (`ddplab run SCENARIO --np N\n"
      "--batch-size B [--seed S]`). A codec or local SGD that needs more updates shows it in its own fit.\n"
      "Time per update: the strategy's whole-period plan simulated at each world size at the scenario's batch,\n"
      "compute as in `ddplab simulate`. Measured runs at a predicted world size and the scenario's batch that\n"
      "the fit did not use are compared. Predictions are stored (table predictions).");
  cmd->callback([req] { g_exit_code = predict(*req); });
}

}  // namespace ddplab::cli
