// The CNN of a scenario ([model] type = "cnn"), layer by layer: the one definition both the runtime's
// model (runtime/cnn.hpp) and the simulator's layer table (cnn_model_spec) are built from, so that their
// parameters, gradient-ready order and per-layer work agree.
//
// Activations are NHWC, so a convolution is one GEMM of the im2col matrix (one row per output pixel) and
// its output rows are the next layer's pixels, as a Linear layer's are its samples. Weights keep PyTorch's
// shapes and element order (conv: out x in x k x k), so im2col's columns run over (in, ky, kx).
#pragma once
#include <cstddef>
#include <string>
#include <vector>

#include "ddplab/core/scenario.hpp"
#include "ddplab/strategies/model_spec.hpp"

namespace ddplab {

struct CnnLayer {
  enum class Kind { Conv, Norm, Linear };
  Kind kind = Kind::Linear;
  std::string name;     // "conv1", "bn1", "fc1": its parameters are "<name>.weight", "<name>.bias"
  int h = 1, w = 1;     // input image (Conv, Norm); 1 x 1 for Linear
  int in = 0, out = 0;  // channels (Conv: in -> out; Norm: in == out) or features (Linear)
  int kernel = 1;       // Conv: square kernel, stride 1, padding kernel / 2
  bool bias = true;     // Conv: false when batch norm follows (PyTorch's Conv2d(bias=False) before BatchNorm2d)
  bool relu = false;    // ReLU on the output
  bool pool = false;    // 2 x 2 max-pool, stride 2, after the ReLU
  bool sync = false;    // Norm: SyncBatchNorm (statistics summed over ranks)

  int pad() const { return kernel / 2; }
  std::size_t pixels() const { return static_cast<std::size_t>(h) * static_cast<std::size_t>(w); }
  // Per sample: the layer's output before pooling, and what it hands the next layer (after pooling).
  std::size_t out_elems() const { return pixels() * static_cast<std::size_t>(out); }
  std::size_t next_elems() const { return pool ? out_elems() / 4 : out_elems(); }
  // Rows of a batch of `batch` samples as its GEMMs and per-channel ops see them (pixels x samples).
  int rows(int batch) const { return batch * h * w; }
};

// The layers of model (type "cnn"); throws InternalError for a model of another type.
std::vector<CnnLayer> cnn_layout(const ModelConfig& model);
// Parameters (PyTorch order and shapes) and per-layer FLOPs and activation bytes per sample, for strategies
// and the simulator. Each CnnLayer is one layer: its backward produces its parameters' gradients.
ModelSpec cnn_model_spec(const std::vector<CnnLayer>& layers);

}  // namespace ddplab
