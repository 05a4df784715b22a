// A model the runtime trains: parameters in one flat buffer and gradients in another, laid out in
// PyTorch's parameter order, so a whole-model allreduce is one call and buckets are contiguous ranges.
// Subclasses (Mlp, Cnn) do the layers; the base holds what every model shares: the buffers and their
// layout, the loss, and the walk of backward layer by layer that a plan interleaves with comm.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ddplab/core/scenario.hpp"
#include "ddplab/runtime/ops.hpp"
#include "ddplab/strategies/model_spec.hpp"

namespace ddplab {

class StagePasses;  // stage_passes.hpp

struct ParamInfo {
  std::string name;        // "layers.0.weight"
  std::size_t offset = 0;  // into the flat buffers, in elements
  std::size_t count = 0;
  int layer = 0;  // the layer whose backward produces its gradient
};

// Called once per parameter as soon as its gradient is complete, in the order backward produces them.
using GradReadyFn = std::function<void(int param_index)>;

class Model {
 public:
  virtual ~Model() = default;
  Model(const Model&) = delete;
  Model& operator=(const Model&) = delete;

  // PyTorch's default initialisation of each layer, deterministic in seed.
  virtual void init(std::uint64_t seed) = 0;

  // x: device, batch x input_features(). Returns device logits, batch x classes (valid until the next forward).
  // With SyncBatchNorm layers this is a replica on its own: each normalises by this batch's statistics.
  const float* forward(const float* x, int batch);
  // Forward in the plan's chunks (ModelSpec::forward_chunks): begin_forward, then forward_through(last) for
  // each chunk's last layer, ascending, the model's last layer at the end. A chunk that ends before a sync
  // layer takes that layer's moments (sync_stats), which may be summed over the ranks before the next chunk
  // normalises with what the buffer then holds.
  void begin_forward(const float* x, int batch);
  void forward_through(int last);
  // A SyncBatchNorm layer's buffers, in the backend's memory: its moments after the forward chunk that
  // ends just before it (2 channels + 1 floats), and its gradient sums after its backward_layer (2 channels), which
  // the layer below it reads in its own backward_layer. Summing them over ranks makes the normalisation
  // and its gradient those of the ranks' whole batch.
  virtual float* sync_stats(int layer);
  virtual float* sync_grads(int layer);
  // A replica without a batch this step (a rank out of data under join, a dedicated server) takes the
  // summed moments in sync_stats(layer) into its running statistics, as the others do in their forward, so
  // that every replica's stay alike.
  virtual void absorb_sync_stats(int layer);
  // Mean cross-entropy of the last forward against labels (device), then backward into grads().
  double backward(const std::int32_t* labels, const GradReadyFn& on_ready = {});
  // Loss only (evaluation), no gradients.
  double loss(const std::int32_t* labels);

  // Backward one layer at a time, so a plan can interleave other work: loss_grad() first, then
  // backward_layer(l) for l from the last layer down to 0. With accumulate, gradients are added to what
  // grads() holds (gradient accumulation over micro-steps) instead of replacing it.
  double loss_grad(const std::int32_t* labels);
  virtual void backward_layer(int layer, bool accumulate = false) = 0;
  // Weights per class for the training loss (loss_grad, backward): torch's CrossEntropyLoss(weight), the
  // mean weighted by each sample's class weight. Empty: unweighted. loss() (evaluation) stays unweighted.
  void set_class_weights(const std::vector<float>& weights);

  // Training (batch statistics) or evaluation (running statistics): only batch normalisation tells them apart.
  virtual void set_training(bool) {}
  // State that is not a parameter (batch norm's running statistics), in the backend's memory; each
  // replica keeps its own. Empty for models without any.
  virtual float* buffers() { return nullptr; }
  virtual std::size_t num_buffers() const { return 0; }

  // Moves every parameter (and where its gradient goes) to new offsets in the flat buffers, e.g. so that
  // each bucket of a strategy is one contiguous range. offsets[i] is parameter i's new first element.
  void set_offsets(const std::vector<std::size_t>& offsets);

  // A model that runs a pipeline stage's or a TP share's passes by microbatch (SplitModel); nullptr for the
  // models that run whole-batch passes.
  virtual StagePasses* stage_passes() { return nullptr; }

  const ModelSpec& spec() const { return spec_; }  // parameters and per-layer work, as strategies see them
  int num_layers() const { return static_cast<int>(spec_.layers.size()); }
  const std::vector<int>& layer_params(int layer) const { return layer_params_.at(static_cast<std::size_t>(layer)); }
  float* params() { return params_.data(); }
  float* grads() { return grads_.data(); }
  std::size_t num_params() const { return params_.size(); }
  const std::vector<ParamInfo>& param_info() const { return info_; }
  int classes() const { return classes_; }
  // Labels (loss rows) per sample: 1, or a GPT's tokens per sequence. The loss is the mean over every row.
  int labels_per_sample() const { return labels_per_sample_; }
  int input_features() const { return features_; }
  int max_batch() const { return max_batch_; }

 protected:
  Model(Ops& ops, ModelSpec spec, int features, int classes, int max_batch);
  // Runs layers [first, end) on batch_ samples of input_, then, in training and when layer `end` is a sync
  // layer, takes its moments; logits() is the last layer's output.
  virtual void run_layers(int first, int end) = 0;
  virtual const float* logits() const = 0;
  // Where d(loss)/d(logits) goes (batch_ x classes), the start of the next backward_layer walk.
  virtual float* start_backward() = 0;
  // Copies parameters given in parameter order (what the *_initial_params functions draw) to their offsets.
  void load_ordered_params(const std::vector<float>& ordered);
  float* param(int i) { return params() + info_[static_cast<std::size_t>(i)].offset; }
  float* grad(int i) { return grads() + info_[static_cast<std::size_t>(i)].offset; }

  Ops& ops_;
  int labels_per_sample_ = 1;
  int batch_ = 0;
  const float* input_ = nullptr;

 private:
  ModelSpec spec_;
  int features_, classes_, max_batch_;
  const float* logits_ = nullptr;
  int next_layer_ = 0;
  DeviceBuffer params_, grads_;
  DeviceBuffer class_weights_;  // empty: unweighted training loss
  std::vector<ParamInfo> info_;
  std::vector<std::vector<int>> layer_params_;
};

// The scenario's model (type "mlp", "cnn" or "gpt") on ops, for batches of up to max_batch samples. Throws
// InputError for a model the runtime cannot train (a table).
std::unique_ptr<Model> make_model(Ops& ops, const ModelConfig& model, int max_batch);

}  // namespace ddplab
