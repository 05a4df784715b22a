// A rank's part of a model under a [parallel] layout (docs/model-parallel.md): the layers of its pipeline
// stage's chunks, the MLP's or the CNN's (without batch norm), and under tp each Linear the layout marks
// split over the rank's TP group as Megatron-LM splits its MLP (Shoeybi et al. 2019): a column-parallel
// layer holds rows of the weight (its outputs), the row-parallel layer after it the matching columns (its
// inputs), whose partial outputs the TP group sums before the bias. Layers marked for no split (the CNN's)
// are held whole by every TP rank. It runs microbatch by microbatch as its stage's plan orders the passes
// (StagePasses, PlanExecutor). Parameters are laid out as the stage's ModelSpec (stage_specs), so the
// strategy's buckets are this model's.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "ddplab/core/scenario.hpp"
#include "ddplab/runtime/model.hpp"
#include "ddplab/runtime/stage_passes.hpp"
#include "ddplab/strategies/cnn_layout.hpp"
#include "ddplab/strategies/pipeline.hpp"

namespace ddplab {

class SplitModel final : public Model, public StagePasses {
 public:
  // model: the whole model (type "mlp", or "cnn" with bn = "none"). stage_model and pipeline: the rank's
  // stage as stage_specs gives it (its layers renumbered, each chunk's first layer in the whole model); tp
  // and tp_rank: its TP group's size and its place there; batch: a replica's batch. Throws
  // InternalError when the stage model is not this model's share.
  SplitModel(Ops& ops, const ModelConfig& model, ModelSpec stage_model, PipelineStage pipeline, int tp, int tp_rank,
             int batch);

  // The whole model's initial parameters (mlp_initial_params, cnn_initial_params), this rank's share of them.
  void init(std::uint64_t seed) override;
  // The whole model's parameters in parameter order, zero outside this rank's share; with replicated, the
  // tensors every rank of its TP group holds alike too (a row layer's bias, an unsplit layer). Summed over
  // one rank per share, it is the whole model, bit for bit. With gradients, the same of grads().
  std::vector<float> whole_contribution(bool replicated, bool gradients = false);
  std::size_t whole_params() const { return whole_count_; }

  StagePasses* stage_passes() override { return this; }
  void begin_step(const float* x, const std::int32_t* y, int batch, int microbatches) override;
  void forward(int m, int chunk, int last) override;
  void backward(int m, int layer, bool accumulate) override;
  Span tp_sum(int m, int layer, bool gradient) override;
  void tp_summed(int m, int layer, bool gradient) override;
  Span boundary(int m, int chunk, bool gradient, bool send) override;
  double step_loss() const override;

  // The Model passes of a whole batch have no meaning for a part of the model.
  void backward_layer(int layer, bool accumulate = false) override;

 private:
  struct Layer {
    CnnLayer shape;  // this rank's share of it (a split Linear's in or out divided by tp)
    int global = 0;  // its index in the whole model
    int chunk = 0;   // the rank's chunk it belongs to
    TpSplit split = TpSplit::None;
    bool sums = false;                      // a row-parallel layer's output, summed by the TP group before its bias
    bool input_grad = false;                // computes its input's gradient (not the model's first layer)
    bool last = false;                      // the model's last layer: the loss follows
    std::size_t in = 0, out = 0, next = 0;  // per sample: its input, its output, its output after the pool
  };
  // A run of a parameter's elements in the whole model: whole_offset, offset within the local tensor, count.
  struct Run {
    std::size_t whole = 0, local = 0, count = 0;
  };
  void run_layers(int first, int end) override;
  const float* logits() const override;
  float* start_backward() override;

  // The constructor's parts: each local layer's shape and its parameters' place in the whole model (place_layers:
  // shape_layer, place_share), then the activation, gradient and scratch buffers (allocate_buffers).
  void place_layers(const ModelSpec& whole, int tp, int tp_rank, const std::string& who);
  void shape_layer(Layer& y, const ModelSpec& whole, int tp, const std::string& who) const;
  void place_share(int l, const Layer& y, const ModelSpec& whole,
                   const std::vector<std::pair<std::size_t, std::size_t>>& whole_params, int tp, int tp_rank,
                   const std::string& who);
  void allocate_buffers();
  bool first_place(int chunk) const;
  bool last_place(int chunk) const;
  const float* input_of(int m, int layer) const;  // the activations layer `layer` reads for microbatch m
  float* output_of(int m, int layer);             // what it hands the next layer (after the pool)
  void finish(int m, int layer);                  // bias, ReLU and pool of a layer's output; the loss after the last
  std::size_t rows(int m) const { return static_cast<std::size_t>(rows_[static_cast<std::size_t>(m)]); }
  std::size_t slot(int m, std::size_t width) const { return static_cast<std::size_t>(m) * micro_ * width; }

  ModelConfig config_;
  std::vector<CnnLayer> whole_layers_;
  PipelineStage pipe_;
  int batch_cap_, micro_ = 0;  // micro_: the largest microbatch's rows
  std::vector<Layer> layers_;
  std::vector<std::vector<Run>> runs_;  // by parameter
  std::size_t whole_count_ = 0;
  // By layer (or chunk): microbatch m's rows at slot(m, width). A send's buffer is per microbatch, as its
  // transfer may still be going on when the next microbatch's pass runs.
  std::vector<DeviceBuffer> acts_;                  // each layer's output (post-ReLU; a row layer's partial sum first)
  std::vector<DeviceBuffer> pooled_;                // a pooling layer's output after the pool
  std::vector<DeviceBuffer> in_, in_grad_;          // by chunk: its input from the stage before, the gradient sent back
  std::vector<DeviceBuffer> out_grad_;              // by chunk: its output's gradient from the stage after
  DeviceBuffer dlogits_, dx_a_, dx_b_, pre_, col_;  // pre_: a pooling layer's gradient before the pool
  float* pending_dx_ = nullptr;                     // where the last backward left its input's gradient
  std::vector<std::vector<int>> next_;              // by chunk and microbatch: the next layer its forward runs
  std::vector<int> rows_;
  std::vector<std::size_t> start_;  // by microbatch: its first row in the step's batch
  std::vector<double> losses_;
  const float* x_ = nullptr;
  const std::int32_t* y_ = nullptr;
  int step_batch_ = 0;
};

}  // namespace ddplab
