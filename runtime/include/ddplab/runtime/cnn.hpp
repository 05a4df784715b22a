// The CNN of [model] type = "cnn" (strategies/cnn_layout.hpp): conv blocks (im2col + GEMM, optional batch
// normalisation, ReLU, 2 x 2 max-pool) then fully connected layers, on NHWC activations. Each layer of the
// layout is one backward_layer step, so a plan's buckets and overlap see its gradients as they become ready.
#pragma once
#include <vector>

#include "ddplab/runtime/model.hpp"
#include "ddplab/strategies/cnn_layout.hpp"

namespace ddplab {

// The whole CNN's initial parameters in parameter order (Cnn::init's draw, below), which a split model's
// shares are cut from.
std::vector<float> cnn_initial_params(const std::vector<CnnLayer>& layout, std::uint64_t seed);

class Cnn final : public Model {
 public:
  Cnn(Ops& ops, const ModelConfig& model, int max_batch);

  // PyTorch's defaults: Conv2d and Linear weights and biases ~ U(-1/sqrt(fan_in), 1/sqrt(fan_in)) (fan_in =
  // in x k x k for a convolution), BatchNorm2d weight 1, bias 0, running mean 0 and variance 1.
  void init(std::uint64_t seed) override;
  void backward_layer(int layer, bool accumulate = false) override;
  void set_training(bool training) override { training_ = training; }
  // Batch norm's running means then running variances, per norm layer in order (2 x channels each).
  float* buffers() override { return running_.data(); }
  std::size_t num_buffers() const override { return running_.size(); }
  const std::vector<CnnLayer>& layout() const { return layout_; }
  float* sync_stats(int layer) override;
  float* sync_grads(int layer) override;
  void absorb_sync_stats(int layer) override;

  static constexpr float kBnEps = 1e-5f;  // PyTorch's BatchNorm2d defaults
  static constexpr float kBnMomentum = 0.1f;

 private:
  Cnn(Ops& ops, std::vector<CnnLayer> layout, const ModelConfig& model, int max_batch);
  void run_layers(int first, int end) override;
  const float* logits() const override { return out_.back().data(); }
  float* start_backward() override;
  void run_layer(std::size_t l, bool moments_taken);
  const float* layer_input(std::size_t l) const;
  const float* layer_output(std::size_t l) const;  // what the next layer reads (pooled when the layer pools)
  void conv_forward(std::size_t l, const float* in);
  void conv_backward(std::size_t l, const float* in, const float* dy, bool accumulate);
  void norm_forward(std::size_t l, const float* in, bool moments_taken);
  void norm_backward(std::size_t l, const float* in, const float* dy, bool accumulate);
  void norm_input_grad(std::size_t l, const float* dy);  // dx of a norm layer from its (summed) gradient sums

  std::vector<CnnLayer> layout_;
  bool training_ = true;
  std::vector<DeviceBuffer> out_, pooled_;  // per layer: output (after ReLU), and after the pool when it pools
  struct NormState {
    DeviceBuffer moments, mean, var;  // moments: 2 x channels + 1 (channel_moments)
    DeviceBuffer sums;                // [sum dy | sum dy xhat], 2 x channels
    std::size_t running = 0;          // offset of its running mean in running_ (variance follows)
  };
  std::vector<NormState> norm_;  // per layer; empty for other kinds
  DeviceBuffer running_;
  DeviceBuffer col_, pre_;  // im2col blocks; d(loss)/d(pre-pool output)
  DeviceBuffer delta_a_, delta_b_;
  float* delta_ = nullptr;  // d(loss)/d(output of the layer backward_layer handles next)
  float* next_ = nullptr;
  // A SyncBatchNorm layer whose input gradient waits for its summed gradient sums: the next
  // backward_layer computes it first. dy: the layer's output gradient (pre_ or delta_, untouched until then).
  int pending_ = -1;
  const float* pending_dy_ = nullptr;
};

}  // namespace ddplab
