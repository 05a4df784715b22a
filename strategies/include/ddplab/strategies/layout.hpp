// A scenario's [parallel] layout made concrete for a world size: each rank's coordinates (tensor-parallel
// rank, pipeline stage, data-parallel replica) and the groups it communicates in. The plan's data-parallel
// collectives run over a rank's DP group; TP collectives over its TP group; pipeline sends between
// neighbours of its PP group (docs/model-parallel.md).
//
// Placement "tp-dp-pp" is Megatron-LM's (megatron/core/parallel_state.py, initialize_model_parallel):
// rank = tp + T (dp + D pp), so a TP group is T adjacent ranks and the stages are outermost. With T = 2,
// P = 4 on 16 ranks, the TP groups are {0,1}, {2,3}, ..., the DP groups {0,2}, {1,3}, {4,6}, ... and the
// pipelines {0,4,8,12}, {1,5,9,13}, ... "tp-pp-dp" keeps a replica's stages adjacent instead:
// rank = tp + T (pp + P dp).
#pragma once
#include <string>
#include <vector>

#include "ddplab/core/scenario.hpp"

namespace ddplab {

// The pipeline schedules [parallel].pipeline_schedule may name (the registry's, pipeline.hpp).
std::vector<std::string> pipeline_schedule_names();

struct RankCoord {
  int tp = 0, pp = 0, dp = 0;
  bool operator==(const RankCoord&) const = default;
};

class ParallelLayout {
 public:
  // Throws InputError when tp x pp does not divide `world`, or dp is given and tp x pp x dp is
  // not `world`.
  ParallelLayout(const ParallelConfig& parallel, int world);

  int tp() const { return tp_; }
  int pp() const { return pp_; }
  int dp() const { return dp_; }
  int world() const { return tp_ * pp_ * dp_; }

  RankCoord coord(int rank) const;
  int rank(const RankCoord& c) const;
  // The ranks that share all of `rank`'s coordinates but one, ordered by that one.
  std::vector<int> tp_group(int rank) const;
  std::vector<int> pp_group(int rank) const;  // by stage: the pipeline `rank` is a stage of
  std::vector<int> dp_group(int rank) const;  // by replica: where its stage's gradients are synced
  // "TP 2 x PP 4 x DP 2 (placement tp-dp-pp)"
  std::string describe() const;

 private:
  int tp_ = 1, pp_ = 1, dp_ = 1;
  bool dp_inside_ = true;  // "tp-dp-pp": dp varies before pp
};

// The checks of [parallel] that need the rest of the scenario but no world size: microbatches dividing
// train.batch_size, the schedule's name (pipeline.hpp's registry) and its conditions (an interleaved one:
// virtual_stages >= 2, pp >= 2, microbatches a multiple of pp; otherwise virtual_stages = 1), parameter servers without
// model parallelism. Throws ScenarioError with the offending value's file:line:col.
void validate_parallel(const Scenario& scenario);
// The layout of the scenario at `world` ranks, or ScenarioError at [parallel]'s position when it does not
// fit (`what` names the command's world: "--np 6", "--world 12").
ParallelLayout scenario_layout(const Scenario& scenario, int world, const std::string& what);
// "path:line:col" of parallel.<key> in the scenario (of another [parallel] key, or the file, when unset).
std::string parallel_position(const Scenario& scenario, const std::string& key);

}  // namespace ddplab
