// A registry optimizer (strategies/optimizer.hpp) with its per-parameter state in a backend's memory:
// OptimizerState updates any range of a flat parameter buffer (PlanExecutor, bucket by bucket or shard by
// shard); ModelOptimizer updates every parameter of a Model at once, for code that runs no plan
// (calibration's compute probe, the bare-backend benchmark).
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <vector>

#include "ddplab/runtime/model.hpp"
#include "ddplab/runtime/ops.hpp"
#include "ddplab/strategies/optimizer.hpp"

namespace ddplab {

class OptimizerState {
 public:
  // State for `n` parameters, zero (as the optimizers' first update expects).
  OptimizerState(Ops& ops, const OptimizerConfig& opt, std::size_t n);
  // Update number t (from 1) of the `count` parameters from `offset` of params / grads (the state at the same
  // offset), holding `tensors` whole (empty for a shard); grads are scaled by grad_scale first.
  void update(float* params, float* grads, std::size_t offset, std::size_t count, std::vector<TensorSlice> tensors,
              std::int64_t t, float lr, float grad_scale = 1.0f);
  // The per-parameter state, to move along when the parameters move (a bucket rebuild).
  std::vector<DeviceBuffer>& buffers() { return state_; }
  const std::vector<DeviceBuffer>& buffers() const { return state_; }

 private:
  Ops& ops_;
  float weight_decay_;
  std::unique_ptr<Optimizer> optimizer_;
  std::vector<DeviceBuffer> state_;
  DeviceBuffer scratch_;
};

class ModelOptimizer {
 public:
  ModelOptimizer(Ops& ops, Model& model, const OptimizerConfig& opt);
  // Update number t (from 1) at the lr plan's rate for it, or at `lr` when given.
  void step(std::int64_t t);
  void step(std::int64_t t, float lr);

 private:
  Model& model_;
  LrPlan lr_;
  OptimizerState state_;
  std::vector<TensorSlice> tensors_;
};

}  // namespace ddplab
