// What a strategy needs to know of a model: its parameter tensors (in parameter order, with shapes) and
// the per-layer compute, so that buckets, codecs and the simulator can be planned without the model code.
#pragma once
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace ddplab {

struct ParamSpec {
  std::string name;                // "layers.2.weight"
  std::size_t rows = 0;            // a matrix's rows (out features); a vector's length
  std::size_t cols = 1;            // a matrix's columns (in features); 1 for a vector
  int layer = 0;                   // the layer whose backward produces its gradient
  std::vector<std::size_t> shape;  // the full shape; rows = shape[0], cols = the product of the rest
  std::size_t count() const { return rows * cols; }
};

// How Megatron-LM's tensor parallelism splits a layer over a TP group of T ranks (Shoeybi et al. 2019):
// each rank holds 1/T of its parameters and does 1/T of its work.
enum class TpSplit {
  None,    // replicated: every rank holds and runs all of it (norms, residual adds, the MLP without [parallel] tp)
  Column,  // a linear layer whose outputs are split (QKV, the MLP's first, the vocabulary-parallel output
           // layer): its input gradient is a partial sum, allreduced over the TP group in backward
  Row,     // a linear layer whose inputs are split (attention's and the MLP's output projections, the
           // vocabulary-parallel embedding): its output is a partial sum, allreduced in forward
  Split,   // no parameters, on split data (attention's scores, softmax and context by heads, GELU)
};
const char* tp_split_name(TpSplit s);  // "", "column", "row", "split"

struct LayerSpec {
  double forward_flops = 0;     // per sample
  double backward_flops = 0;    // per sample
  double activation_bytes = 0;  // the layer's output per sample (0 when unknown)
  std::string name;             // "layer1.0.conv1", "layers.0" (MLP)
  // SyncBatchNorm: > 0 when the layer normalises by statistics summed over every rank, its channel count.
  // Its forward waits for the ranks' per-channel moments, and the layer below it in backward for their
  // gradient sums (OpKind::SyncBnStats, SyncBnGrads).
  int sync_channels = 0;
  TpSplit tp = TpSplit::None;
  // Per sample, the bytes its TP allreduce carries (Row: its output in forward; Column: its input
  // gradient in backward); set by tensor_parallel_shard, 0 otherwise.
  double tp_sync_bytes = 0;
};

struct ModelSpec {
  std::string name;               // "resnet50", a table's file stem, or "mlp"
  std::vector<ParamSpec> params;  // parameter order (PyTorch's model.parameters())
  std::vector<LayerSpec> layers;

  std::size_t parameter_count() const;
  double forward_flops() const;   // per sample, all layers
  double backward_flops() const;  // per sample, all layers
  // The gradient-ready order backward is expected to produce: layers last to first, and within a layer
  // in parameter order. The runtime reports the order it really observed, and buckets are rebuilt from it.
  std::vector<int> expected_ready_order() const;
  // The layers with sync_channels, in order (SyncBatchNorm: their moments are summed over the ranks).
  std::vector<int> sync_layers() const;
  // The last layers of a whole-batch forward's chunks, ascending: each layer of `cuts`, the layer before
  // each sync layer (a chunk ends by taking the next layer's moments, summed before the next chunk
  // normalises with them) and the last layer. Throws std::out_of_range for a cut outside the model and
  // InputError for a sync layer first, whose moments no chunk would take.
  std::vector<int> forward_chunks(const std::vector<int>& cuts = {}) const;

  // The first layer of layer l's numbered block (layer_block), or -1 for a layer of none.
  int block_start(int l) const;
  // Whether layer l is the last of a numbered block: where recomputation runs the block's forward again.
  bool ends_block(int l) const;
  // Per sample, the forward FLOPs of the layers in numbered blocks: what recomputation runs again.
  double block_forward_flops() const;

  // Linear + ReLU layers of the given widths: weight (out x in) and bias (out) per layer.
  static ModelSpec mlp(const std::vector<int>& widths);
};

// The numbered block a layer belongs to, from its name: up to its first numeric component
// ("transformer.h.12.attn.c_attn" -> "transformer.h.12", "layer3.1.conv2" -> "layer3.1", "layers.2" ->
// "layers.2"); "" for a layer of no block (embeddings, a final norm, a head). Pipeline stages are cut and
// activations recomputed by blocks, as Megatron-LM shares and checkpoints transformer layers.
std::string layer_block(const std::string& name);

}  // namespace ddplab
