#include "ddplab/simulator/published.hpp"

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <stdexcept>

#include <fmt/format.h>
#include <toml++/toml.h>

#include "ddplab/core/error.hpp"
#include "ddplab/core/scenario.hpp"
#include "ddplab/core/stats.hpp"
#include "ddplab/core/units.hpp"
#include "ddplab/core/store.hpp"
#include "ddplab/simulator/collective_sim.hpp"
#include "ddplab/simulator/compute_source.hpp"
#include "ddplab/strategies/model_library.hpp"
#include "ddplab/strategies/layout.hpp"
#include "ddplab/strategies/pipeline.hpp"
#include "ddplab/strategies/strategy.hpp"
#include "ddplab/strategies/nccl_model.hpp"
#include "platform.hpp"

namespace ddplab {
namespace {

struct PointReader {
  std::string path;
  [[noreturn]] void fail(const toml::node& n, const std::string& field, const std::string& problem) const {
    throw InputError(InputLocation{path, static_cast<int>(n.source().begin.line), std::nullopt, field},
                     fmt::format("{}: {}", field, problem));
  }
  const toml::node& need(const toml::table& t, const toml::node& at, const std::string& key) const {
    const toml::node* n = t.get(key);
    if (!n) fail(at, key, "is required");
    return *n;
  }
  std::string text(const toml::table& t, const toml::node& at, const std::string& key) const {
    const auto v = need(t, at, key).value<std::string>();
    if (!v || v->empty()) fail(*t.get(key), key, "must be a non-empty string");
    return *v;
  }
  long long integer(const toml::table& t, const toml::node& at, const std::string& key, long long min) const {
    const auto v = need(t, at, key).value<long long>();
    if (!t.get(key)->is_integer() || !v || *v < min)
      fail(*t.get(key), key, fmt::format("must be an integer >= {}", min));
    return *v;
  }
  double number(const toml::node& n, const std::string& field) const {
    const auto v = n.value<double>();
    if (!(n.is_integer() || n.is_floating_point()) || !v || !std::isfinite(*v) || *v <= 0)
      fail(n, field, "must be a number greater than 0");
    return *v;
  }
};

// A layout point's fields, checked against each other as the scenario would be.
void read_layout(const PointReader& r, const toml::table& t, const toml::node& node, const std::string& path,
                 PublishedPoint& p) {
  namespace fs = std::filesystem;
  p.model = r.text(t, node, "model");
  const bool builtin =
      std::find(kBuiltinModelTables.begin(), kBuiltinModelTables.end(), p.model) != kBuiltinModelTables.end();
  if (!builtin && fs::path(p.model).is_relative())
    p.model = fs::absolute(fs::path(path).parent_path() / p.model).lexically_normal().string();
  p.batch = static_cast<int>(r.integer(t, node, "batch", 1));
  p.tp = static_cast<int>(r.integer(t, node, "tp", 1));
  p.pp = static_cast<int>(r.integer(t, node, "pp", 1));
  p.microbatch = static_cast<int>(r.integer(t, node, "microbatch", 1));
  p.schedule = r.text(t, node, "schedule");
  p.precision = r.text(t, node, "precision");
  p.recompute = r.text(t, node, "recompute");
  p.compute_efficiency = r.number(r.need(t, node, "compute_efficiency"), "compute_efficiency");
  p.compute_model = r.text(t, node, "compute_model");
  // Checked here, at the field, rather than in the scenario the point becomes.
  auto one_of = [&](const char* key, const std::string& value, std::initializer_list<const char*> known) {
    for (const char* k : known)
      if (value == k) return;
    std::string names;
    for (const char* k : known) names += fmt::format("{}\"{}\"", names.empty() ? "" : ", ", k);
    r.fail(*t.get(key), key, fmt::format("must be one of {}, got \"{}\"", names, value));
  };
  one_of("precision", p.precision, {"fp32", "bf16", "fp16"});
  one_of("recompute", p.recompute, {"none", "full"});
  one_of("compute_model", p.compute_model, {"flops", "roofline"});
  if (!find_pipeline_schedule(p.schedule))
    r.fail(*t.get("schedule"), "schedule", fmt::format("unknown pipeline schedule \"{}\"", p.schedule));
  if (t.get("policy")) {
    p.policy = r.text(t, node, "policy");
    if (!find_policy(p.policy)) r.fail(*t.get("policy"), "policy", fmt::format("unknown sync policy \"{}\"", p.policy));
  }
  p.published = r.number(r.need(t, node, "published"), "published");
  if (p.world % (p.tp * p.pp) != 0)
    r.fail(*t.get("world"), "world", fmt::format("{} is not a multiple of tp x pp = {}", p.world, p.tp * p.pp));
  const int dp = p.world / (p.tp * p.pp);
  if (p.batch % (dp * p.microbatch) != 0)
    r.fail(*t.get("batch"), "batch",
           fmt::format("{} is not a multiple of dp x microbatch = {} x {}", p.batch, dp, p.microbatch));
  if (p.compute_efficiency > 1) r.fail(*t.get("compute_efficiency"), "compute_efficiency", "must be at most 1");
}

// The scenario a layout point describes: Adam, its policy (DDP's overlap by default) with NCCL's collectives on
// the DP part; nvls the preset's, unless the point turns it off.
Scenario layout_scenario(const PublishedPoint& p, bool nvls) {
  const int dp = p.world / (p.tp * p.pp), per_replica = p.batch / dp;
  const std::string pipeline =
      p.pp > 1 ? fmt::format("microbatches = {}\npipeline_schedule = \"{}\"\n", per_replica / p.microbatch, p.schedule)
               : "";
  const std::string text = fmt::format(
      "[model]\ntype = \"table\"\ntable = \"{}\"\n[train]\nbackend = \"cuda\"\noptimizer = \"adam\"\nbatch_size = {}\n"
      "precision = \"{}\"\nrecompute = \"{}\"\n[parallel]\ntp = {}\npp = {}\n{}[cluster]\npreset = \"{}\"\n"
      "compute_efficiency = {}\ncompute_model = \"{}\"\nnvls = {}\n[[strategy]]\nname = \"{}\"\npolicy = \"{}\"\n",
      p.model, per_replica, p.precision, p.recompute, p.tp, p.pp, pipeline, p.preset, p.compute_efficiency,
      p.compute_model, nvls ? "true" : "false", p.policy, p.policy);
  return parse_scenario(text, p.where);
}

PublishedResult compare_layout(const PublishedPoint& p, const SimOptions& given, bool nvls) {
  const Scenario sc = layout_scenario(p, nvls);
  const SimOptions options = ranking_options(given, p.world);  // the rows are replayed as --search would
  const Store none(":memory:");
  const ComputeSource src = compute_source(sc, sc.strategies.front(), none, "flops");
  const SimPatternResult r = simulate_pattern(sc, sc.strategies.front(), p.world, src.compute_s, src.optimizer_s,
                                              options, sc.cluster.devices_per_node);
  const ModelSpec m = model_spec_for(sc.model);
  const double ran = m.forward_flops() + m.backward_flops() + (p.recompute == "none" ? 0.0 : m.block_forward_flops());
  PublishedResult res{p, r.samples_per_s * ran / p.world / 1e12, 0, ""};
  res.detail =
      fmt::format("step {} ({} replay)", format_duration(r.step_s), simulation_mode(options, p.world, p.tp * p.pp > 1));
  return res;
}

// A point's fields that every kind has: its names, the preset it runs on and its world; unknown fields refused.
PublishedPoint read_point_head(const PointReader& r, const toml::table& t, const toml::node& node) {
  for (const auto& [key, value] : t) {
    static const std::vector<std::string> known{"id",
                                                "case",
                                                "preset",
                                                "kind",
                                                "world",
                                                "sweep",
                                                "nvls",
                                                "model",
                                                "batch",
                                                "compute",
                                                "published",
                                                "tp",
                                                "pp",
                                                "microbatch",
                                                "schedule",
                                                "precision",
                                                "recompute",
                                                "compute_efficiency",
                                                "compute_model",
                                                "policy"};
    if (std::find(known.begin(), known.end(), std::string(key.str())) == known.end())
      r.fail(value, std::string(key.str()), "is not a point field");
  }
  PublishedPoint p;
  p.id = r.text(t, node, "id");
  p.case_name = r.text(t, node, "case");
  p.preset = r.text(t, node, "preset");
  try {
    ClusterConfig check;
    apply_cluster_preset(check, p.preset);
  } catch (const InputError& e) {
    r.fail(*t.get("preset"), "preset", e.what());
  }
  p.kind = r.text(t, node, "kind");
  p.world = static_cast<int>(r.integer(t, node, "world", 1));
  p.where = fmt::format("{}:{}", r.path, node.source().begin.line);
  if (const toml::node* n = t.get("nvls")) {
    if (!n->is_boolean()) r.fail(*n, "nvls", "must be true or false");
    p.nvls = n->value<bool>().value_or(true);
  }
  return p;
}

// An efficiency point: a model at a batch, its compute time per step and the published efficiency.
void read_efficiency(const PointReader& r, const toml::table& t, const toml::node& node, PublishedPoint& p) {
  p.model = r.text(t, node, "model");
  p.batch = static_cast<int>(r.integer(t, node, "batch", 1));
  try {
    p.compute_s = parse_duration(r.text(t, node, "compute"));
  } catch (const InputError& e) {
    r.fail(*t.get("compute"), "compute", e.what());
  }
  p.published = r.number(r.need(t, node, "published"), "published");
}

// A layout point, and the scenario it becomes checked as `ddplab simulate` would (a policy that refuses the
// layout).
void read_layout_point(const PointReader& r, const toml::table& t, const toml::node& node, PublishedPoint& p) {
  read_layout(r, t, node, r.path, p);
  try {
    const Scenario sc = layout_scenario(p, p.nvls);
    validate_strategies(sc);
    validate_parallel(sc);
  } catch (const ScenarioError& e) {
    // Its position is in the scenario text the point became: the point's field says where instead.
    const char* field = t.get("policy") ? "policy" : "tp";
    r.fail(*t.get(field), field, e.detail());
  }
}

// A busbw or time point: one point per [bytes, value] of its sweep.
void read_sweep(const PointReader& r, const toml::table& t, const toml::node& node, const PublishedPoint& p,
                std::vector<PublishedPoint>& out) {
  if (p.kind != "busbw" && p.kind != "time")
    r.fail(*t.get("kind"), "kind", "must be busbw, time, efficiency or layout");
  const toml::array* sweep = r.need(t, node, "sweep").as_array();
  if (!sweep || sweep->empty()) r.fail(*t.get("sweep"), "sweep", "must be a non-empty array of [bytes, value]");
  for (const toml::node& pair : *sweep) {
    const toml::array* a = pair.as_array();
    const auto bytes = a && a->size() == 2 ? a->get(0)->value<long long>() : std::nullopt;
    if (!bytes || *bytes < 4) r.fail(pair, "sweep", "each entry must be [bytes >= 4, value]");
    PublishedPoint q = p;
    q.bytes = static_cast<std::uint64_t>(*bytes);
    q.published = r.number(*a->get(1), "sweep");
    out.push_back(q);
  }
}

}  // namespace

std::vector<PublishedPoint> load_published_points(const std::string& path) {
  toml::table doc;
  try {
    doc = toml::parse_file(path);
  } catch (const toml::parse_error& e) {
    throw InputError(fmt::format("{}:{}: {}", path, e.source().begin.line, e.description()));
  }
  const PointReader r{path};
  const toml::array* points = doc["point"].as_array();
  if (!points || points->empty()) throw InputError(path + ": no [[point]] entries");
  std::vector<PublishedPoint> out;
  for (const toml::node& node : *points) {
    const toml::table* t = node.as_table();
    if (!t) r.fail(node, "point", "must be a table");
    PublishedPoint p = read_point_head(r, *t, node);
    if (p.kind == "efficiency") {
      read_efficiency(r, *t, node, p);
      out.push_back(p);
    } else if (p.kind == "layout") {
      read_layout_point(r, *t, node, p);
      out.push_back(p);
    } else {
      read_sweep(r, *t, node, p, out);
    }
  }
  return out;
}

std::vector<PublishedResult> compare_published(const std::vector<PublishedPoint>& points, const SimOptions& options,
                                               const std::function<void(const PublishedResult&)>& on_result) {
  std::vector<PublishedResult> out;
  for (const PublishedPoint& p : points) {
    PublishedResult res{p, 0, 0, ""};
    ClusterConfig cluster;
    apply_cluster_preset(cluster, p.preset);
    cluster.nvls = cluster.nvls && p.nvls;
    if (p.kind == "layout") {
      res = compare_layout(p, options, cluster.nvls);
    } else if (p.kind == "efficiency") {
      // PyTorch DDP on the preset: overlap, 25 MiB buckets, NCCL's allreduce; one GPU's step is all compute.
      const std::string text = fmt::format(
          "[model]\ntype = \"table\"\ntable = \"{}\"\n[train]\nbackend = \"cuda\"\nbatch_size = {}\n"
          "[cluster]\npreset = \"{}\"\nnvls = {}\n[[strategy]]\nname = \"ddp\"\npolicy = \"overlap\"\n",
          p.model, p.batch, p.preset, cluster.nvls ? "true" : "false");
      const Scenario sc = parse_scenario(text, p.where);
      const SimPatternResult r =
          simulate_pattern(sc, sc.strategies.front(), p.world, p.compute_s, 0.0, options, sc.cluster.devices_per_node);
      res.predicted = r.samples_per_s / (p.world * p.batch / p.compute_s);
      res.detail = fmt::format("step {} ({} on one GPU)", format_duration(r.step_s), format_duration(p.compute_s));
    } else {
      CollectiveSimRequest req;
      req.cluster = cluster;
      req.world_size = p.world;
      req.schedules = {"native"};
      req.sizes = {p.bytes};
      req.transport = Transport::Nccl;
      req.options = options;
      const CollectiveBenchRow row = simulate_collective_bench(req).front();
      res.predicted = p.kind == "busbw" ? row.busbw_gbs : row.time_us;
      const NcclChoice c = nccl_choose(sim::nccl_fabric(cluster), Collective::Allreduce, p.world, p.bytes / 4 * 4);
      res.detail = fmt::format("nccl:{}/{}", c.algorithm, c.protocol);
    }
    res.error_pct = error_pct(p.published, res.predicted);
    out.push_back(res);
    if (on_result) on_result(out.back());
  }
  return out;
}

}  // namespace ddplab
