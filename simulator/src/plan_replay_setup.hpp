// Internal to the plan replay (plan_replay.cpp): what each rank replays, worked out before the engine starts.
// The chains of plans, each rank's place in the layout, which ranks run and whose times the others report,
// and each micro-step's op costs and compute groups.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "plan_replay.hpp"
#include "work_cost.hpp"

namespace ddplab::sim {

// Consecutive compute ops that run back to back as one Exec: a group starts at an op that waits for a comm
// op, and ends at an op some comm op waits for (or at a change of kind: compute work vs optimizer). Inside
// a group nothing can interrupt the compute stream, so one Exec of the summed duration ends at the instant
// the last op would have, on a shared core too (the host's share does not depend on how the work is
// split). ResNet-50 with 25 MiB buckets goes from ~180 compute ops per rank to ~10 groups.
using ComputeGroups = std::vector<std::vector<int>>;
// A TP allreduce (on the compute stream) is a group of its own. Without `merge`, every op is a group.
ComputeGroups compute_groups(const StepPlan& plan, bool merge);

// Where a rank stands in a layout: the chain it runs (its pipeline stage's), its place in its DP group
// (the ranks its plans' collectives run on; empty: every rank, in order) and its pipeline group by stage.
struct RankPlace {
  std::size_t chain = 0;
  int local = 0;  // its rank in the plans' collectives
  std::vector<int> group, pipeline;
  int tp_local = 0;  // its rank in its TP group (CommGroup::Tensor ops)
  std::vector<int> tp_group;
};

// What each micro-step of the chain needs on every rank: op costs and compute groups.
struct StepWork {
  OpCosts costs;
  ComputeGroups groups;
  WorkModel codec;                          // the codecs' local work around each collective call
  std::uint64_t native_serialize_from = 0;  // native calls' exchanges take turns from this size (replay.hpp)
  double optimizer_s = 0;                   // the update of the plan's parameters (a stage's share of the model's)
};

// The chains of plans: job.steps, run by every rank, or one per pipeline stage (each the same length).
using Chains = std::vector<const std::vector<PlannedStep>*>;
Chains plan_chains(const PlanJob& job);

// Every rank's place: with stages, its stage's chain, its DP group and its pipeline; else every rank runs
// job.steps over the whole world.
std::vector<RankPlace> rank_places(const PlanJob& job, int n);

// Which ranks the replay runs, and whose times each rank reports (its own, or its counterpart's).
struct ReplayedRanks {
  std::vector<char> replayed;
  std::vector<int> counterpart;
};
// `replica_zero` (the folded and probed modes): only DP replica 0's ranks run, rank 0 alone without a layout;
// every other rank reports its counterpart's times (same tp and pp in replica 0). Else every rank runs.
ReplayedRanks replayed_ranks(const PlanJob& job, int n, bool replica_zero);

// By chain, each micro-step's work: op costs (a calibration's per-layer times without stages), the
// optimizer's share, the codecs' local work and the compute groups.
std::vector<std::vector<StepWork>> chain_work(const PlanJob& job, const Chains& chains);

}  // namespace ddplab::sim
