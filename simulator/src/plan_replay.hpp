// Internal: replay of a strategy's StepPlan as SimGrid activities, the simulator's half of "one plan, two
// executors". The runtime's PlanExecutor runs compute ops on the main thread and comm ops in order on a
// comm thread; here each rank gets a compute actor and a comm actor on its host that do the same.
#pragma once
#include "ddplab/simulator/simulator.hpp"
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
};

// How long each op lasts on an idle host, from the measured times (see simulator.hpp).
struct OpCosts {
  double fb_flops = 0;        // forward + backward FLOPs of the plan (0 for a plan without compute)
  double forward_flops = 0;   // of its Forward ops (several segments under SyncBatchNorm)
  double seconds_per_flop = 0;  // compute_s / fb_flops: the rate the measurement implies, for codec work
  // Measured per-layer times of a calibration (apply_calibrated_compute); empty backward_s = FLOP split.
  double forward_s = 0;
  std::vector<double> backward_s;
  double compute_seconds(const PlanOp& op, const Strategy& s, int rank, double optimizer_s) const;
};
OpCosts op_costs(const StepPlan& plan, double compute_s);

// Builds the engine and platform, runs the chain of plans on every rank and collects one result per
// micro-step (wall_s left 0). Creates SimGrid's engine: call it at most once per process, i.e. inside
// run_in_child.
std::vector<SimStepResult> run_plan_simulation(const PlanJob& job);

}  // namespace ddplab::sim
