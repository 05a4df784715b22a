// The strategies a [parallel] layout runs: one per pipeline stage, each over its stage's layers and its
// DP group (docs/model-parallel.md). With pp = 1 there is one, the whole model over every rank.
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "ddplab/core/scenario.hpp"
#include "ddplab/strategies/layout.hpp"
#include "ddplab/strategies/model_spec.hpp"
#include "ddplab/strategies/strategy.hpp"

namespace ddplab {

struct StageSpec {
  ModelSpec model;          // the stage's layers (pipeline_stage), or the whole model
  StrategyContext context;  // world_size and ranks_per_node of its DP group; the pipeline stage
};

// Stage s of `model` on `layout`, ranks_per_node ranks to a node: its layers, its DP group's size, how
// many of that group share a node, and the scenario's pipeline schedule and microbatches. Throws
// ScenarioError at parallel.pp where pipeline_stage refuses the model (fewer blocks than chunks, ...).
std::vector<StageSpec> stage_specs(const Scenario& scenario, const ModelSpec& model, const ParallelLayout& layout,
                                   int ranks_per_node);

// The scenario's model, its layout at `world` ranks and the layout's stages, as every executor and the
// memory model need them together: scenario_layout (ScenarioError when the layout does not fit a world of
// `world` ranks) and stage_specs, the model loaded once.
struct ScenarioStages {
  ModelSpec model;
  ParallelLayout layout;
  std::vector<StageSpec> stages;
  bool split() const { return layout.tp() > 1 || layout.pp() > 1; }  // a model-parallel layout
};
ScenarioStages scenario_stages(const Scenario& scenario, int world, int ranks_per_node);
// The same for a model the caller made from the scenario's (the simulator's time-equivalent one).
ScenarioStages scenario_stages(const Scenario& scenario, int world, int ranks_per_node, ModelSpec model);

// The most parameters a stage holds: what its DP group syncs (the whole model's for pp = 1).
std::size_t largest_stage_parameters(const std::vector<StageSpec>& stages);

// One line on a model-parallel layout, "" without one: "TP 1 x PP 4 x DP 2 (placement tp-dp-pp), 1f1b, 8
// microbatches of 1 sample, parameters per device 450.9M / ... (by stage); bubble 27.3% of the step at equal
// pass times". The bubble is pipeline_makespan's (the schedule's dependencies), against the same passes
// without waiting.
std::string describe_stages(const Scenario& scenario, const ParallelLayout& layout,
                            const std::vector<StageSpec>& stages);

// The ranks of `group` on the node of its first, ranks_per_node to a node.
int group_ranks_per_node(const std::vector<int>& group, int ranks_per_node);

}  // namespace ddplab
