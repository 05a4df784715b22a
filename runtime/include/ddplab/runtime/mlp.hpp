// A multi-layer perceptron (Linear + ReLU, softmax cross-entropy) over one flat parameter buffer and one
// flat gradient buffer, laid out in PyTorch's parameter order (layer0.weight, layer0.bias, ...), so a
// whole-model allreduce is one call and buckets are contiguous ranges.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ddplab/runtime/ops.hpp"

namespace ddplab {

struct ParamInfo {
  std::string name;        // "layers.0.weight"
  std::size_t offset = 0;  // into the flat buffers, in elements
  std::size_t count = 0;
};

// Called once per parameter as soon as its gradient is complete, in the order backward produces them.
using GradReadyFn = std::function<void(int param_index)>;

class Mlp {
 public:
  Mlp(Ops& ops, std::vector<int> layers, int max_batch);

  // PyTorch's nn.Linear default: weight and bias ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)), deterministic in seed.
  void init(std::uint64_t seed);

  // x: device, batch x layers[0]. Returns device logits, batch x classes (valid until the next forward).
  const float* forward(const float* x, int batch);
  // Mean cross-entropy of the last forward against labels (device), then backward into grads().
  double backward(const std::int32_t* labels, const GradReadyFn& on_ready = {});
  // Loss only (evaluation), no gradients.
  double loss(const std::int32_t* labels);

  float* params() { return params_.data(); }
  float* grads() { return grads_.data(); }
  std::size_t num_params() const { return params_.size(); }
  const std::vector<ParamInfo>& param_info() const { return info_; }
  const std::vector<int>& layers() const { return layers_; }
  int classes() const { return layers_.back(); }

 private:
  Ops& ops_;
  std::vector<int> layers_;
  int max_batch_;
  int batch_ = 0;
  const float* input_ = nullptr;
  DeviceBuffer params_, grads_;
  std::vector<ParamInfo> info_;           // 2 per layer: weight, bias
  std::vector<DeviceBuffer> acts_;        // output of each layer (post-ReLU for hidden layers)
  DeviceBuffer delta_a_, delta_b_;        // backward scratch: d(loss)/d(layer output)
};

}  // namespace ddplab
