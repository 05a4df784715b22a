// See layout.hpp.
#include "ddplab/strategies/layout.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "ddplab/core/error.hpp"
#include "ddplab/strategies/pipeline.hpp"
#include "ddplab/strategies/strategy.hpp"

namespace ddplab {

std::vector<std::string> pipeline_schedule_names() {
  std::vector<std::string> names;
  for (const PipelineInfo& p : pipeline_schedules()) names.push_back(p.name);
  return names;
}

ParallelLayout::ParallelLayout(const ParallelConfig& p, int world)
    : tp_(p.tp), pp_(p.pp), dp_inside_(p.placement == "tp-dp-pp") {
  if (p.placement != "tp-dp-pp" && p.placement != "tp-pp-dp")
    throw InputError(fmt::format("placement must be \"tp-dp-pp\" or \"tp-pp-dp\", got \"{}\"", p.placement));
  if (tp_ < 1 || pp_ < 1 || world < 1 || world % (tp_ * pp_) != 0)
    throw InputError(
        fmt::format("tp x pp = {} x {} = {} does not divide the world of {} ranks", tp_, pp_, tp_ * pp_, world));
  dp_ = world / (tp_ * pp_);
  if (p.dp && *p.dp != dp_)
    throw InputError(fmt::format("tp x pp x dp = {} x {} x {} = {} is not the world of {} ranks", tp_, pp_, *p.dp,
                                 tp_ * pp_ * *p.dp, world));
}

RankCoord ParallelLayout::coord(int rank) const {
  if (rank < 0 || rank >= world())
    throw std::out_of_range(fmt::format("rank {} outside a layout of {} ranks", rank, world()));
  RankCoord c;
  c.tp = rank % tp_;
  const int rest = rank / tp_;
  if (dp_inside_) {
    c.dp = rest % dp_;
    c.pp = rest / dp_;
  } else {
    c.pp = rest % pp_;
    c.dp = rest / pp_;
  }
  return c;
}

int ParallelLayout::rank(const RankCoord& c) const {
  if (c.tp < 0 || c.tp >= tp_ || c.pp < 0 || c.pp >= pp_ || c.dp < 0 || c.dp >= dp_)
    throw std::out_of_range(fmt::format("coordinates (tp {}, pp {}, dp {}) outside {}", c.tp, c.pp, c.dp, describe()));
  return c.tp + tp_ * (dp_inside_ ? c.dp + dp_ * c.pp : c.pp + pp_ * c.dp);
}

std::vector<int> ParallelLayout::tp_group(int r) const {
  RankCoord c = coord(r);
  std::vector<int> out;
  for (c.tp = 0; c.tp < tp_; ++c.tp) out.push_back(rank(c));
  return out;
}

std::vector<int> ParallelLayout::pp_group(int r) const {
  RankCoord c = coord(r);
  std::vector<int> out;
  for (c.pp = 0; c.pp < pp_; ++c.pp) out.push_back(rank(c));
  return out;
}

std::vector<int> ParallelLayout::dp_group(int r) const {
  RankCoord c = coord(r);
  std::vector<int> out;
  for (c.dp = 0; c.dp < dp_; ++c.dp) out.push_back(rank(c));
  return out;
}

std::string ParallelLayout::describe() const {
  return fmt::format("TP {} x PP {} x DP {} (placement {})", tp_, pp_, dp_, dp_inside_ ? "tp-dp-pp" : "tp-pp-dp");
}

namespace {

// "path:line:col" of a [parallel] field, else of `fallback` (the field that asks for it), else of the
// first field given, else the scenario's path.
std::string at(const Scenario& sc, const std::string& key, const std::string& fallback = "") {
  const auto& where = sc.parallel.where;
  if (auto it = where.find(key); it != where.end()) return it->second;
  if (auto it = where.find(fallback); it != where.end()) return it->second;
  if (!where.empty()) return where.begin()->second;
  return sc.path;
}

[[noreturn]] void fail(const Scenario& sc, const std::string& key, const std::string& message,
                       const std::string& fallback = "") {
  throw ScenarioError(InputLocation::at(at(sc, key, fallback), "parallel." + key),
                      fmt::format("parallel.{} {}", key, message));
}

}  // namespace

std::string parallel_position(const Scenario& sc, const std::string& key) { return at(sc, key); }

void validate_parallel(const Scenario& sc) {
  const ParallelConfig& p = sc.parallel;
  const PipelineInfo* schedule = find_pipeline_schedule(p.pipeline_schedule);
  if (!schedule) {
    std::string list;
    for (const auto& n : pipeline_schedule_names()) list += (list.empty() ? "\"" : ", \"") + n + "\"";
    fail(sc, "pipeline_schedule", fmt::format("must be one of {}, got \"{}\"", list, p.pipeline_schedule));
  }
  if (sc.train.batch_size % p.microbatches != 0)
    fail(sc, "microbatches",
         fmt::format("must divide train.batch_size ({} samples per rank and step), got {}", sc.train.batch_size,
                     p.microbatches));
  if (schedule->interleaved) {
    if (p.virtual_stages < 2)
      fail(sc, "virtual_stages",
           fmt::format("must be 2 or more with pipeline_schedule = \"{}\" (model chunks "
                       "per rank), got {}",
                       p.pipeline_schedule, p.virtual_stages),
           "pipeline_schedule");
    if (p.pp < 2)
      fail(sc, "pp",
           fmt::format("must be 2 or more with pipeline_schedule = \"{}\", got {}", p.pipeline_schedule, p.pp));
    if (p.microbatches % p.pp != 0)
      fail(sc, "microbatches",
           fmt::format("must be a multiple of parallel.pp ({}) with pipeline_schedule = "
                       "\"{}\" (Megatron-LM's condition), got {}",
                       p.pp, p.pipeline_schedule, p.microbatches));
  } else if (p.virtual_stages != 1) {
    fail(sc, "virtual_stages",
         fmt::format("applies to an interleaved pipeline_schedule only (pipeline_schedule is "
                     "\"{}\"), got {}",
                     p.pipeline_schedule, p.virtual_stages));
  }
  if (p.model_parallel())
    for (std::size_t i = 0; i < sc.strategies.size(); ++i)
      if (uses_parameter_servers(sc.strategies[i]))
        fail(sc, p.tp > 1 ? "tp" : "pp",
             fmt::format("splits the model, which strategy[{}] (\"{}\") cannot serve: its parameter servers keep whole "
                         "models' shards",
                         i, sc.strategies[i].name));
  if (p.model_parallel())
    for (std::size_t i = 0; i < sc.strategies.size(); ++i)
      if (const PolicyInfo* policy = find_policy(sc.strategies[i].policy); policy && policy->zero >= 3)
        fail(sc, p.tp > 1 ? "tp" : "pp",
             fmt::format("splits the model, which strategy[{}] (\"{}\", policy \"{}\") cannot shard: ZeRO-3 gathers "
                         "parameter units around whole-batch passes (use zero1 or zero2 with a layout)",
                         i, sc.strategies[i].name, policy->name));
}

ParallelLayout scenario_layout(const Scenario& sc, int world, const std::string& what) {
  try {
    return ParallelLayout(sc.parallel, world);
  } catch (const InputError& e) {
    const std::string key = sc.parallel.dp ? "dp" : "tp";
    throw ScenarioError(InputLocation::at(at(sc, key), "parallel." + key),
                        fmt::format("[parallel] does not fit {}: {}", what, e.what()));
  }
}

}  // namespace ddplab
