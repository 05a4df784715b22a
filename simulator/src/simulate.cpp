// Public entry points: one step of a strategy's plan, one schedule, compute sources, trace export.
#include <algorithm>
#include <chrono>
#include <numeric>
#include <limits>
#include <map>
#include <stdexcept>
#include <string_view>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "ddplab/core/error.hpp"
#include "ddplab/core/step_totals.hpp"
#include "ddplab/core/store.hpp"
#include "ddplab/simulator/calibration.hpp"
#include "ddplab/simulator/compute_source.hpp"
#include "ddplab/simulator/simulator.hpp"
#include "ddplab/strategies/model_library.hpp"
#include "ddplab/strategies/nccl_model.hpp"
#include "ddplab/strategies/stages.hpp"
#include "ddplab/strategies/strategy.hpp"
#include "isolate.hpp"
#include "plan_replay.hpp"
#include "platform.hpp"
#include "replay.hpp"

namespace ddplab {
namespace {

constexpr std::string_view kModes[] = {"auto", "exact", "aggregated", "folded", "probed"};  // SimOptions::mode

void validate_options(const SimOptions& o) {
  bool known = false;
  for (const char* m : {"auto", "LV08", "CM02", "SMPI", "IB", "Constant"}) known = known || o.network_model == m;
  if (!known)
    throw InputError(fmt::format(
        "simulator: unknown network model \"{}\" (known: auto, LV08, CM02, SMPI, IB, Constant)", o.network_model));
  if (!(o.time_precision_s >= 0)) throw InputError("simulator: time_precision_s must be >= 0");
  if (std::find(std::begin(kModes), std::end(kModes), o.mode) == std::end(kModes))
    simulation_mode(o, 1);  // throws: an unknown mode
}

// What the strategy's schedule replays as, for the record: "native" becomes its model.
std::string replayed_schedule(const StrategyConfig& strategy, const NativeReplay& native) {
  if (uses_parameter_servers(strategy))
    return "ps";  // push and pull, whatever `schedule` says (validation keeps it native)
  if (!is_backend_native(strategy.schedule)) return strategy.schedule;
  if (native.transport == Transport::Mpi)
    return "native (Open MPI 4.1's choice by size: ring, recursive_doubling or halving_doubling)";
  if (native.transport == Transport::Nccl)
    return "native (NCCL's choice by size and scale: ring, tree or NVLS, LL/LL128/Simple)";
  return "native (replayed as " + native.schedule + ")";
}

}  // namespace

std::string network_model_for(const ClusterConfig& cluster, const SimOptions& options) {
  return options.network_model == "auto" ? cluster.network_model : options.network_model;
}

bool crosstraffic_for(const ClusterConfig& cluster, const SimOptions& options) {
  return options.crosstraffic.value_or(network_model_for(cluster, options) != "CM02");
}

std::string describe_nccl_choices(const Scenario& sc, const StrategyConfig& st, int world, const SimOptions& options) {
  if (native_transport(sc, options).transport != Transport::Nccl || world < 2) return "";
  // Under a pipeline, the first stage's collectives over its DP group.
  const StageSpec first = scenario_stages(sc, world, sc.cluster.devices_per_node).stages.front();
  world = first.context.world_size;
  if (world < 2) return "";
  const Strategy strategy(st, first.model, first.context);
  const StepPattern pattern = strategy.pattern();
  const NcclFabric fabric = sim::nccl_fabric(sc.cluster);
  std::map<std::string, int> seen;
  for (std::int64_t k = 0; k < pattern.period(); ++k)
    for (const PlanOp& op : strategy.plan(pattern.steady().first + k).ops)
      if (is_comm(op.kind) && is_backend_native(op.schedule))
        for (const CollectiveCall& call : op.calls) {
          const CallShape shape = call_shape(call, world);
          const NcclChoice c = nccl_choose(fabric, shape.collective, world, shape.count * elem_bytes(call.type));
          ++seen[c.algorithm + "/" + c.protocol];
        }
  std::string out;
  for (const auto& [choice, n] : seen) out += fmt::format("{}{} x{}", out.empty() ? "" : ", ", choice, n);
  return out;
}

NativeReplay native_transport(const Scenario& scenario, const SimOptions& options) {
  return options.native.value_or(NativeReplay{transport_of(scenario.train.backend), ""});
}

namespace {

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

std::string simulation_mode(const SimOptions& options, int world_size, bool pipeline) {
  if (pipeline && options.mode == "aggregated")
    throw InputError(
        "simulator: the aggregated mode does not replay model-parallel layouts (mode exact, folded, probed or auto)");
  if (!pipeline && options.mode == "folded")
    throw InputError(
        "simulator: the folded mode replays one replica of a model-parallel layout (tp or pp > 1); this has none");
  if (options.mode != "auto" && std::find(std::begin(kModes), std::end(kModes), options.mode) != std::end(kModes))
    return options.mode;
  if (options.mode == "auto") {
    if (pipeline) return world_size > kExactMaxLayoutWorld ? "probed" : "exact";
    return world_size > kExactMaxWorld ? "aggregated" : "exact";
  }
  throw InputError(fmt::format("simulator: unknown mode \"{}\" (known: {})", options.mode, fmt::join(kModes, ", ")));
}

SimOptions ranking_options(SimOptions options, int world_size) {
  if (options.mode == "auto" && world_size > kExactMaxLayoutWorld) options.mode = "probed";
  return options;
}

std::vector<SimStepResult> simulate_steps(const Scenario& scenario, const StrategyConfig& config, int world_size,
                                          double compute_s, double optimizer_s, const std::vector<std::int64_t>& steps,
                                          const SimOptions& options, int ranks_per_node) {
  if (world_size < 1) throw InputError(fmt::format("simulator: world size must be >= 1, got {}", world_size));
  if (!(compute_s >= 0) || !(optimizer_s >= 0)) throw InputError("simulator: compute_s and optimizer_s must be >= 0");
  if (steps.empty()) throw InputError("simulator: no micro-step to simulate");
  for (std::size_t i = 0; i < steps.size(); ++i)
    if (steps[i] < 0 || (i > 0 && steps[i] <= steps[i - 1]))
      throw InputError(fmt::format("simulator: micro-steps must be >= 0 and increasing, got {} after {}", steps[i],
                                   i > 0 ? steps[i - 1] : -1));
  if (ranks_per_node < 1)
    throw InputError(fmt::format("simulator: ranks_per_node must be >= 1, got {}", ranks_per_node));
  validate_options(options);
  sim::validate_cluster(scenario.cluster);
  if (!scenario.cluster.calibration.empty() && !options.calibration)
    throw InputError(fmt::format(
        "simulator: the scenario names calibration \"{}\" but none was loaded (simulate_sweep loads it from the store; "
        "else set SimOptions::calibration = load_calibration(store, name))",
        scenario.cluster.calibration));
  if (!uses_parameter_servers(config) && !is_backend_native(config.schedule))
    make_schedule(config.schedule, 1, 0);  // rejects an unknown name, listing the known ones

  // The same Strategy the runtime builds (trainer.cpp), so the plans are the ones it executes. Unknown
  // policies and codecs throw InputError here, in the caller's process. The runtime rebuilds
  // buckets after its first sync step (micro-step accumulate_steps - 1) from the gradient-ready order it
  // observed, which for the MLP is the expected one.
  // Under [parallel] tp or pp > 1, one Strategy per pipeline stage, over a TP rank's share of its layers
  // and its DP group. The model is the MLP, or a model table (ModelTableError).
  const ScenarioStages split = scenario_stages(scenario, world_size, ranks_per_node, simulated_model(scenario));
  std::vector<std::unique_ptr<Strategy>> initial, rebuilt;
  for (const StageSpec& spec : split.stages) {
    initial.push_back(std::make_unique<Strategy>(config, spec.model, spec.context));
    rebuilt.push_back(std::make_unique<Strategy>(config, spec.model, spec.context));
    rebuilt.back()->observe_ready_order(spec.model.expected_ready_order());
  }
  SimOptions resolved = options;
  resolved.native = native_transport(scenario, options);
  sim::PlanJob job;
  job.cluster = calibrated_cluster(scenario.cluster, options);
  job.options = resolved;
  job.compute_s = compute_s, job.optimizer_s = optimizer_s;
  if (split.split()) {
    job.layout = split.layout;
    job.stages.resize(initial.size());
    job.fb_flops = scenario.train.batch_size * (split.model.forward_flops() + split.model.backward_flops());
    job.parameters = split.model.parameter_count();
  }
  for (std::size_t st = 0; st < initial.size(); ++st)
    for (std::int64_t step : steps) {
      const Strategy& s = step >= config.accumulate_steps ? *rebuilt[st] : *initial[st];
      auto& chain = job.stages.empty() ? job.steps : job.stages[st];
      chain.push_back({&s, s.plan(step)});
      for (const PlanOp& op : chain.back().plan.ops)
        for (const CollectiveCall& call : op.calls)
          schedule_for_call(call, op.schedule, 1, 1, *resolved.native);  // names check
    }

  // Schedules are built in the child: for 1024 ranks each is millions of steps, freed when the child ends.
  const auto t0 = std::chrono::steady_clock::now();
  const auto j = sim::run_in_child(
      fmt::format("world size {}", world_size),
      [&] {
        nlohmann::json all = nlohmann::json::array();
        for (const SimStepResult& r : sim::run_plan_simulation(job)) all.push_back(sim::result_to_json(r));
        return nlohmann::json{{"steps", std::move(all)}};
      },
      options.verbose);
  const double wall = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::vector<SimStepResult> out;
  for (const auto& r : j.at("steps")) {
    out.push_back(sim::result_from_json(r));
    out.back().wall_s = wall / static_cast<double>(j.at("steps").size());  // the chain's wall time, shared out
    out.back().schedule = replayed_schedule(config, *resolved.native);
  }
  return out;
}

SimStepResult simulate_step(const Scenario& scenario, const StrategyConfig& config, int world_size, double compute_s,
                            double optimizer_s, const SimOptions& options, const SimStepSpec& spec) {
  if (spec.step < 0) throw InputError(fmt::format("simulator: step must be >= 0, got {}", spec.step));
  return simulate_steps(scenario, config, world_size, compute_s, optimizer_s, {spec.step}, options, spec.ranks_per_node)
      .front();
}

namespace {

// data.uneven = "join": the steady block repeated over whole epochs from the end of the warm-up, so that the
// rows give each rank its share's samples at each step of the epoch. A rank out of data still runs every
// collective and every update, and its compute only ever waited for the others': the step time is the
// steady block's, unless the rank was slower than the others, which a straggler is (not replayed).
void expand_join(const Scenario& sc, int world_size, const SimOptions& options, SimPatternResult& out) {
  const auto it = options.join.find(world_size);
  if (it == options.join.end())
    throw InputError(
        fmt::format("data.uneven = \"join\": the simulator needs each rank's share at {} ranks "
                    "(SimOptions::join; ddplab simulate computes it from the dataset)",
                    world_size));
  for (int r = 0; r < world_size; ++r)
    if (sc.cluster.compute_factor(r) != 1)
      throw InputError(
          fmt::format("data.uneven = \"join\" with cluster.stragglers: a straggler that runs out "
                      "of data stops slowing the others, which the simulator does not replay "
                      "yet (rank {} has factor {})",
                      r, sc.cluster.compute_factor(r)));
  const JoinSchedule& join = it->second;
  if (join.samples.size() != static_cast<std::size_t>(world_size) || join.batch != out.batch_per_rank)
    throw InputError(
        fmt::format("data.uneven = \"join\": shares of {} ranks at batch {} given for {} ranks at batch {}",
                    join.samples.size(), join.batch, world_size, out.batch_per_rank));
  const std::int64_t first = out.pattern.warmup_steps(), period = out.pattern.period();
  const std::int64_t epoch = join.per_epoch();
  const std::int64_t length = std::lcm(epoch, period);  // whole epochs in whole steady blocks
  std::vector<SimStepResult> block(out.steps.end() - period, out.steps.end());
  for (std::int64_t step = first + period; step < first + length; ++step) {
    SimStepResult copy = block[static_cast<std::size_t>((step - first) % period)];
    copy.step = step;
    copy.wall_s = 0;  // simulated once
    out.steps.push_back(std::move(copy));
  }
  // The steady block is the epoch now: the summary's samples over its time.
  StepSegment& steady = out.pattern.segments.back();
  steady.length = length;
  steady.what = fmt::format("{} epoch{} of {} steps: ranks out of data sync zeros (data.uneven = \"join\")",
                            length / epoch, length / epoch > 1 ? "s" : "", epoch);
  out.join = join;
}

}  // namespace

SimPatternResult simulate_pattern(const Scenario& scenario, const StrategyConfig& config, int world_size,
                                  double compute_s, double optimizer_s, const SimOptions& options, int ranks_per_node) {
  // Under a pipeline, its first stage's pattern (every stage's plans change at the same steps).
  const ScenarioStages split = scenario_stages(scenario, world_size, ranks_per_node);
  const Strategy strategy(config, split.stages.front().model, split.stages.front().context);
  SimPatternResult out;
  out.pattern = strategy.pattern();
  out.layout = split.split() ? PsLayout{world_size, 0} : strategy.ps_layout();
  if (split.split()) out.parallel = split.layout;
  out.batch_per_rank = scenario.train.batch_size;
  std::vector<std::int64_t> steps;
  for (const StepSegment& seg : out.pattern.segments)
    for (std::int64_t i = 0; i < seg.length; ++i) steps.push_back(seg.first + i);
  out.steps = simulate_steps(scenario, config, world_size, compute_s, optimizer_s, steps, options, ranks_per_node);
  for (const SimStepResult& r : out.steps) out.wall_s += r.wall_s, out.comms += r.comms;
  out.schedule = out.steps.front().schedule;
  if (scenario.data.uneven == "join") expand_join(scenario, world_size, options, out);

  // The same figures the store's summary gives of the rows simulate_sweep writes (step_totals.hpp).
  const RunWindows w = run_windows(step_totals(step_rows(out)), &out.pattern, true, 0);
  out.step_s = w.steady.step_s();
  out.compute_s = w.steady.mean(w.steady.compute_s);
  out.comm_s = w.steady.mean(w.steady.comm_s);
  out.exposed_comm_s = w.steady.mean(w.steady.exposed_comm_s);
  out.optimizer_s = w.steady.mean(w.steady.optimizer_s);
  out.samples_per_s = w.steady.samples_per_s();
  out.warmup_steps = static_cast<std::int64_t>(w.warmup.steps);
  out.warmup_s = w.warmup.time_s;
  return out;
}

std::vector<StepMetrics> step_rows(const SimPatternResult& r) {
  std::vector<StepMetrics> rows;
  for (const SimStepResult& s : r.steps)
    for (std::size_t rank = 0; rank < s.ranks.size(); ++rank) {
      const SimRankTimes& t = s.ranks[rank];
      StepMetrics m;
      m.step = s.step;  // the micro-step's number in the run
      m.rank = static_cast<int>(rank);
      m.compute_s = t.compute_s, m.comm_s = t.comm_s, m.exposed_comm_s = t.exposed_comm_s;
      m.optimizer_s = t.optimizer_s, m.step_s = t.step_s;
      // A replica's samples once: on the first rank of its TP group in its last stage.
      const RankCoord at = r.parallel ? r.parallel->coord(static_cast<int>(rank)) : RankCoord{};
      const bool counts = !r.parallel || (at.pp + 1 == r.parallel->pp() && at.tp == 0);
      m.samples = !r.layout.is_worker(static_cast<int>(rank)) || !counts ? 0
                  : r.join ? r.join->samples_of(static_cast<int>(rank), s.step % r.join->per_epoch())
                           : r.batch_per_rank;
      m.bytes_sent = static_cast<std::int64_t>(s.bytes_sent.at(rank));
      m.loss = std::numeric_limits<double>::quiet_NaN();  // a simulation trains nothing
      rows.push_back(m);
    }
  return rows;
}

SimStepResult simulate_schedule(const ClusterConfig& cluster, const Schedule& schedule, std::size_t elem_bytes,
                                const SimOptions& options) {
  validate_options(options);
  sim::validate_cluster(cluster);
  sim::validate_schedule(schedule);
  // The child sees the caller's schedule through fork's copy of memory; nothing is serialised.
  return run_isolated(schedule.world_size, options, [&, linked = calibrated_cluster(cluster, options)] {
    return sim::run_schedule_simulation(linked, schedule, elem_bytes, options);
  });
}

std::vector<TraceEvent> trace_events(const SimStepResult& r) { return trace_events(std::vector<SimStepResult>{r}); }

std::vector<TraceEvent> trace_events(const std::vector<SimStepResult>& steps) {
  std::vector<TraceEvent> events;
  for (const SimStepResult& r : steps)
    for (std::size_t rank = 0; rank < r.ranks.size(); ++rank) {
      const SimRankTimes& t = r.ranks[rank];
      for (const SimOpRecord& op : t.trace) {
        nlohmann::json args = {{"step", r.step}};
        if (op.stream == "comm" || op.bytes > 0) args["bytes"] = op.bytes;  // a TP allreduce runs on the compute track
        events.push_back({static_cast<int>(rank), op.stream, op.name, t.start_s + op.start_s, op.end_s - op.start_s,
                          std::move(args)});
      }
    }
  return events;
}

}  // namespace ddplab
