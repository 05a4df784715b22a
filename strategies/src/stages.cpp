// See stages.hpp.
#include "ddplab/strategies/stages.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "ddplab/core/error.hpp"
#include "ddplab/strategies/model_library.hpp"
#include "ddplab/strategies/pipeline.hpp"
#include "ddplab/strategies/tensor_parallel.hpp"

namespace ddplab {

int group_ranks_per_node(const std::vector<int>& group, int ranks_per_node) {
  if (group.empty() || ranks_per_node < 1) return 1;
  int n = 0;
  for (int r : group) n += r / ranks_per_node == group.front() / ranks_per_node;
  return n;
}

std::vector<StageSpec> stage_specs(const Scenario& scenario, const ModelSpec& model, const ParallelLayout& layout,
                                   int ranks_per_node) {
  const int P = layout.pp(), T = layout.tp();
  if (P == 1 && T == 1) return {{model, strategy_context(scenario, layout.world(), ranks_per_node)}};
  // Where the split is asked, when the model does not split that way.
  auto refused = [&](const char* key, int value, const InputError& e) {
    return ScenarioError(InputLocation::at(parallel_position(scenario, key), std::string("parallel.") + key),
                         fmt::format("parallel.{} = {}: {}", key, value, e.what()));
  };
  ModelSpec share;
  try {
    share = tensor_parallel_shard(model, T);
  } catch (const InputError& e) {
    throw refused("tp", T, e);
  }
  const ParallelConfig& par = scenario.parallel;
  // Without pipeline stages the pass is a one-stage pipeline: the microbatches run one after the other.
  const PipelineInfo* schedule = find_pipeline_schedule(P == 1 ? "gpipe" : par.pipeline_schedule);
  if (!schedule) throw InputError("unknown pipeline schedule \"" + par.pipeline_schedule + "\"");
  const PipelineShape shape{P, par.microbatches, P == 1 ? 1 : par.virtual_stages};
  std::vector<StageSpec> out;
  for (int s = 0; s < P; ++s) {
    StageModel stage = [&] {
      try {
        return pipeline_stage(share, *schedule, shape, s);
      } catch (const InputError& e) {
        throw refused("pp", P, e);
      }
    }();
    const int first = layout.rank({0, s, 0});
    StrategyContext ctx =
        strategy_context(scenario, layout.dp(), group_ranks_per_node(layout.dp_group(first), ranks_per_node));
    ctx.pipeline = std::move(stage.stage);
    ctx.tp = T;
    ctx.tp_ranks_per_node = group_ranks_per_node(layout.tp_group(first), ranks_per_node);
    out.push_back({std::move(stage.model), std::move(ctx)});
  }
  return out;
}

ScenarioStages scenario_stages(const Scenario& scenario, int world, int ranks_per_node) {
  return scenario_stages(scenario, world, ranks_per_node, model_spec_for(scenario.model));
}

ScenarioStages scenario_stages(const Scenario& scenario, int world, int ranks_per_node, ModelSpec model) {
  if (scenario.train.recompute != "none") {
    // Recomputation is by numbered block: a model without any, or with SyncBatchNorm, is refused where it is asked.
    const auto at = scenario.train.where.find("recompute");
    const InputLocation where =
        InputLocation::at(at != scenario.train.where.end() ? at->second : scenario.path, "train.recompute");
    if (model.block_forward_flops() <= 0)
      throw ScenarioError(where, fmt::format("train.recompute = \"{}\": {} has no numbered blocks (layers named like "
                                             "\"h.0.attn\") whose forward could run again",
                                             scenario.train.recompute, model.name));
    if (!model.sync_layers().empty())
      throw ScenarioError(where,
                          fmt::format("train.recompute = \"{}\": {} has SyncBatchNorm layers, whose statistics a "
                                      "recomputed forward would take again",
                                      scenario.train.recompute, model.name));
  }
  const ParallelLayout layout = scenario_layout(scenario, world, fmt::format("a world of {} ranks", world));
  std::vector<StageSpec> stages = stage_specs(scenario, model, layout, ranks_per_node);
  return {std::move(model), layout, std::move(stages)};
}

std::size_t largest_stage_parameters(const std::vector<StageSpec>& stages) {
  std::size_t most = 0;
  for (const StageSpec& s : stages) most = std::max(most, s.model.parameter_count());
  return most;
}

std::string describe_stages(const Scenario& scenario, const ParallelLayout& layout,
                            const std::vector<StageSpec>& stages) {
  if ((layout.pp() == 1 && layout.tp() == 1) || stages.empty()) return "";
  const PipelineStage& first = stages.front().context.pipeline;
  const PipelineShape& sh = first.shape;
  std::string params;
  for (const StageSpec& s : stages)
    params +=
        fmt::format("{}{:.1f}M", params.empty() ? "" : " / ", static_cast<double>(s.model.parameter_count()) / 1e6);
  const int micro = scenario.train.batch_size / sh.microbatches;
  const std::string micros = fmt::format("{} microbatch{} of {} sample{}", sh.microbatches,
                                         sh.microbatches == 1 ? "" : "es", micro, micro == 1 ? "" : "s");
  const std::string held = fmt::format("parameters per device {}{}", params, stages.size() > 1 ? " (by stage)" : "");
  if (layout.pp() == 1) return fmt::format("{}, {}", layout.describe(), held);
  // Per chunk and microbatch a forward of 1 and a backward of 2 (3 with the forward recomputed): the stage's
  // own work is M v 3 (or 4).
  const double backward = scenario.train.recompute == "none" ? 2.0 : 3.0;
  const double makespan = pipeline_makespan(*first.schedule, sh, 1.0 / sh.chunks, backward / sh.chunks);
  const double bubble = 1 - sh.microbatches * (1 + backward) / makespan;
  return fmt::format("{}, {}{}, {}, {}; bubble {:.1f}% of the step at equal pass times", layout.describe(),
                     first.schedule->name, sh.chunks > 1 ? fmt::format(" ({} chunks per rank)", sh.chunks) : "", micros,
                     held, 100 * bubble);
}

}  // namespace ddplab
