// A rank's part of a [parallel] layout in the runtime (docs/model-parallel.md): its coordinates, its stage
// (the layers it holds and the Strategy context its plans are made in), and its three groups as splits of
// the world: the DP group the plan's collectives run over, the TP group of its TpSync ops and its pipeline.
#pragma once
#include <memory>
#include <string>

#include "ddplab/core/scenario.hpp"
#include "ddplab/runtime/communicator.hpp"
#include "ddplab/runtime/model.hpp"
#include "ddplab/runtime/plan_executor.hpp"
#include "ddplab/strategies/layout.hpp"
#include "ddplab/strategies/stages.hpp"

namespace ddplab {

// What the runtime cannot run yet on a split model (tp or pp > 1): another model than the MLP or the CNN
// (without batch norm), a GPU
// backend, checkpoints, consistency checks, gradient clipping (a norm over every share), a per-tensor
// optimizer on TP-split tensors, data.uneven = "join" and class-weighted losses. Throws ScenarioError at the
// setting's file:line:col (parallel.tp or pp's for the [data] ones, which keep no positions). Split or
// not: train.precision other than "fp32" and train.recompute, which only the simulator models.
void require_runnable_layout(const Scenario& scenario);

class RankParallel {
 public:
  // Collective over `world`: places this rank in the scenario's layout at world.size() ranks and splits the
  // world into its groups (with pp = tp = 1, the DP group is the world itself and nothing is split). Throws
  // ScenarioError when the layout does not fit the world, the model does not split or the runtime cannot
  // run it (require_runnable_layout).
  RankParallel(const Scenario& scenario, Communicator& world, int ranks_per_node);

  const ParallelLayout& layout() const { return stages_.layout; }
  RankCoord coord() const { return coord_; }
  bool split() const { return stages_.split(); }
  // The last stage computes the loss (every rank of its TP group, on the whole logits); one rank of it
  // counts its replica's samples, so that a step's rows sum to the global batch.
  bool holds_loss() const { return coord_.pp + 1 == layout().pp(); }
  bool counts_samples() const { return holds_loss() && coord_.tp == 0; }
  int loss_rank() const { return layout().rank({0, layout().pp() - 1, 0}); }  // replica 0's
  // The rank holding the same share of replica 0 (the one a replica is compared with): 0 without a split.
  int replica_zero(int rank) const;
  const StageSpec& stage() const { return stages_.stages.at(static_cast<std::size_t>(coord_.pp)); }
  Communicator& data() { return dp_ ? *dp_ : world_; }  // where the plan's DP collectives run
  // This rank's model: the scenario's (make_model) without a split, else its stage's share (SplitModel).
  std::unique_ptr<Model> make_model(Ops& ops, const ModelConfig& model, int batch) const;
  // Gives an executor of this rank's stage its TP group and pipeline (nothing without a split).
  void attach(PlanExecutor& executor);
  // Collective over the world: the whole model's parameters on every rank, in parameter order, from the
  // shares of replica 0 (SplitModel::whole_contribution), bit for bit.
  std::vector<float> whole_parameters(Model& model);
  // "rank 3 (tp 1, pp 1, dp 0)", or "rank 3" without a split
  std::string describe_rank(int rank) const;

 private:
  Communicator& world_;
  ScenarioStages stages_;
  RankCoord coord_;
  std::unique_ptr<Communicator> dp_, tp_, pp_;
};

}  // namespace ddplab
