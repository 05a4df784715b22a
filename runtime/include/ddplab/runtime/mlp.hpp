// A multi-layer perceptron: Linear + ReLU layers, the last without ReLU (its logits go to the loss).
#pragma once
#include <cstdint>
#include <vector>

#include "ddplab/runtime/model.hpp"

namespace ddplab {

// The whole MLP's initial parameters in parameter order: PyTorch's nn.Linear default (weight and bias ~
// U(-1/sqrt(fan_in), 1/sqrt(fan_in))), deterministic in seed; what Mlp::init and SplitModel::init draw.
std::vector<float> mlp_initial_params(const std::vector<int>& widths, std::uint64_t seed);

class Mlp final : public Model {
 public:
  // layers: input width, hidden widths..., classes.
  Mlp(Ops& ops, std::vector<int> layers, int max_batch);

  // PyTorch's nn.Linear default: weight and bias ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)), deterministic in seed.
  void init(std::uint64_t seed) override;
  void backward_layer(int layer, bool accumulate = false) override;
  const std::vector<int>& layers() const { return layers_; }

 private:
  void run_layers(int first, int end) override;
  const float* logits() const override { return acts_.back().data(); }
  float* start_backward() override;

  std::vector<int> layers_;
  std::vector<DeviceBuffer> acts_;  // output of each layer (post-ReLU for hidden layers)
  DeviceBuffer delta_a_, delta_b_;  // backward scratch: d(loss)/d(layer output)
  float* delta_ = nullptr;          // d(loss)/d(output of the layer backward_layer handles next)
  float* next_ = nullptr;
};

}  // namespace ddplab
