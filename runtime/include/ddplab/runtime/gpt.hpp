// The GPT of [model] type = "gpt" (strategies/gpt.hpp describes its layers), trained as a byte-level
// language model: a sample is a sequence of seq token ids (held as floats) and its labels are the next
// token at each position, so the loss is the mean cross-entropy over every position of the batch.
// Kernels: Ops' GEMMs for the linear layers and the backend's TransformerKernels for the rest.
#pragma once
#include <cstdint>
#include <vector>

#include "ddplab/runtime/model.hpp"
#include "ddplab/runtime/transformer_kernels.hpp"
#include "ddplab/strategies/gpt.hpp"

namespace ddplab {

// GPT-2's initialisation in parameter order, deterministic in seed: linear weights and embeddings ~
// N(0, 0.02), the residual projections (attn.c_proj, mlp.c_proj) ~ N(0, 0.02 / sqrt(2 blocks)), biases 0,
// norm weights 1.
std::vector<float> gpt_initial_params(const GptConfig& g, std::uint64_t seed);

class Gpt final : public Model {
 public:
  // Throws InputError when ops has no transformer kernels (the backend cannot run a GPT).
  Gpt(Ops& ops, const GptConfig& g, int max_batch);

  void init(std::uint64_t seed) override;
  void backward_layer(int layer, bool accumulate = false) override;
  const GptConfig& config() const { return g_; }
  // Layer l's output, the last forward's (rows x gpt_output_width floats).
  const float* output(int l) const { return act_.at(static_cast<std::size_t>(l)).data(); }

 private:
  void run_layers(int first, int end) override;
  const float* logits() const override { return act_.back().data(); }
  float* start_backward() override { return dlogits_.data(); }
  int rows() const { return batch_ * g_.seq; }
  int width(int l) const { return gpt_output_width(g_, layers_[static_cast<std::size_t>(l)].op); }
  const float* weight(int l, int k = 0) { return param(layer_params(l).at(static_cast<std::size_t>(k))); }
  const float* bias(int l);  // nullptr without biases
  // The linear layer l: forward from in, backward from dy into dx (nullptr: not needed).
  void linear_forward(int l, const float* in, int in_width);
  void linear_backward(int l, const float* in, int in_width, const float* dy, float* dx, bool accumulate);
  AttentionShape attention_shape() const;

  GptConfig g_;
  std::vector<GptLayer> layers_;
  TransformerKernels& k_;
  int wte_ = 0, wpe_ = -1;           // parameter indices
  std::vector<DeviceBuffer> act_;    // each layer's output
  std::vector<DeviceBuffer> stats_;  // norms' mean and rstd per row; attention's log-sum-exp per head and row
  // Backward: one buffer for the residual stream's gradient (every residual add's and the embedding's output,
  // accumulated in place as the branches return) and one per kind of branch-internal output.
  DeviceBuffer dres_, dnorm_, dqkv_, datt_, dfc_, dact_, dlogits_;
};

}  // namespace ddplab
