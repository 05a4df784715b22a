#include "ddplab/runtime/run_preflight.hpp"

#include <fmt/format.h>

#include "ddplab/core/choice.hpp"
#include "ddplab/core/error.hpp"
#include "ddplab/runtime/model_parallel.hpp"
#include "ddplab/strategies/layout.hpp"
#include "ddplab/strategies/model_library.hpp"
#include "ddplab/strategies/stages.hpp"
#include "ddplab/strategies/strategy.hpp"

namespace ddplab {
namespace {

// The setting's own position when the scenario file recorded one, else the scenario file.
InputLocation setting_at(const Scenario& sc, const std::map<std::string, std::string>& where, const std::string& key,
                         const std::string& field) {
  const auto at = where.find(key);
  return InputLocation::at(at != where.end() ? at->second : sc.path, field);
}

// The executor refuses it too (Ops::can_release), but only once mpirun started and earlier strategies ran.
void require_releasable(const Scenario& sc, const StrategyConfig& st, std::size_t index) {
  const PolicyInfo& policy = *find_policy(st.policy);
  if (policy.zero < 2 || sc.train.backend == Backend::Cpu) return;
  throw ScenarioError(setting_at(sc, st.where, "policy", fmt::format("strategy[{}].policy", index)),
                      fmt::format("strategy \"{}\": policy \"{}\" gives back {}, which backend \"{}\" cannot do "
                                  "(its buffers are whole allocations); the cpu backend runs it, and ddplab "
                                  "simulate models it on any cluster",
                                  st.name, st.policy, released_memory(policy), sc.train.backend));
}

// A split model's strategies are made per stage, over its DP group.
void require_strategies(const Scenario& sc, int np) {
  const ScenarioStages stages = scenario_stages(sc, np, 1);
  for (std::size_t i = 0; i < sc.strategies.size(); ++i) {
    const StrategyConfig& st = sc.strategies[i];
    require_releasable(sc, st, i);
    try {
      if (stages.split())
        for (const StageSpec& stage : stages.stages) Strategy(st, stage.model, stage.context);
      else
        Strategy(st, model_spec_for(sc.model), strategy_context(sc, np, 1));
    } catch (const InputError& e) {
      throw e.prefixed(
          fmt::format("{}: strategy \"{}\" cannot run on {} rank{}: ", sc.path, st.name, np, np == 1 ? "" : "s"));
    }
  }
}

}  // namespace

void require_trainable_model(const Scenario& sc) {
  if (!sc.model.trainable())
    throw InputError(setting_at(sc, sc.model.where, "type", "model.type"),
                     "ddplab run trains model.type \"mlp\", \"cnn\" and \"gpt\"; a \"" + to_string(sc.model.type) +
                         "\" model (" + sc.model.table + ") can only be simulated: ddplab simulate " + sc.path);
  // Only the host backends have TransformerKernels (Ops::transformer).
  if (sc.model.type == ModelType::Gpt && sc.train.backend != Backend::Cpu)
    throw InputError(setting_at(sc, sc.train.where, "backend", "train.backend"),
                     fmt::format("model.type = \"gpt\": the {} backend has no transformer kernels yet; train it with "
                                 "train.backend = \"cpu\"",
                                 sc.train.backend));
}

void preflight_run(const Scenario& sc, int np, const FaultInjection& fault) {
  if (np < 1) throw InputError("--np must be at least 1, got " + std::to_string(np), "--np");
  if (fault.kind != FaultKind::None && fault.rank >= np)
    throw InputError(fmt::format("--inject-fault {}: rank {} is not one of the job's {} ranks",
                                 fault_injection_text(fault), fault.rank, np),
                     "--inject-fault");
  scenario_layout(sc, np, fmt::format("{} ranks", np));
  require_runnable_layout(sc);
  require_strategies(sc, np);
  for (int r = 0; r < np; ++r)
    if (const double f = sc.cluster.compute_factor(r); !(f >= 1))
      throw InputError(InputLocation{.file = sc.path, .field = "cluster.stragglers"},
                       fmt::format("cluster.stragglers make rank {} faster (factor {}): a real run can only "
                                   "slow a rank down (factor >= 1); ddplab simulate accepts it",
                                   r, f));
}

}  // namespace ddplab
