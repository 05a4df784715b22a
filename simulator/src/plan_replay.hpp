// Internal: replay of a strategy's StepPlan as SimGrid activities, the simulator's half of "one plan, two
// executors". The runtime's PlanExecutor runs compute ops on the main thread and comm ops in order on a
// comm thread; here each rank gets a compute actor and a comm actor on its host that do the same.
#pragma once
#include <optional>

#include "ddplab/simulator/simulator.hpp"
#include "ddplab/strategies/layout.hpp"
#include "ddplab/strategies/strategy.hpp"

namespace ddplab::sim {

// One micro-step of a chain: its plan, and the Strategy whose bucketing the plan refers to (before or
// after the bucket rebuild).
struct PlannedStep {
  const Strategy* strategy = nullptr;
  StepPlan plan;
};

// Micro-steps run back to back on every rank, as the runtime runs them: a rank starts step k + 1 when
// both of its streams are done with step k (run_step waits for its comm), without waiting for the others.
struct PlanJob {
  ClusterConfig cluster;
  SimOptions options;
  std::vector<PlannedStep> steps;
  double compute_s = 0, optimizer_s = 0;  // measured per (micro-)step, the whole model
  // [parallel] pp > 1 or tp > 1: each pipeline stage's chain, in place of `steps` (same length). Rank r runs
  // the chain of its stage, its collectives over its DP group or, for CommGroup::Tensor ops, its TP group
  // (the plan's ranks are the group's) and its PpSend / PpRecv with the stages of its pipeline group. The compute ops
  // share compute_s by FLOPs of the whole model's fb_flops (a calibration's per-layer times are not used), the updates
  // optimizer_s by parameters. Waits for a neighbouring stage count as exposed comm: the pipeline's bubble is in it.
  std::optional<ParallelLayout> layout;
  std::vector<std::vector<PlannedStep>> stages;
  double fb_flops = 0;         // forward + backward FLOPs of the whole model's micro-step (with stages)
  std::size_t parameters = 0;  // the whole model's, whose update takes optimizer_s (with stages)
};

// What `native` replays as: simulate_steps resolves it (native_transport) before the job runs.
inline const NativeReplay& native_of(const PlanJob& job) {
  if (!job.options.native) throw InternalError("PlanJob: options.native is unresolved");
  return *job.options.native;
}

inline bool is_compute_work(OpKind k) {
  return k == OpKind::Forward || k == OpKind::Backward || k == OpKind::Recompute;
}
inline bool is_optimizer(OpKind k) {
  return k == OpKind::Optimizer || k == OpKind::ShardOptimizer || k == OpKind::GradNorm;
}

// How long each op lasts on an idle host, from the measured times (see simulator.hpp).
struct OpCosts {
  double fb_flops = 0;          // of the plan's Forward and Backward ops, not Recompute (0 for a plan without compute)
  double forward_flops = 0;     // of its Forward ops (several segments under SyncBatchNorm)
  double seconds_per_flop = 0;  // compute_s / fb_flops: the rate the measurement implies, for codec work
  // Measured per-layer times of a calibration (apply_calibrated_compute); empty backward_s = FLOP split.
  double forward_s = 0;
  std::vector<double> backward_s;
  double compute_seconds(const PlanOp& op, const Strategy& s, int rank, double optimizer_s) const;
};
// model_fb_flops > 0: the plan is part of a model whose micro-step of that many FLOPs takes compute_s.
OpCosts op_costs(const StepPlan& plan, double compute_s, double model_fb_flops = 0);

// Mode "folded" (a layout's large worlds): the replicas of a layout run the same plans on alike hosts, so
// only DP replica 0's ranks are replayed, TP allreduces and pipeline messages among them as in "exact".
// In a DP collective whose schedule is lockstep-symmetric (replay.hpp) each replayed rank's messages to
// another replica go out on the real route, and its receives from one are that rank's messages, started
// from its host when the replayed rank posts them (the schedule's same step); what is left out are the
// flows between two other replicas, which share no link with a replayed rank's on a star and few on a
// non-blocking fabric. Under any other schedule (a tree) the other replicas' ranks replay the collective
// for real, each op when its replica-0 counterpart starts it. Every other rank reports the times of its
// replica-0 counterpart (same tp, pp); bytes_between and comms hold the replayed ranks' messages only.
//
// Mode "probed": the same ranks run (rank 0 alone without a layout), and each DP collective call takes the
// time its probe took, simulated once before the step (collective_probe.hpp); no other replica runs.

// Builds the engine and platform, runs the chain of plans on every rank and collects one result per
// micro-step (wall_s left 0). Creates SimGrid's engine: call it at most once per process, i.e. inside
// run_in_child.
std::vector<SimStepResult> run_plan_simulation(const PlanJob& job);

}  // namespace ddplab::sim
