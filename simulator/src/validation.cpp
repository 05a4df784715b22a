#include "ddplab/simulator/validation.hpp"

#include <cmath>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "ddplab/core/error.hpp"
#include "ddplab/core/stats.hpp"
#include "ddplab/simulator/collective_sim.hpp"
#include "ddplab/simulator/compute_source.hpp"
#include "ddplab/simulator/diagnosis.hpp"
#include "ddplab/strategies/model_library.hpp"
#include "ddplab/strategies/strategy.hpp"

namespace ddplab {
namespace {

bool on_testbed(const std::string& config_json) {
  const auto cfg = nlohmann::json::parse(config_json, nullptr, false);
  return cfg.is_object() && cfg.contains("testbed");
}

// The run's own compute (medians of its steady blocks) brought to one worker's micro-step and one update, as
// simulate --compute run:ID does with its means; a straggler's rows without the stretch it had.
ComputeSource own_compute(const Scenario& sc, int world, const std::vector<StepMetrics>& rows,
                          const StepPattern& pattern, std::int64_t warmup) {
  const SteadyState own = steady_state(without_stragglers(rows, sc.cluster), pattern, warmup);
  return compute_from_means(sc, world, own.compute_s, own.optimizer_s);
}

}  // namespace

struct StoreValidation::Impl {
  Store& store;
  ValidationOptions opt;
  std::function<void(const ValidationRow&)> on_row;
  ValidationReport report;
  SimOptions net;      // network from the calibration, compute from each run's own measurements
  SimOptions net_cal;  // network and per-layer compute from the calibration
  std::optional<CalibrationRecord> record;
  std::map<Transport, std::string> latest_of;  // the latest calibration of each transport, for the hint

  void add(const std::string& kind, std::int64_t ref, const std::string& label, int world, std::int64_t bytes,
           const std::string& metric, double measured, double predicted) {
    report.rows.push_back(
        ValidationRow::compare(report.calibration, kind, ref, label, world, bytes, metric, measured, predicted));
    if (on_row) on_row(report.rows.back());
  }

  // True (and noted) when a configuration ran over another transport than the calibration measured.
  bool other_transport(Transport transport, const std::string& what) {
    if (!report.fit || transport == report.fit->transport()) return false;
    const auto other = latest_of.find(transport);
    report.not_compared.push_back(fmt::format("{} ran over {}, calibration \"{}\" measured {}: not compared{}", what,
                                              transport, report.calibration, report.fit->link_class,
                                              other == latest_of.end()
                                                  ? " (no calibration of " + to_string(transport) + " stored)"
                                                  : fmt::format(" (`--name {}` compares it)", other->second)));
    return true;
  }

  void load_calibration_named() {
    const auto all = store.calibrations();
    report.calibration = opt.calibration;
    if (report.calibration.empty() && !all.empty()) report.calibration = all.back().name;
    for (const auto& c : all) {
      if (c.name == report.calibration) record = c;  // the latest of that name, as load_calibration takes it
      try {
        latest_of[Calibration::from_json(nlohmann::json::parse(c.fit_json)).transport()] = c.name;
      } catch (const std::exception&) {  // a malformed one is reported when named, not here
      }
    }
    net.network_model = net_cal.network_model = opt.network_model;
    if (report.calibration.empty()) {
      if (opt.compute == "calibration") throw InputError("--compute calibration needs a stored calibration");
      return;
    }
    report.fit = load_calibration(store, report.calibration);
    auto net_only = std::make_shared<Calibration>(*report.fit);
    net_only->layers.clear();
    net.calibration = net_only;
    net_cal.calibration = report.fit;
  }

  void run(const RunSummary& s) {
    const RunRow& run = s.run;
    if (other_transport(run.info.transport(),
                        fmt::format("run {} ({}, backend {})", run.id, run.info.strategy, run.info.backend)))
      return;
    const Scenario sc = measured_scenario(run);
    const StrategyConfig& st = sc.strategies.front();
    const int world = run.info.world_size;
    const int ranks_per_node = on_testbed(run.info.config_json) ? 1 : world;
    // The strategy's own pattern: the plans the run went through (runs before patterns were stored too).
    const StepPattern pattern =
        Strategy(st, model_spec_for(sc.model), strategy_context(sc, world, ranks_per_node)).pattern();
    const auto rows = store.steps(run.id);
    RunValidation v{run, st.name, world, steady_state(rows, pattern, opt.warmup), {}, false, 0, false, {}};
    const Calibration* fit = report.fit.get();
    const bool fits = fit && calibration_fits_model(*fit, sc);
    v.compute_from_calibration = opt.compute == "calibration" || (opt.compute == "auto" && fits);
    if (v.compute_from_calibration && !fits)
      throw InputError(fmt::format(
          "--compute calibration: calibration \"{}\" measured {} at batch {} on {}, the run trained {} at batch {} on "
          "{}",
          report.calibration,
          fit->layers.empty() ? std::string("no compute") : fmt::format("layers {}", fmt::join(fit->layer_widths, "-")),
          fit->batch_size, fit->compute_backend, fmt::join(sc.model.layers, "-"), sc.train.batch_size,
          compute_backend_of(sc)));
    // The calibration's per-layer times, or the run's own (own_compute).
    const ComputeSource compute =
        v.compute_from_calibration ? from_calibration(*fit) : own_compute(sc, world, rows, pattern, opt.warmup);
    v.predicted = steady_state(simulate_pattern(sc, st, world, compute.compute_s, compute.optimizer_s,
                                                v.compute_from_calibration ? net_cal : net, ranks_per_node));
    report.ranking[world].first.push_back(v.measured.step_s);
    report.ranking[world].second.push_back(v.predicted.step_s);
    add("run", run.id, st.name, world, 0, "step_s", v.measured.step_s, v.predicted.step_s);
    add("run", run.id, st.name, world, 0, "comm_s", v.measured.comm_s, v.predicted.comm_s);
    v.step_error_pct = v.measured.step_s > 0 ? error_pct(v.measured.step_s, v.predicted.step_s) : 0.0;
    v.large_error = std::abs(v.step_error_pct) > opt.large_error_pct;
    if (v.large_error) v.likely_causes = likely_causes(run, record ? &*record : nullptr, fit);
    report.runs.push_back(std::move(v));
  }

  void bench(const BenchRunRow& b) {
    const int world = b.info.world_size;
    const Transport transport = b.info.transport();
    if (world < 2 || other_transport(transport, fmt::format("bench {}", b.id))) return;
    ClusterConfig cluster;  // star; links from the calibration, else the defaults
    // An imported nccl-tests log may name the preset it ran on.
    if (const auto cfg = nlohmann::json::parse(b.info.config_json, nullptr, false);
        cfg.is_object() && cfg.contains("preset")) {
      apply_cluster_preset(cluster, cfg["preset"].get<std::string>());
      if (b.info.ranks_per_node > 0) cluster.devices_per_node = b.info.ranks_per_node;  // as the log ran
    }
    CollectiveSimRequest req{cluster, world, {}, {}, transport, net, b.info.ranks_per_node};
    for (const CollectiveBenchRow& br : store.bench_rows(b.id)) {
      if (br.collective != Collective::Allreduce || !(br.time_us > 0)) continue;
      try {
        // The row's schedule as `bench collectives --simulate` predicts it; native (and an nccl-tests log's
        // "native (in-place)") as the backend's own choice at this size.
        req.schedules = {backend_native_base(br.schedule).value_or(br.schedule)};
        req.sizes = {static_cast<std::uint64_t>(br.count) * 4};
        const CollectiveBenchRow predicted = simulate_collective_bench(req).front();
        add("collective", b.id, br.schedule, world, br.bytes, "busbw_gbs", br.busbw_gbs, predicted.busbw_gbs);
      } catch (const std::exception& e) {
        report.errors.push_back(fmt::format("bench {} schedule {} at {} B: {}", b.id, br.schedule, br.bytes, e.what()));
      }
    }
  }
};

StoreValidation::StoreValidation(Store& store, const ValidationOptions& options)
    : impl_(new Impl{store, options, {}, {}, {}, {}, {}, {}}) {
  if (options.compute != "auto" && options.compute != "calibration" && options.compute != "measured")
    throw InputError("--compute must be auto, calibration or measured, got \"" + options.compute + "\"");
  impl_->load_calibration_named();
}

StoreValidation::~StoreValidation() = default;
const std::string& StoreValidation::calibration() const { return impl_->report.calibration; }
const Calibration* StoreValidation::fit() const { return impl_->report.fit.get(); }

ValidationReport StoreValidation::run(const std::function<void(const ValidationRow&)>& on_row) {
  Impl& v = *impl_;
  v.on_row = on_row;
  for (const RunSummary& s : v.store.summaries()) {
    if (s.run.info.source != RunSource::Measured || s.run.status != RunStatus::Completed || s.steps == 0) continue;
    try {
      v.run(s);
    } catch (const std::exception& e) {
      v.report.errors.push_back(
          fmt::format("run {} ({} / {}): {}", s.run.id, s.run.info.scenario, s.run.info.strategy, e.what()));
    }
  }
  // Only measurements are validated: a simulated bench (--simulate) is itself a prediction.
  if (!v.opt.runs_only)
    for (const BenchRunRow& b : v.store.benches())
      if (b.status == RunStatus::Completed && !b.info.simulated()) v.bench(b);
  if (!v.report.rows.empty()) v.store.add_validations(v.report.rows);
  ValidationReport out = std::move(v.report);
  v.report = {};
  return out;
}

}  // namespace ddplab
