// Sweeps over world sizes: the strategy's whole step pattern per world size (simulate_pattern), each
// written to the results store as a completed simulated run.
#include <limits>
#include <stdexcept>

#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <xbt/base.h>  // simgrid/version.h needs its macros
#include <simgrid/version.h>

#include "ddplab/core/error.hpp"
#include "ddplab/core/store.hpp"
#include "ddplab/simulator/calibration.hpp"
#include "ddplab/simulator/simulator.hpp"
#include "ddplab/strategies/model_library.hpp"
#include "ddplab/strategies/layout.hpp"
#include "ddplab/strategies/strategy.hpp"
#include "platform.hpp"

namespace ddplab {
namespace {

std::string host_info_json() {
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  return nlohmann::json{{"hostname", name},
                        {"simulator", fmt::format("SimGrid {}.{}.{}", SIMGRID_VERSION_MAJOR, SIMGRID_VERSION_MINOR,
                                                  SIMGRID_VERSION_PATCH)}}
      .dump();
}

// The options with the calibration the scenario names, loaded from the store. Its per-layer times stay
// only when they were measured on this scenario's model and batch; otherwise compute_s is split by FLOPs.
SimOptions with_scenario_calibration(const Scenario& scenario, const SimOptions& given, const Store& store) {
  SimOptions o = given;
  if (!o.calibration && !scenario.cluster.calibration.empty())
    o.calibration = load_calibration(store, scenario.cluster.calibration);
  if (o.calibration && !o.calibration->layers.empty() && !calibration_fits_model(*o.calibration, scenario)) {
    auto network_only = std::make_shared<Calibration>(*o.calibration);
    network_only->layers.clear();
    o.calibration = network_only;
  }
  return o;
}

}  // namespace

SweepSetup sweep_setup(const Scenario& scenario, const StrategyConfig& strategy, const Store& store,
                       const SimOptions& given) {
  SweepSetup setup;
  setup.compute = compute_source(scenario, strategy, store, given.compute, given.allow_oversubscribed);
  setup.options = with_scenario_calibration(scenario, given, store);
  // The calibration's per-layer times are the compute only when they are the chosen source.
  if (setup.options.calibration && !setup.options.calibration->layers.empty() && setup.compute.kind != "calibration") {
    auto network_only = std::make_shared<Calibration>(*setup.options.calibration);
    network_only->layers.clear();
    setup.options.calibration = network_only;
  }
  return setup;
}

SweepPoint simulate_point(const Scenario& scenario, const StrategyConfig& strategy, int n, const SweepSetup& setup) {
  if (n < 1) throw InputError(fmt::format("simulator: world size must be >= 1, got {}", n));
  const ComputeSource& src = setup.compute;
  SweepPoint p;
  p.world_size = n;
  // Small worlds keep every op, so that the run's timeline is stored for the GUI's Timeline.
  SimOptions o = setup.options;
  o.keep_trace = setup.options.keep_trace || n <= kStoredTraceWorld;
  p.result =
      simulate_pattern(scenario, strategy, n, src.compute_s, src.optimizer_s, o, scenario.cluster.devices_per_node);
  const SimPatternResult& r = p.result;
  // Against the workers (dedicated parameter servers take no batch) running the same micro-steps without
  // communicating: compute every micro-step (with what recomputation runs again), the optimizer once per
  // accumulation window.
  const double recomputed = recomputed_share(scenario);
  const double busy_s = src.compute_s * (1 + recomputed) + src.optimizer_s / strategy.accumulate_steps;
  const double alone = busy_s > 0 ? r.layout.workers() * static_cast<double>(scenario.train.batch_size) / busy_s : 0.0;
  p.efficiency = alone > 0 ? r.samples_per_s / alone : 0.0;
  p.memory = check_memory(scenario, strategy, n, scenario.cluster.devices_per_node);
  if (const auto& peak = scenario.cluster.device_flops; peak && *peak > 0) {
    const ModelSpec model = model_spec_for(scenario.model);
    p.mfu = r.samples_per_s * (model.forward_flops() + model.backward_flops()) / (n * *peak);
  }
  return p;
}

std::string describe_mfu(const Scenario& scenario, const SweepPoint& p, const ComputeSource& compute) {
  if (!p.mfu) return "";
  const bool derived = compute.kind == "flops";  // compute_s itself from device_flops x compute_efficiency
  return fmt::format(
      "MFU {:.1f}% (the model's forward and backward FLOPs x samples/s over {} x cluster.device_flops{})", 100 * *p.mfu,
      p.world_size,
      !derived ? ""
      : scenario.train.recompute == "none"
          ? fmt::format("; compute runs at cluster.compute_efficiency = {:.2f} of that peak, the most "
                        "MFU can reach",
                        scenario.cluster.compute_efficiency)
          : fmt::format("; compute runs at cluster.compute_efficiency = {:.2f} of that peak, and "
                        "train.recompute's forward again costs time the model's FLOPs leave out",
                        scenario.cluster.compute_efficiency));
}

std::vector<SweepPoint> simulate_sweep(const Scenario& scenario, const StrategyConfig& strategy,
                                       const std::vector<int>& worlds, Store& store, const SimOptions& given,
                                       std::function<void(int, int)> progress) {
  for (int n : worlds)
    if (n < 1) throw InputError(fmt::format("simulator: world size must be >= 1, got {}", n));
  const SweepSetup setup = sweep_setup(scenario, strategy, store, given);
  const ComputeSource& src = setup.compute;
  const SimOptions& options = setup.options;
  const int batch = scenario.train.batch_size;
  const std::string host_info = host_info_json();

  std::vector<SweepPoint> points;
  for (std::size_t i = 0; i < worlds.size(); ++i) {
    const int n = worlds[i];
    SweepPoint p = simulate_point(scenario, strategy, n, setup);
    const SimPatternResult& r = p.result;

    nlohmann::json config = scenario.to_json();
    config["world_size"] = n;
    config["strategy"] = strategy.to_json();
    config["pattern"] = r.pattern.to_json();
    config["simulation"] = {
        {"compute_s", src.compute_s},
        {"optimizer_s", src.optimizer_s},
        {"compute_origin", src.origin},
        {"compute_source", src.kind},
        {"steps",
         [&] {
           std::vector<std::int64_t> v;
           for (const SimStepResult& x : r.steps) v.push_back(x.step);
           return v;
         }()},
        {"step_note",
         "the first block of each segment of the strategy's step pattern, simulated back to back; a "
         "warm-up block stands for every repeat of its segment (config pattern)"},
        {"ranks_per_node", scenario.cluster.devices_per_node},
        {"network_model", network_model_for(scenario.cluster, options)},
        {"crosstraffic", crosstraffic_for(scenario.cluster, options)},
        {"tcp_gamma", sim::tcp_gamma_for(scenario.cluster)},
        {"time_precision_s", sim::time_precision_for(scenario.cluster, options)},
        {"schedule_replayed", r.schedule},
        {"wall_s", r.wall_s},
        {"comms", r.comms},
        {"mode", simulation_mode(options, n, scenario.parallel.model_parallel())},
        {"mode_note",
         "exact: every message; aggregated: schedule steps merged into phases of flows (docs/simulation.md)"},
    };
    nlohmann::json memory = {
        {"rank", p.memory.rank}, {"total_bytes", p.memory.memory.total()}, {"fits", p.memory.fits()}};
    for (const auto& [part, bytes] : p.memory.memory.parts()) memory[part + "_bytes"] = bytes;
    if (p.memory.capacity) memory["capacity_bytes"] = *p.memory.capacity;
    config["simulation"]["device_memory"] = std::move(memory);
    if (p.mfu) config["simulation"]["mfu"] = *p.mfu;
    if (options.calibration) {
      config["simulation"]["calibration"] = options.calibration->name;
      config["simulation"]["compute_split"] =
          options.calibration->layers.empty() ? "compute_s by FLOPs" : "calibration per-layer times";
    }

    RunInfo info;
    info.scenario = scenario.name;
    info.strategy = strategy.name;
    info.backend = "simgrid";
    info.world_size = n;
    info.source = RunSource::Simulated;
    info.config_json = config.dump();
    info.host_info = host_info;
    info.batch_size = batch;
    p.run_id = store.begin_run(info);
    for (const StepMetrics& m : step_rows(r)) store.add_step(p.run_id, m);
    if (n <= kStoredTraceWorld) store.add_trace(p.run_id, trace_events(r.steps));
    store.finish_run(p.run_id, RunStatus::Completed);
    points.push_back(std::move(p));
    if (progress) progress(static_cast<int>(i + 1), static_cast<int>(worlds.size()));
  }
  return points;
}

}  // namespace ddplab
