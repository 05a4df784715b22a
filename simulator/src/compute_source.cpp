// Compute sources for the simulator (compute_source.hpp), and the scenario of a measured run.
#include "ddplab/simulator/compute_source.hpp"

#include <algorithm>
#include <map>
#include <optional>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ddplab/core/error.hpp"
#include "ddplab/core/rank_report.hpp"
#include "ddplab/core/units.hpp"
#include "ddplab/simulator/calibration.hpp"
#include "ddplab/strategies/model_library.hpp"
#include "ddplab/strategies/strategy.hpp"
#include "ddplab/strategies/optimizer.hpp"
#include "ddplab/strategies/strategy.hpp"

namespace ddplab {

ModelSpec simulated_model(const Scenario& sc) {
  ModelSpec m = model_spec_for(sc.model);
  const ClusterConfig& c = sc.cluster;
  if (c.compute_model != "roofline") return m;
  if (!c.device_flops || !c.device_mem_bw)
    throw InputError("cluster.compute_model = \"roofline\" needs cluster.device_flops and device_mem_bw");
  const double scale = static_cast<double>(elem_bytes(activation_type(sc.train))) / 4;  // the tables' sizes are fp32
  const double flops_per_byte = *c.device_flops * c.compute_efficiency / *c.device_mem_bw;
  double input = 0;
  for (LayerSpec& l : m.layers) {
    const double traffic = scale * (input + l.activation_bytes);
    input = l.activation_bytes;
    l.forward_flops = std::max(l.forward_flops, traffic * flops_per_byte);
    l.backward_flops = std::max(l.backward_flops, 2 * traffic * flops_per_byte);
  }
  return m;
}

double recomputed_share(const Scenario& sc) {
  if (sc.train.recompute == "none") return 0.0;
  const ModelSpec m = simulated_model(sc);
  return m.block_forward_flops() / (m.forward_flops() + m.backward_flops());
}

namespace {

ComputeSource from_scenario(const Scenario& sc) {
  return {*sc.cluster.compute_s, sc.cluster.optimizer_s.value_or(0.0), "scenario", "scenario [cluster].compute_s", {}};
}

// The calibration the scenario names, if its per-layer times measured this model, batch and backend.
std::shared_ptr<const Calibration> fitting_calibration(const Scenario& sc, const Store& store) {
  if (sc.cluster.calibration.empty()) return nullptr;
  auto cal = load_calibration(store, sc.cluster.calibration);
  return !cal->layers.empty() && calibration_fits_model(*cal, sc) ? cal : nullptr;
}

ComputeSource from_flops(const Scenario& sc) {
  const ClusterConfig& c = sc.cluster;
  // Forward + backward of one micro-batch at a fraction of the device's peak.
  const ModelSpec model = simulated_model(sc);
  const bool roofline = c.compute_model == "roofline";
  ComputeSource src{
      sc.train.batch_size * (model.forward_flops() + model.backward_flops()) / (*c.device_flops * c.compute_efficiency),
      c.optimizer_s.value_or(0.0),
      "flops",
      roofline ? "model FLOPs / (device_flops x efficiency), or activations / device_mem_bw where longer"
               : "model FLOPs / (device_flops x efficiency)",
      {}};
  if (!c.optimizer_s && c.device_mem_bw) {
    // The optimizer streams its state through memory (SGD with momentum: 20 bytes per parameter).
    const OptimizerInfo* opt = find_optimizer(sc.train.optimizer);
    const double bytes = opt ? opt->bytes_per_param : 20.0;
    src.optimizer_s = bytes * static_cast<double>(model.parameter_count()) / *c.device_mem_bw;
    src.origin += fmt::format("; optimizer {:g} B per parameter ({}) / device_mem_bw", bytes, sc.train.optimizer);
  }
  return src;
}

ComputeSource from_run(const Store& store, const RunRow& run) {
  const RunSummary s = store.summary(run.id);
  if (s.steps == 0) throw InputError(fmt::format("measured run #{} has no steps", run.id));
  const int n = run.info.world_size;
  const Scenario sc = measured_scenario(run);
  // A straggler's compute ([cluster].stragglers) was stretched: the means of its rows without the stretch.
  double compute = s.compute_s, optimizer = s.optimizer_s;
  bool stretched = false;
  for (int r = 0; r < n; ++r) stretched = stretched || sc.cluster.compute_factor(r) != 1;
  if (stretched) {
    const RankReport ranks = rank_report(without_stragglers(store.steps(run.id), sc.cluster), s.skipped);
    compute = optimizer = 0;
    for (const RankBreakdown& b : ranks.ranks) compute += b.compute_s, optimizer += b.optimizer_s;
    compute /= static_cast<double>(ranks.ranks.size()), optimizer /= static_cast<double>(ranks.ranks.size());
  }
  ComputeSource src = compute_from_means(sc, n, compute, optimizer);
  src.kind = "run";
  src.run_id = run.id;
  const auto host = nlohmann::json::parse(run.info.host_info, nullptr, false);
  const std::string cores =
      host.is_object() && host.contains("cores") && host.contains("ranks_on_host")
          ? fmt::format(", {} ranks on {} cores", host["ranks_on_host"].get<int>(), host["cores"].get<int>())
          : "";
  src.origin = fmt::format("measured run #{} ({} ranks{}, steady state{})", run.id, n, cores,
                           stretched ? "; each straggler's time divided by its factor" : "");
  return src;
}

[[noreturn]] void refuse_oversubscribed(const RunRow& run, const std::string& why) {
  throw InputError(fmt::format(
      "measured run #{} had {}: its compute waited for cores and would inflate every simulated step. Measure with "
      "--np no larger than the cores (`ddplab run SCENARIO --np N`), or set [cluster].compute_s, or pass --compute "
      "run:{} --allow-oversubscribed to use it anyway",
      run.id, why, run.id));
}

}  // namespace

ComputeSource from_calibration(const Calibration& cal) {
  ComputeSource src{0, cal.optimizer_s, "calibration", fmt::format("calibration \"{}\" per-layer times", cal.name), {}};
  for (const LayerTime& l : cal.layers) src.compute_s += l.forward_s + l.backward_s;
  return src;
}

// The run's own plans say how much of its means is one worker's micro-step and one whole-model update:
// over a steady block, the share of (rank, micro-step) pairs that compute, and each rank's share of the
// model it updates.
ComputeSource compute_from_means(const Scenario& sc, int world, double compute_mean, double optimizer_mean) {
  const StrategyConfig& st = sc.strategies.front();
  const ModelSpec model = model_spec_for(sc.model);
  Strategy strategy(st, model, {world, 1, sc.train.batch_size, sc.train.seed});
  strategy.observe_ready_order(model.expected_ready_order());
  const StepPattern pattern = strategy.pattern();
  double computing = 0, updated = 0;  // sums over ranks and the block's micro-steps
  for (std::int64_t k = 0; k < pattern.period(); ++k) {
    const StepPlan plan = strategy.plan(pattern.steady().first + k);
    for (int r = 0; r < world; ++r) {
      bool computes = false;
      for (const PlanOp& op : plan.ops) {
        if (op.kind == OpKind::Forward) computes = strategy.is_worker(r);
        if (op.kind != OpKind::Optimizer && op.kind != OpKind::ShardOptimizer) continue;
        const Bucket& b = strategy.bucketing().buckets.at(static_cast<std::size_t>(op.index));
        const std::size_t count = op.kind == OpKind::Optimizer ? b.count : strategy.shard(b.id, r).count;
        updated += static_cast<double>(count) / static_cast<double>(strategy.bucketing().total);
      }
      computing += computes ? 1 : 0;
    }
  }
  const double pairs = static_cast<double>(world) * static_cast<double>(pattern.period());
  ComputeSource src;
  src.kind = "given";
  src.origin = "measured means";
  src.compute_s = computing > 0 ? compute_mean * pairs / computing : 0.0;
  src.optimizer_s = updated > 0 ? optimizer_mean * pairs / updated : 0.0;
  return src;
}

std::string oversubscription(const std::string& host_info_json) {
  const auto host = nlohmann::json::parse(host_info_json, nullptr, false);
  if (!host.is_object() || !host.contains("ranks_on_host") || !host.contains("cores")) return "";
  const int ranks = host["ranks_on_host"].get<int>(), cores = host["cores"].get<int>();
  return ranks > cores ? fmt::format("{} ranks on {} cores", ranks, cores) : "";
}

std::vector<StepMetrics> without_stragglers(std::vector<StepMetrics> rows, const ClusterConfig& cluster) {
  for (StepMetrics& m : rows) {
    const double f = cluster.compute_factor(m.rank);
    m.compute_s /= f, m.optimizer_s /= f;
  }
  return rows;
}

Scenario measured_scenario(const RunRow& run) {
  const auto cfg = nlohmann::json::parse(run.info.config_json, nullptr, false);
  if (!cfg.is_object() || !cfg.contains("model") || !cfg.contains("strategy"))
    throw InputError(fmt::format("run #{}: its stored configuration has no model or strategy", run.id));
  try {
    Scenario sc;
    sc.name = run.info.scenario;
    sc.model = ModelConfig::from_json(cfg.at("model"));
    if (!sc.model.trainable())
      throw InputError(fmt::format("model type \"{}\" (the runtime trains \"mlp\" and \"cnn\")", sc.model.type));
    const auto& train = cfg.at("train");
    sc.train.batch_size = train.at("batch_size").get<int>();
    sc.train.seed = train.at("seed").get<std::uint64_t>();
    sc.train.backend = stored_choice<Backend>(train.value("backend", std::string("cpu")), "stored run");
    sc.train.tf32 = train.value("tf32", false);
    const auto& cl = cfg.at("cluster");
    sc.cluster.link_bandwidth = cl.at("link_bandwidth").get<double>();
    sc.cluster.link_latency = cl.at("link_latency").get<double>();
    // Its stragglers, which the runtime slowed (older runs stored none, or ran none).
    sc.cluster.devices_per_node = cl.value("devices_per_node", 1);
    for (const auto& e : cl.value("stragglers", nlohmann::json::array()))
      sc.cluster.stragglers.push_back({e.value("rank", -1), e.value("node", -1), e.at("factor").get<double>()});
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
    if (s.contains("policy_options")) {
      st.policy_options = s.at("policy_options").get<std::map<std::string, std::string>>();
    } else {  // stored before policies described their own options: the fields core had for them
      for (const char* k : {"local_sgd_period", "local_sgd_warmup", "ps_servers"}) {
        const int v = s.value(k, k == std::string("local_sgd_period") ? 1 : 0);
        if (v != (k == std::string("local_sgd_period") ? 1 : 0)) st.policy_options[k] = std::to_string(v);
      }
    }
    sc.strategies = {st};
    return sc;
  } catch (const nlohmann::json::exception& e) {
    throw InputError(fmt::format("run #{}: its stored configuration is incomplete: {}", run.id, e.what()));
  }
}

namespace {

// Whether run `theirs` trained what `sc` simulates: compute grows with the batch, so a run at another batch
// (a sweep over global batches) or of another model says nothing about this one's.
bool same_model_and_batch(const Scenario& theirs, const Scenario& sc) {
  return theirs.model.to_json() == sc.model.to_json() && theirs.train.batch_size == sc.train.batch_size;
}

// The newest completed measured run of the scenario's strategy at its model and batch; an oversubscribed one
// only when allowed, else the last one passed over is said in `passed_over`.
std::optional<RunRow> newest_measured_run(const Scenario& sc, const StrategyConfig& strategy, const Store& store,
                                          bool allow_oversubscribed, std::string& passed_over) {
  std::optional<RunRow> chosen;
  for (const RunRow& run : store.runs()) {  // oldest first: the newest that qualifies stays chosen
    if (run.info.scenario != sc.name || run.info.strategy != strategy.name || run.info.source != RunSource::Measured ||
        run.status != RunStatus::Completed)
      continue;
    if (!same_model_and_batch(measured_scenario(run), sc)) continue;
    if (const std::string over = oversubscription(run.info.host_info); !over.empty() && !allow_oversubscribed) {
      passed_over = fmt::format("run #{} ({}) passed over", run.id, over);
      continue;
    }
    chosen = run;
  }
  return chosen;
}

// --compute auto: what the scenario says wins over the store (it is how a user corrects a measurement), then a
// calibration with the model's per-layer times, then the newest measured run, then the device's FLOP/s.
ComputeSource auto_source(const Scenario& sc, const StrategyConfig& strategy, const Store& store,
                          bool allow_oversubscribed, const std::string& scenario) {
  if (sc.cluster.compute_s) return from_scenario(sc);
  if (auto cal = fitting_calibration(sc, store)) return from_calibration(*cal);
  std::string passed_over;
  if (const auto chosen = newest_measured_run(sc, strategy, store, allow_oversubscribed, passed_over)) {
    ComputeSource src = from_run(store, *chosen);
    if (!passed_over.empty()) src.origin += "; " + passed_over;
    return src;
  }
  if (sc.cluster.device_flops) {
    ComputeSource src = from_flops(sc);
    if (!passed_over.empty()) src.origin += "; measured " + passed_over;
    return src;
  }
  throw InputError(fmt::format(
      "no compute time to simulate {}: the scenario sets no [cluster].compute_s (seconds per step; optionally "
      "[cluster].optimizer_s), no calibration with per-layer times of its model, no [cluster].device_flops (peak "
      "FLOP/s, to derive it from the model's FLOPs), and the store {} has no completed measured run of it{} "
      "(measure one with `ddplab run`, or pass --compute with a time such as 13ms)",
      scenario, store.path(), passed_over.empty() ? "" : " that was not oversubscribed (" + passed_over + ")"));
}

// --compute calibration: the scenario's calibration, which must hold per-layer times of its model.
ComputeSource calibration_source(const Scenario& sc, const Store& store, const std::string& scenario) {
  if (sc.cluster.calibration.empty())
    throw InputError(fmt::format("--compute calibration: {} names no [cluster].calibration", scenario));
  auto cal = load_calibration(store, sc.cluster.calibration);
  if (cal->layers.empty() || !calibration_fits_model(*cal, sc))
    throw InputError(
        fmt::format("--compute calibration: calibration \"{}\" has no per-layer times of this model, batch and backend "
                    "(measure them with `ddplab calibrate --scenario SCENARIO`)",
                    cal->name));
  return from_calibration(*cal);
}

// --compute run:ID: that run, a completed measured one of the same model and batch.
ComputeSource run_source(const Scenario& sc, const Store& store, const std::string& spec, bool allow_oversubscribed,
                         const std::string& scenario) {
  std::int64_t id = 0;
  try {
    std::size_t used = 0;
    id = std::stoll(spec.substr(4), &used);
    if (used != spec.size() - 4 || id <= 0) throw InputError("");
  } catch (const std::exception&) {
    throw InputError(fmt::format("--compute {}: a run is run:ID with a positive integer ID", spec));
  }
  const auto run = store.run(id);
  if (!run) throw InputError(fmt::format("--compute run:{}: the store {} has no run #{}", id, store.path(), id));
  if (run->info.source != RunSource::Measured || run->status != RunStatus::Completed)
    throw InputError(
        fmt::format("--compute run:{}: run #{} is a {} run, {}; a compute source must be a completed "
                    "measured run",
                    id, id, run->info.source, run->status));
  const Scenario theirs = measured_scenario(*run);
  if (!same_model_and_batch(theirs, sc))
    throw InputError(fmt::format("--compute run:{}: run #{} trained model {} at batch {}; {} has model {} at batch {}",
                                 id, id, theirs.model.to_json().dump(), theirs.train.batch_size, scenario,
                                 sc.model.to_json().dump(), sc.train.batch_size));
  if (const std::string over = oversubscription(run->info.host_info); !over.empty() && !allow_oversubscribed)
    refuse_oversubscribed(*run, over);
  return from_run(store, *run);
}

// --compute DURATION: that time per micro-step.
ComputeSource given_duration(const Scenario& sc, const std::string& spec) {
  double seconds = 0;
  try {
    seconds = parse_duration(spec);
  } catch (const std::exception&) {
    throw InputError(fmt::format(
        "--compute {}: expected auto, calibration, run:ID, flops or a time per micro-step such as 13ms", spec));
  }
  if (!(seconds > 0)) throw InputError(fmt::format("--compute {}: the time must be positive", spec));
  return {seconds, sc.cluster.optimizer_s.value_or(0.0), "given", fmt::format("--compute {}", spec), {}};
}

}  // namespace

ComputeSource compute_source(const Scenario& sc, const StrategyConfig& strategy, const Store& store,
                             const std::string& spec, bool allow_oversubscribed) {
  const std::string scenario = fmt::format("scenario \"{}\", strategy \"{}\"", sc.name, strategy.name);
  if (spec == "auto") return auto_source(sc, strategy, store, allow_oversubscribed, scenario);
  if (spec == "calibration") return calibration_source(sc, store, scenario);
  if (spec == "flops") {
    if (!sc.cluster.device_flops)
      throw InputError(fmt::format("--compute flops: {} sets no [cluster].device_flops", scenario));
    return from_flops(sc);
  }
  if (spec.rfind("run:", 0) == 0) return run_source(sc, store, spec, allow_oversubscribed, scenario);
  return given_duration(sc, spec);
}

}  // namespace ddplab
