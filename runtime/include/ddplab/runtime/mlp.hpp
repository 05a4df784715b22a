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

  // Backward one layer at a time, so a plan can interleave other work: loss_grad() first, then
  // backward_layer(l) for l from the last layer down to 0. With accumulate, gradients are added to what
  // grads() holds (gradient accumulation over micro-steps) instead of replacing it.
  double loss_grad(const std::int32_t* labels);
  void backward_layer(int layer, bool accumulate = false);
  // Weights per class for the training loss (loss_grad, backward): torch's CrossEntropyLoss(weight), the
  // mean weighted by each sample's class weight. Empty: unweighted. loss() (evaluation) stays unweighted.
  void set_class_weights(const std::vector<float>& weights);
  int num_layers() const { return static_cast<int>(layers_.size()) - 1; }

  // Moves every parameter (and where its gradient goes) to new offsets in the flat buffers, e.g. so that
  // each bucket of a strategy is one contiguous range. offsets[i] is parameter i's new first element.
  void set_offsets(const std::vector<std::size_t>& offsets);

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
  DeviceBuffer class_weights_;            // empty: unweighted training loss
  std::vector<ParamInfo> info_;           // 2 per layer: weight, bias
  std::vector<DeviceBuffer> acts_;        // output of each layer (post-ReLU for hidden layers)
  DeviceBuffer delta_a_, delta_b_;        // backward scratch: d(loss)/d(layer output)
  float* delta_ = nullptr;                // d(loss)/d(output of the layer backward_layer handles next)
  float* next_ = nullptr;
};

}  // namespace ddplab
