// What PlanExecutor needs of a model to run a pipeline or tensor-parallel plan (ops with microbatch >= 0,
// strategies/pipeline_plan.cpp): its passes by microbatch and chunk, and the buffers that the plan's
// point-to-point sends and TP allreduces move. SplitModel implements it.
#pragma once
#include <cstddef>
#include <cstdint>

namespace ddplab {

class StagePasses {
 public:
  struct Span {
    float* data = nullptr;
    std::size_t count = 0;  // floats
  };
  virtual ~StagePasses() = default;

  // The step's batch of this replica (device memory), cut into `microbatches` parts of equal size (the
  // first ones one sample larger where they do not divide it: an epoch's short last batch).
  virtual void begin_step(const float* x, const std::int32_t* y, int batch, int microbatches) = 0;
  // Forward of microbatch m through chunk `chunk`'s layers, from where its last forward ended through stage
  // layer `last`; with the loss when that is the model's last layer and no TP sum is pending.
  virtual void forward(int m, int chunk, int last) = 0;
  // Backward of stage layer `layer` for microbatch m, into grads(), added to what they hold with accumulate.
  virtual void backward(int m, int layer, bool accumulate) = 0;
  // What a TpSync allreduces over the TP group: a row-parallel layer's partial output (forward) or a
  // column-parallel layer's partial input gradient (backward) for microbatch m. tp_summed finishes the
  // layer once the sum is in (a row layer's bias and ReLU, and the loss after the model's last layer).
  virtual Span tp_sum(int m, int layer, bool gradient) = 0;
  virtual void tp_summed(int m, int layer, bool gradient) = 0;
  // What a PpRecv fills (send = false) or a PpSend sends: chunk `chunk`'s input activations (forward receive)
  // or their gradient (backward send); its output activations (forward send) or their gradient (backward
  // receive). A send's buffer stays untouched until the next begin_step.
  virtual Span boundary(int m, int chunk, bool gradient, bool send) = 0;
  // The step's loss (its microbatches' mean, weighted by size) where the model's last layer is on this rank;
  // NaN elsewhere.
  virtual double step_loss() const = 0;
};

}  // namespace ddplab
