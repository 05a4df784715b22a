// Public entry points: one step of a strategy's plan, one schedule, compute sources, trace export.
#include <chrono>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ddplab/core/store.hpp"
#include "ddplab/simulator/calibration.hpp"
#include "ddplab/simulator/simulator.hpp"
#include "ddplab/strategies/model_library.hpp"
#include "ddplab/strategies/strategy.hpp"
#include "isolate.hpp"
#include "plan_replay.hpp"
#include "platform.hpp"
#include "replay.hpp"

namespace ddplab {
namespace {

void validate_options(const SimOptions& o) {
  bool known = false;
  for (const char* m : {"LV08", "CM02", "SMPI", "IB", "Constant"}) known = known || o.network_model == m;
  if (!known)
    throw std::invalid_argument(
        fmt::format("simulator: unknown network model \"{}\" (known: LV08, CM02, SMPI, IB, Constant)", o.network_model));
  if (!(o.time_precision_s >= 0)) throw std::invalid_argument("simulator: time_precision_s must be >= 0");
  simulation_mode(o, 1);  // rejects an unknown mode
}

// MPI's native allreduce algorithm is not known to the simulator, so "native" is replayed as ring.
std::string replayed_schedule(const StrategyConfig& strategy) {
  if (uses_parameter_servers(strategy)) return "ps";  // push and pull, whatever `schedule` says (validation keeps it native)
  return strategy.schedule == "native" ? "ring" : strategy.schedule;
}

// Runs the simulation in a child process; wall_s covers fork to result.
SimStepResult run_isolated(int world_size, const SimOptions& options, const std::function<SimStepResult()>& sim) {
  const auto t0 = std::chrono::steady_clock::now();
  auto j = sim::run_in_child(
      fmt::format("world size {}", world_size), [&] { return sim::result_to_json(sim()); }, options.verbose);
  SimStepResult r = sim::result_from_json(j);
  r.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return r;
}

}  // namespace

std::string simulation_mode(const SimOptions& options, int world_size) {
  if (options.mode == "exact" || options.mode == "aggregated") return options.mode;
  if (options.mode == "auto") return world_size > kExactMaxWorld ? "aggregated" : "exact";
  throw std::invalid_argument(
      fmt::format("simulator: unknown mode \"{}\" (known: auto, exact, aggregated)", options.mode));
}

SimStepResult simulate_step(const Scenario& scenario, const StrategyConfig& config, int world_size, double compute_s,
                            double optimizer_s, const SimOptions& options, const SimStepSpec& spec) {
  if (world_size < 1) throw std::invalid_argument(fmt::format("simulator: world size must be >= 1, got {}", world_size));
  if (!(compute_s >= 0) || !(optimizer_s >= 0))
    throw std::invalid_argument("simulator: compute_s and optimizer_s must be >= 0");
  if (spec.step < 0) throw std::invalid_argument(fmt::format("simulator: step must be >= 0, got {}", spec.step));
  if (spec.ranks_per_node < 1)
    throw std::invalid_argument(fmt::format("simulator: ranks_per_node must be >= 1, got {}", spec.ranks_per_node));
  validate_options(options);
  sim::validate_cluster(scenario.cluster);
  if (!scenario.cluster.calibration.empty() && !options.calibration)
    throw std::invalid_argument(fmt::format(
        "simulator: the scenario names calibration \"{}\" but none was loaded (simulate_sweep loads it from the store; "
        "else set SimOptions::calibration = load_calibration(store, name))",
        scenario.cluster.calibration));
  if (!uses_parameter_servers(config)) make_schedule(replayed_schedule(config), 1, 0);  // rejects an unknown name, listing the known ones

  // The same Strategy the runtime builds (trainer.cpp), so the plan is the one it executes. Unknown
  // policies and codecs throw std::invalid_argument here, in the caller's process.
  const ModelSpec model = model_spec_for(scenario.model);  // the MLP, or a model table (ModelTableError)
  const StrategyContext ctx{world_size, spec.ranks_per_node, scenario.train.batch_size, scenario.train.seed};
  Strategy strategy(config, model, ctx);
  // The runtime rebuilds buckets after its first sync step (micro-step accumulate_steps - 1) from the
  // gradient-ready order it observed, which for the MLP is the expected one.
  if (spec.step >= config.accumulate_steps) strategy.observe_ready_order(model.expected_ready_order());
  const StepPlan plan = strategy.plan(spec.step);
  for (const PlanOp& op : plan.ops)
    for (const CollectiveCall& call : op.calls) schedule_for_call(call, op.schedule, 1, 1, "ring");  // names check

  // Schedules are built in the child: for 1024 ranks each is millions of steps, freed when the child ends.
  SimStepResult r = run_isolated(world_size, options, [&] {
    sim::PlanJob job{calibrated_cluster(scenario.cluster, options), options, &strategy, &plan, compute_s, optimizer_s};
    return sim::run_plan_simulation(job);
  });
  r.schedule = replayed_schedule(config);
  return r;
}

SimStepResult simulate_schedule(const ClusterConfig& cluster, const Schedule& schedule, std::size_t elem_bytes,
                                const SimOptions& options) {
  validate_options(options);
  sim::validate_cluster(cluster);
  sim::validate_schedule(schedule);
  // The child sees the caller's schedule through fork's copy of memory; nothing is serialised.
  return run_isolated(schedule.world_size, options,
                      [&, linked = calibrated_cluster(cluster, options)] {
                        return sim::run_schedule_simulation(linked, schedule, elem_bytes, options);
                      });
}

std::int64_t representative_step(const StrategyConfig& c) {
  std::int64_t opt = 1;  // optimizer step 0 runs on the initial buckets; from step 1 they are rebuilt
  if (c.codec == "powersgd") {
    // PowerSGD sends the plain gradients before start_iter (PowerSGDState's default 1000, as the codec).
    std::int64_t start = 1000;
    if (auto it = c.codec_options.find("start_iter"); it != c.codec_options.end()) {
      try {
        start = std::stoll(it->second);
      } catch (const std::exception&) {
        // Left at the default: building the Strategy reports the bad option with the codec's own message.
      }
    }
    opt = std::max(opt, start);
  }
  if (c.policy == "local_sgd") {
    // After the warmup only every local_sgd_period-th step communicates: simulate one that does.
    const std::int64_t warmup = c.local_sgd_warmup, period = std::max(1, c.local_sgd_period);
    opt = std::max(opt, warmup);
    while ((opt - warmup + 1) % period != 0) ++opt;
  }
  return (opt + 1) * c.accumulate_steps - 1;
}

std::vector<TraceEvent> trace_events(const SimStepResult& r) {
  std::vector<TraceEvent> events;
  for (std::size_t rank = 0; rank < r.ranks.size(); ++rank)
    for (const SimOpRecord& op : r.ranks[rank].trace) {
      nlohmann::json args = nlohmann::json::object();
      if (op.stream == "comm") args["bytes"] = op.bytes;
      events.push_back({static_cast<int>(rank), op.stream, op.name, op.start_s, op.end_s - op.start_s, std::move(args)});
    }
  return events;
}

ComputeSource compute_source(const Scenario& scenario, const StrategyConfig& strategy, const Store& store) {
  // What the scenario says wins over the store: a measured run on oversubscribed cores inflates compute, and
  // `compute_s` is how a user corrects it.
  if (scenario.cluster.compute_s)
    return {*scenario.cluster.compute_s, scenario.cluster.optimizer_s.value_or(0.0),
            "scenario [cluster].compute_s"};
  if (auto id = store.latest_measured(scenario.name, strategy.name)) {
    const RunSummary s = store.summary(*id);
    return {s.compute_s, s.optimizer_s, fmt::format("measured run #{}", *id)};
  }
  if (const ClusterConfig& c = scenario.cluster; c.device_flops) {
    // Forward + backward of one micro-batch at a fraction of the device's peak.
    const ModelSpec model = model_spec_for(scenario.model);
    ComputeSource src{scenario.train.batch_size * (model.forward_flops() + model.backward_flops()) /
                          (*c.device_flops * c.compute_efficiency),
                      c.optimizer_s.value_or(0.0), "model FLOPs / (device_flops x efficiency)"};
    if (!c.optimizer_s && c.device_mem_bw) {
      // SGD with momentum in fp32 reads parameter, gradient and momentum and writes two: 20 bytes per parameter.
      src.optimizer_s = 20.0 * static_cast<double>(model.parameter_count()) / *c.device_mem_bw;
      src.origin += "; optimizer 20 B per parameter / device_mem_bw";
    }
    return src;
  }
  throw std::runtime_error(fmt::format(
      "no compute time to simulate scenario \"{}\", strategy \"{}\": the store {} has no completed measured run of it "
      "(measure one with `ddplab run`), and the scenario sets no [cluster].compute_s (seconds per step; "
      "optionally [cluster].optimizer_s) nor [cluster].device_flops (peak FLOP/s, to derive it from the model's FLOPs)",
      scenario.name, strategy.name, store.path()));
}

}  // namespace ddplab
