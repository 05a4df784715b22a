// A registry optimizer (strategies/optimizer.hpp) over every parameter of an Mlp at once, with its own
// state: the update of code that runs no plan (calibration's compute probe, the bare-backend benchmark).
// PlanExecutor updates bucket by bucket instead.
#pragma once
#include <cstdint>
#include <memory>
#include <vector>

#include "ddplab/runtime/mlp.hpp"
#include "ddplab/runtime/ops.hpp"
#include "ddplab/strategies/optimizer.hpp"

namespace ddplab {

class ModelOptimizer {
 public:
  ModelOptimizer(Ops& ops, Mlp& model, const OptimizerConfig& opt);
  // Update number t (from 1) at the lr plan's rate for it, or at `lr` when given.
  void step(std::int64_t t);
  void step(std::int64_t t, float lr);

 private:
  Ops& ops_;
  OptimizerConfig opt_;
  std::unique_ptr<Optimizer> optimizer_;
  std::vector<DeviceBuffer> state_;
  DeviceBuffer scratch_;
  OptimizerUpdate update_;
};

}  // namespace ddplab
