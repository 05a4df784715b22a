// Public entry points: one step, one schedule, and sweeps over world sizes written to the store.
#include <chrono>
#include <cmath>
#include <limits>
#include <stdexcept>

#include <unistd.h>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <xbt/base.h>  // simgrid/version.h needs its macros
#include <simgrid/version.h>

#include "ddplab/core/store.hpp"
#include "ddplab/simulator/simulator.hpp"
#include "isolate.hpp"
#include "platform.hpp"
#include "replay.hpp"

namespace ddplab {
namespace {

void validate_model(const SimOptions& o) {
  for (const char* known : {"LV08", "CM02", "SMPI", "IB", "Constant"})
    if (o.network_model == known) return;
  throw std::invalid_argument(
      fmt::format("simulator: unknown network model \"{}\" (known: LV08, CM02, SMPI, IB, Constant)", o.network_model));
}

void validate_options(const SimOptions& o) {
  validate_model(o);
  if (!(o.time_precision_s >= 0)) throw std::invalid_argument("simulator: time_precision_s must be >= 0");
}

// MPI's native allreduce algorithm is not known to the simulator, so "native" is replayed as ring.
std::string replayed_schedule(const StrategyConfig& strategy) {
  return strategy.schedule == "native" ? "ring" : strategy.schedule;
}

std::string world_label(int n) { return fmt::format("world size {}", n); }

// Runs the job in a child process; wall_s covers fork to result.
SimStepResult run_isolated(int world_size, const SimOptions& options, const std::function<SimStepResult()>& sim) {
  const auto t0 = std::chrono::steady_clock::now();
  auto j = sim::run_in_child(
      world_label(world_size), [&] { return sim::result_to_json(sim()); }, options.verbose);
  SimStepResult r = sim::result_from_json(j);
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

std::string host_info_json() {
  char name[256] = {};
  ::gethostname(name, sizeof name - 1);
  return nlohmann::json{{"hostname", name},
                        {"simulator", fmt::format("SimGrid {}.{}.{}", SIMGRID_VERSION_MAJOR, SIMGRID_VERSION_MINOR,
                                                  SIMGRID_VERSION_PATCH)}}
      .dump();
}

}  // namespace

SimStepResult simulate_step(const Scenario& scenario, const StrategyConfig& strategy, int world_size, double compute_s,
                            double optimizer_s, const SimOptions& options) {
  if (world_size < 1) throw std::invalid_argument(fmt::format("simulator: world size must be >= 1, got {}", world_size));
  if (strategy.policy != "flat")
    throw std::invalid_argument(fmt::format("simulator: sync policy \"{}\" of strategy \"{}\" is not supported yet (known: flat)",
                                            strategy.policy, strategy.name));
  if (!(compute_s >= 0) || !(optimizer_s >= 0))
    throw std::invalid_argument("simulator: compute_s and optimizer_s must be >= 0");
  validate_options(options);
  sim::validate_cluster(scenario.cluster);
  const std::string schedule = replayed_schedule(strategy);
  make_schedule(schedule, 1, 0);  // rejects an unknown name here, with the list of known ones

  const std::size_t count = scenario.model.parameter_count();
  // The schedule is built in the child: for 1024 ranks it is millions of steps, freed when the child ends.
  return run_isolated(world_size, options, [&] {
    const Schedule s = make_schedule(schedule, world_size, count);
    sim::validate_schedule(s);
    sim::SimJob job{scenario.cluster, &s, kGradientElemBytes, compute_s, optimizer_s, options};
    return sim::run_simulation(job);
  });
}

SimStepResult simulate_schedule(const ClusterConfig& cluster, const Schedule& schedule, std::size_t elem_bytes,
                                const SimOptions& options) {
  validate_options(options);
  sim::validate_cluster(cluster);
  sim::validate_schedule(schedule);
  // The child sees the caller's schedule through fork's copy of memory; nothing is serialised.
  return run_isolated(schedule.world_size, options, [&] {
    sim::SimJob job{cluster, &schedule, elem_bytes, 0.0, 0.0, options};
    return sim::run_simulation(job);
  });
}

ComputeSource compute_source(const Scenario& scenario, const StrategyConfig& strategy, const Store& store) {
  if (auto id = store.latest_measured(scenario.name, strategy.name)) {
    const RunSummary s = store.summary(*id);
    return {s.compute_s, s.optimizer_s, fmt::format("measured run #{}", *id)};
  }
  if (scenario.cluster.compute_s)
    return {*scenario.cluster.compute_s, scenario.cluster.optimizer_s.value_or(0.0),
            "scenario [cluster].compute_s"};
  throw std::runtime_error(fmt::format(
      "no compute time to simulate scenario \"{}\", strategy \"{}\": the store {} has no completed measured run of it "
      "(measure one with `ddplab run`), and the scenario sets no [cluster].compute_s (seconds per step; "
      "optionally [cluster].optimizer_s)",
      scenario.name, strategy.name, store.path()));
}

std::vector<SweepPoint> simulate_sweep(const Scenario& scenario, const StrategyConfig& strategy,
                                       const std::vector<int>& worlds, Store& store, const SimOptions& options,
                                       std::function<void(int, int)> progress) {
  for (int n : worlds)
    if (n < 1) throw std::invalid_argument(fmt::format("simulator: world size must be >= 1, got {}", n));
  const ComputeSource src = compute_source(scenario, strategy, store);
  const int batch = scenario.train.batch_size;
  const double busy_s = src.compute_s + src.optimizer_s;
  const std::string host_info = host_info_json();

  std::vector<SweepPoint> points;
  for (std::size_t i = 0; i < worlds.size(); ++i) {
    const int n = worlds[i];
    SweepPoint p;
    p.world_size = n;
    p.result = simulate_step(scenario, strategy, n, src.compute_s, src.optimizer_s, options);
    const auto& r = p.result;
    p.samples_per_s = r.step_s > 0 ? n * static_cast<double>(batch) / r.step_s : 0.0;
    // Against n ranks that never communicate: (compute + optimizer) / step.
    p.efficiency = (r.step_s > 0 && busy_s > 0) ? busy_s / r.step_s : 0.0;

    nlohmann::json config = scenario.to_json();
    config["world_size"] = n;
    config["strategy"] = {{"name", strategy.name}, {"policy", strategy.policy}, {"schedule", strategy.schedule}};
    config["simulation"] = {
        {"compute_s", src.compute_s},
        {"optimizer_s", src.optimizer_s},
        {"compute_origin", src.origin},
        {"network_model", options.network_model},
        {"crosstraffic", options.crosstraffic},
        {"tcp_gamma", sim::tcp_gamma_for(scenario.cluster)},
        {"time_precision_s", sim::time_precision_for(scenario.cluster, options)},
        {"schedule_replayed", r.schedule},
        {"wall_s", r.wall_s},
        {"comms", r.comms},
    };
    if (strategy.schedule == "native")
      config["simulation"]["note"] = "schedule native replayed as ring: MPI's native algorithm is unknown to the simulator";

    RunInfo info;
    info.scenario = scenario.name;
    info.strategy = strategy.name;
    info.backend = "simgrid";
    info.world_size = n;
    info.source = "simulated";
    info.config_json = config.dump();
    info.host_info = host_info;
    info.batch_size = batch;
    p.run_id = store.begin_run(info);
    for (int rank = 0; rank < n; ++rank) {
      const auto& t = r.ranks[static_cast<std::size_t>(rank)];
      StepMetrics m;
      m.step = 0;
      m.rank = rank;
      m.compute_s = t.compute_s;
      m.comm_s = t.comm_s;
      m.exposed_comm_s = t.exposed_comm_s;
      m.optimizer_s = t.optimizer_s;
      m.step_s = t.step_s;
      m.samples = batch;
      m.bytes_sent = static_cast<std::int64_t>(r.bytes_sent[static_cast<std::size_t>(rank)]);
      m.loss = std::numeric_limits<double>::quiet_NaN();  // a simulation trains nothing
      store.add_step(p.run_id, m);
    }
    store.finish_run(p.run_id, "completed");
    points.push_back(std::move(p));
    if (progress) progress(static_cast<int>(i + 1), static_cast<int>(worlds.size()));
  }
  return points;
}

}  // namespace ddplab
