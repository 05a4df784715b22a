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
#include "ddplab/strategies/schedule.hpp"

namespace ddplab {

class OptimizerState {
 public:
  // State for `n` parameters, zero (as the optimizers' first update expects).
  OptimizerState(Ops& ops, const OptimizerConfig& opt, std::size_t n);
  // State for the parameters of `held` only (offsets into the flat buffer, ascending, disjoint), packed one
  // range after the other: a rank that updates a shard (ZeRO-1, a parameter server) keeps that shard's.
  OptimizerState(Ops& ops, const OptimizerConfig& opt, std::vector<Chunk> held);
  // Update number t (from 1) of the `count` parameters from `offset` of params / grads, holding `tensors`
  // whole (empty for a shard); grads are scaled by grad_scale first. The range lies inside one held range.
  void update(float* params, float* grads, std::size_t offset, std::size_t count, std::vector<TensorSlice> tensors,
              std::int64_t t, float lr, float grad_scale = 1.0f);
  const std::vector<Chunk>& held() const { return held_; }
  std::size_t slots() const { return state_.size(); }
  // Slot `slot` as a host vector of `n` floats (the flat buffer's size), zero outside the held ranges; and
  // back, keeping the held ranges only. For checkpoints and for moving the state when the layout changes.
  std::vector<float> full(std::size_t slot, std::size_t n) const;
  void set_full(std::size_t slot, const std::vector<float>& values);
  // Keeps `held` from now on, taken from full-size host copies of every slot (as full() gives them).
  void reshard(std::vector<Chunk> held, const std::vector<std::vector<float>>& full_slots);

 private:
  Ops& ops_;
  float weight_decay_;
  std::unique_ptr<Optimizer> optimizer_;
  std::vector<Chunk> held_;
  std::size_t held_count_ = 0;
  std::vector<DeviceBuffer> state_;
  bool needs_scratch_ = false;
  DeviceBuffer scratch_;
  void allocate();
  std::size_t packed(std::size_t offset, std::size_t count) const;  // where [offset, +count) sits in the state
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
