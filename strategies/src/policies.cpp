// The policy registry and the validation of [[strategy]] entries against every registry.
#include <algorithm>

#include <fmt/format.h>

#include "ddplab/core/error.hpp"
#include "ddplab/strategies/layout.hpp"
#include "ddplab/strategies/schedule.hpp"
#include "ddplab/strategies/optimizer.hpp"
#include "ddplab/strategies/strategy.hpp"
#include "policies/policies.hpp"

namespace ddplab {

const std::vector<PolicyInfo>& policies() {
  static const std::vector<PolicyInfo> all = {
      {.name = "flat",
       .summary = "one allreduce of every gradient after backward",
       .bucketed = false,
       .shards = Shards::None,
       .build = build_after_backward},
      {.name = "bucketed",
       .summary = "one collective per bucket, after backward",
       .bucketed = true,
       .shards = Shards::None,
       .build = build_after_backward},
      {.name = "overlap",
       .summary = "a bucket's collective starts when its last gradient is ready (DDP)",
       .bucketed = true,
       .shards = Shards::None,
       .build = build_overlap},
      {.name = "local_sgd",
       .summary = "local steps, parameters averaged every local_sgd_period steps",
       .bucketed = true,
       .shards = Shards::None,
       .build = build_local_sgd,
       .timing = local_sgd_timing,
       .finish = finish_local_sgd,
       .options = local_sgd_options(),
       .joins = false},
      {.name = "zero1",
       .summary = "ZeRO-1: reduce-scatter, sharded optimizer, all-gather of parameters",
       .bucketed = true,
       .shards = Shards::Ranks,
       .build = build_zero1,
       .zero = 1},
      {.name = "zero2",
       .summary = "ZeRO-2: as ZeRO-1, and each rank keeps only its shard of the gradients",
       .bucketed = true,
       .shards = Shards::Ranks,
       .build = build_zero1,  // ZeRO-1's plan: the stage changes memory only
       .zero = 2},
      {.name = "zero3",
       .summary = "ZeRO-3 (FSDP): parameters sharded too, each bucket all-gathered before its forward and backward",
       .bucketed = true,
       .shards = Shards::Ranks,
       .build = build_zero3,
       .options = zero3_options(),
       .zero = 3,
       .accumulate = accumulate_zero3,
       .caveat =
           "its gathers run at what the schedule reaches on the modelled network, overlapped as FSDP's prefetch would; "
           "against DeepSpeed's ZeRO-3 (Narayanan et al. 2021, Table 2) that is within 6% at 384 A100s and 73-235% "
           "fast "
           "at 768-1536, an upper bound there (docs/published-comparisons.md)"},
      {.name = "ps",
       .summary = "parameter server: push gradient shards to servers, pull updated parameters (ps_servers)",
       .bucketed = true,
       .shards = Shards::Servers,
       .build = build_parameter_server,
       .options = parameter_server_options(),
       .joins = false},
  };
  return all;
}

const PolicyInfo* find_policy(const std::string& name) {
  for (const auto& p : policies())
    if (p.name == name) return &p;
  return nullptr;
}

std::vector<StrategyConfig> zero_stage_variants(const StrategyConfig& config) {
  std::vector<StrategyConfig> out{config};
  const PolicyInfo* own = find_policy(config.policy);
  if (!own || own->shards == Shards::Servers || own->timing) return out;
  std::vector<const PolicyInfo*> stages;
  for (const PolicyInfo& p : policies())
    if (p.zero > 0 && p.zero != own->zero) stages.push_back(&p);
  std::stable_sort(stages.begin(), stages.end(),
                   [](const PolicyInfo* a, const PolicyInfo* b) { return a->zero < b->zero; });
  for (const PolicyInfo* p : stages) {
    StrategyConfig v = config;
    v.policy = p->name;
    v.policy_options.clear();  // the old policy's own options; ZeRO policies take none
    out.push_back(std::move(v));
  }
  return out;
}

namespace {

// What is wrong with one policy option of a strategy ("" when nothing).
std::string option_problem(const PolicyInfo& p, const std::string& name, const std::string& text) {
  const OptionSpec* o = find_option(p.options, name);
  if (!o) {
    std::string fields;
    for (std::string_view f : kStrategyFields) fields += (fields.empty() ? "" : ", ") + std::string(f);
    const std::string known = option_names(p.options);
    return fmt::format("is neither a [[strategy]] field ({}) nor an option of policy \"{}\" ({})", fields, p.name,
                       known.empty() ? "none" : known);
  }
  if (option_accepts(*o, text)) return "";
  return fmt::format("must be {} ({}), got {}", o->requirement(), o->help, text);
}

}  // namespace

long long policy_option(const StrategyConfig& config, const std::string& name) {
  const PolicyInfo* p = find_policy(config.policy);
  if (!p) throw InputError("unknown policy \"" + config.policy + "\"");
  return option_integer(p->options, config.policy_options, name);
}

void check_policy_options(const StrategyConfig& config) {
  const PolicyInfo* p = find_policy(config.policy);
  if (!p) throw InputError("unknown policy \"" + config.policy + "\"");
  for (const auto& [name, text] : config.policy_options) {
    const std::string problem = option_problem(*p, name, text);
    if (!problem.empty()) throw InputError(fmt::format("{} {}", name, problem), name);
  }
}

std::string released_memory(const PolicyInfo& policy) {
  if (policy.zero < 2) return "";
  return std::string("the gradients outside a rank's shard once they are reduce-scattered") +
         (policy.zero >= 3 ? " and the parameters outside it between their uses" : "");
}

std::string describe_servers(const StrategyConfig& config) {
  const long long n = policy_option(config, "ps_servers");
  return n > 0 ? fmt::format("{} dedicated server{}", n, n > 1 ? "s" : "") : "co-located servers";
}

bool uses_parameter_servers(const StrategyConfig& config) {
  const PolicyInfo* p = find_policy(config.policy);
  return p && p->shards == Shards::Servers;
}

namespace {

std::string names(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "\"" : ", \"") + s + "\"";
  return out;
}

struct Checker {
  const Scenario& sc;
  const StrategyConfig& s;
  std::size_t i;
  [[noreturn]] void fail(const std::string& field, const std::string& problem) const {
    const auto it = s.where.find(field);
    const std::string name = fmt::format("strategy[{}].{}", i, field);
    throw ScenarioError(InputLocation::at(it != s.where.end() ? it->second : sc.path, name),
                        fmt::format("{} {}", name, problem));
  }
};

}  // namespace

void validate_strategies(const Scenario& sc) {
  for (std::size_t i = 0; i < sc.strategies.size(); ++i) {
    const StrategyConfig& s = sc.strategies[i];
    const Checker check{sc, s, i};
    const PolicyInfo* policy = find_policy(s.policy);
    std::vector<std::string> known;
    for (const auto& p : policies()) known.push_back(p.name);
    if (!policy) check.fail("policy", fmt::format("must be one of {}, got \"{}\"", names(known), s.policy));
    if (!has_schedule(s.schedule, Collective::Allreduce))
      check.fail("schedule",
                 fmt::format("must be one of {}, got \"{}\"", names(allreduce_schedule_names()), s.schedule));
    for (const auto& [name, text] : s.policy_options) {
      const std::string problem = option_problem(*policy, name, text);
      if (!problem.empty()) check.fail(name, problem);
    }
    if (sc.data.uneven == "join" && !policy->joins)
      check.fail("policy",
                 fmt::format("cannot run data.uneven = \"join\" (a rank out of data would shadow {}); use \"pad\" "
                             "or \"drop_last\", got \"{}\"",
                             policy->shards == Shards::Servers ? "the servers' pushes and pulls"
                                                               : "parameter averages of models it did not train",
                             s.policy));
    if (policy->shards == Shards::Servers && !is_backend_native(s.schedule))
      check.fail("schedule",
                 fmt::format("must be left unset with policy \"ps\" (it pushes to and pulls from the servers "
                             "directly), got \"{}\"",
                             s.schedule));
    if (policy->shards == Shards::Servers && s.codec != "none")
      check.fail(
          "codec",
          fmt::format("must be \"none\" with policy \"ps\" (its shards travel uncompressed), got \"{}\"", s.codec));
    if (policy->shards == Shards::Ranks) {
      for (const Collective c : {Collective::ReduceScatter, Collective::AllGather})
        if (!has_schedule(s.schedule, c))
          check.fail("schedule",
                     fmt::format("has no {} variant, which policy \"{}\" needs, got \"{}\"", c, s.policy, s.schedule));
      if (s.codec != "none")
        check.fail("codec",
                   fmt::format("must be \"none\" with policy \"{}\" (its shards travel uncompressed), got \"{}\"",
                               s.policy, s.codec));
    }
    // A checkpoint holds no half-accumulated gradients: it is taken where an accumulation window ends.
    if (sc.train.checkpoint_every > 0 && sc.train.checkpoint_every % s.accumulate_steps != 0) {
      const auto at = sc.train.where.find("checkpoint_every");
      throw ScenarioError(
          InputLocation::at(at != sc.train.where.end() ? at->second : sc.path, "train.checkpoint_every"),
          fmt::format("train.checkpoint_every must be a multiple of strategy[{}].accumulate_steps ({}), "
                      "got {}: a checkpoint is taken where an accumulation window ends",
                      i, s.accumulate_steps, sc.train.checkpoint_every));
    }
    std::vector<std::string> codec_names;
    for (const auto& c : codecs()) codec_names.push_back(c.name);
    if (std::find(codec_names.begin(), codec_names.end(), s.codec) == codec_names.end())
      check.fail("codec", fmt::format("must be one of {}, got \"{}\"", names(codec_names), s.codec));
    try {
      make_codec(s.codec, s.codec_options, sc.train.seed);
    } catch (const InputError& e) {
      // Point at the option at fault when the codec names one that was set, else at the whole table.
      const bool set = !e.field().empty() && s.codec_options.count(e.field()) > 0;
      check.fail(set ? "codec_options." + e.field() : "codec_options", e.what());
    }
  }
}

Scenario load_validated_scenario(const std::string& path) {
  Scenario sc = load_scenario(path);
  validate_strategies(sc);
  validate_train(sc);
  validate_parallel(sc);
  return sc;
}

}  // namespace ddplab
