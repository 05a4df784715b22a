// `ddplab validate`: prints what simulator/validation.hpp computes (every measured configuration of the store
// replayed on the simulator, predicted against measured). Exits non-zero on configurations that could not be
// replayed only, never on large prediction errors.
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

#include "commands.hpp"
#include "validators.hpp"
#include "ddplab/core/error.hpp"
#include "ddplab/core/stats.hpp"
#include "ddplab/core/store.hpp"
#include "ddplab/runtime/launch.hpp"
#include "ddplab/simulator/validation.hpp"

namespace ddplab::cli {
namespace {

struct ValidateRequest {
  std::string db = kDefaultDb;
  ValidationOptions options;
};

// A stored metric as the table shows it: times (stored in seconds, "_s") in milliseconds.
std::string shown(const std::string& metric) {
  const bool seconds = metric.size() > 2 && metric.compare(metric.size() - 2, 2, "_s") == 0;
  return seconds ? metric.substr(0, metric.size() - 2) + "_ms" : metric;
}

void print_row(const ValidationRow& v) {
  const double scale = v.metric == "busbw_gbs" ? 1.0 : 1e3;  // seconds shown as ms
  std::printf("%-10s %6lld %-20s %5d %12lld %-10s %12.4f %12.4f %9.1f\n", v.kind.c_str(),
              static_cast<long long>(v.ref_id), v.label.c_str(), v.world_size, static_cast<long long>(v.bytes),
              shown(v.metric).c_str(), v.measured * scale, v.predicted * scale, v.error_pct);
  std::fflush(stdout);
}

// Per run, where the step's time goes, measured and predicted, and the likely causes of a large error.
void print_breakdown(const ValidationReport& r) {
  if (r.runs.empty()) return;
  std::printf("#\n# where the step goes (other = step - compute - optimizer - exposed)\n");
  for (const RunValidation& v : r.runs) {
    const SteadyState &m = v.measured, &p = v.predicted;
    std::printf(
        "# run %lld %s (world %d): medians over %s; compute %s\n", static_cast<long long>(v.run.id), v.strategy.c_str(),
        v.world_size, m.describe().c_str(),
        v.compute_from_calibration ? fmt::format("from calibration \"{}\"", r.calibration).c_str() : "as measured");
    for (auto [part, measured, predicted] :
         {std::tuple{"compute", m.compute_s, p.compute_s}, std::tuple{"optimizer", m.optimizer_s, p.optimizer_s},
          std::tuple{"comm", m.comm_s, p.comm_s}, std::tuple{"exposed", m.exposed_comm_s, p.exposed_comm_s},
          std::tuple{"other", std::max(0.0, m.step_s - m.compute_s - m.optimizer_s - m.exposed_comm_s), 0.0},
          std::tuple{"step", m.step_s, p.step_s}})
      std::printf("#   %-10s measured %10.3f ms  predicted %10.3f ms  error %7.1f%%\n", part, measured * 1e3,
                  predicted * 1e3, measured > 0 ? error_pct(measured, predicted) : 0.0);
    if (!v.large_error) continue;
    if (v.likely_causes.empty())
      std::printf("#   step error %+.1f%%: no recorded cause (the parts above say which is off)\n", v.step_error_pct);
    for (const std::string& c : v.likely_causes)
      std::printf("#   step error %+.1f%%, likely cause: %s\n", v.step_error_pct, c.c_str());
  }
}

void print_summary(const ValidationReport& r) {
  double sum = 0;
  int counted = 0;
  for (const char* kind : {"run", "collective"}) {
    double ks = 0;
    int kn = 0;
    for (const auto& v : r.rows)
      if (v.kind == kind && std::isfinite(v.error_pct)) ks += std::abs(v.error_pct), ++kn;
    if (kn) std::printf("# %s: mean |error| %.1f%% over %d comparisons\n", kind, ks / kn, kn);
    sum += ks;
    counted += kn;
  }
  for (const char* metric : {"step_s", "comm_s", "busbw_gbs"}) {
    std::vector<double> e;
    for (const auto& v : r.rows)
      if (v.metric == metric && std::isfinite(v.error_pct)) e.push_back(std::abs(v.error_pct));
    if (!e.empty())
      std::printf("# %s: median |error| %.1f%%, max %.1f%% over %zu comparisons\n", shown(metric).c_str(), median(e),
                  *std::max_element(e.begin(), e.end()), e.size());
  }
  for (const auto& [world, times] : r.ranking)
    if (times.first.size() >= 2)
      std::printf("# ranking of the %zu runs at world %d by step time, simulated against measured: Kendall tau %.2f\n",
                  times.first.size(), world, kendall_tau(times.first, times.second));
  if (counted)
    std::printf("# mean absolute error %.1f%% over %d comparisons (stored in table validations)\n", sum / counted,
                counted);
  else
    std::printf("# nothing to validate: the store has no completed measured runs or collective benches\n");
}

int validate(const ValidateRequest& req) {
  if (access(req.db.c_str(), F_OK) != 0)
    throw InputError(req.db + ": no results store here (run `ddplab run` or `ddplab calibrate` first)");
  require_writable_store(req.db);  // validate stores its rows: say so before simulating, not after
  Store store(req.db);
  StoreValidation validation(store, req.options);
  if (const Calibration* f = validation.fit())
    std::printf("# calibration \"%s\": latency %.3f us, bandwidth %.4g GB/s, %zu size intervals%s\n",
                validation.calibration().c_str(), f->latency_s * 1e6, f->bandwidth / 1e9, f->segments.size(),
                f->layers.empty()
                    ? ""
                    : fmt::format(", compute of {} layers at batch {}", f->layers.size(), f->batch_size).c_str());
  else
    std::printf("# no calibration stored: each scenario's own [cluster] links\n");
  std::printf("%-10s %6s %-20s %5s %12s %-10s %12s %12s %9s\n", "kind", "id", "label", "world", "size (B)", "metric",
              "measured", "predicted", "error %");
  const ValidationReport r = validation.run(print_row);
  for (const std::string& e : r.errors) std::fprintf(stderr, "error: %s\n", e.c_str());
  if (!r.not_compared.empty()) std::printf("#\n");
  for (const std::string& n : r.not_compared) std::printf("# %s\n", n.c_str());
  print_breakdown(r);
  print_summary(r);
  if (!r.errors.empty()) std::fprintf(stderr, "error: %zu configurations could not be replayed\n", r.errors.size());
  return r.errors.empty() ? 0 : 1;
}

}  // namespace

void add_validate(CLI::App& app) {
  auto req = std::make_shared<ValidateRequest>();
  auto* cmd = app.add_subcommand(
      "validate", "Replay every measured run and collective bench on the simulator: predicted vs measured");
  cmd->add_option("--db", req->db, "Results store (SQLite)")->capture_default_str();
  cmd->add_option("--name", req->options.calibration,
                  "Calibration to simulate with (default: the latest stored; none: scenarios' links)");
  cmd->add_option("--network-model", req->options.network_model, kNetworkModelHelp)
      ->check(CLI::IsMember({"auto", "LV08", "CM02"}))
      ->capture_default_str();
  cmd->add_option(
         "--warmup", req->options.warmup,
         "Steps skipped at the start of each measured run, at least (the strategy's own warm-up, such as local "
         "SGD's, is always skipped; blocks start at a block boundary)")
      ->capture_default_str()
      ->check(non_negative_int());
  cmd->add_option(
         "--compute", req->options.compute,
         "Compute of a run: calibration (the calibration's per-layer times: a prediction), measured (the run's "
         "own), auto (calibration when it measured the run's model and batch)")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "calibration", "measured"}));
  cmd->add_flag("--runs-only", req->options.runs_only,
                "Validate training runs only, not the stored collective benches");
  cmd->footer(
      "Runs: step_s (the slowest rank's median) and comm_s (mean over ranks of their medians) per micro-step over\n"
      "whole blocks of the strategy's step pattern (after its warm-up and --warmup), against simulate_pattern of the\n"
      "run's scenario, strategy and world size. Compute: the calibration's per-layer times when it measured the run's "
      "MLP and batch (a prediction),\n"
      "else the run's own medians (--compute). A breakdown per run (compute, optimizer, comm, exposed, other) "
      "follows.\n"
      "Benches: busbw of each stored allreduce row against simulate_schedule (native as the backend's own choice:\n"
      "Open MPI 4.1's by size on MPI, NCCL's algorithm and protocol on NCCL, on the bench's preset when it names "
      "one).\n"
      "error % = 100 (predicted - measured) / measured. Exit status 1 only when a configuration cannot be replayed.");
  cmd->callback([req] { g_exit_code = validate(*req); });
}

}  // namespace ddplab::cli
