// Per-device memory of a GPT-style transformer under a 3D layout (TP x PP x DP, a ZeRO stage, a pipeline
// schedule), from the published accounting, for the transformer layouts that only the simulator runs
// (docs/model-parallel.md, "The memory model"): mixed-precision Adam's model states by ZeRO stage
// (Rajbhandari et al. 2020, arXiv 1910.02054, section V: 2 + 2 + K bytes per parameter, K = 12) and each
// layer's activations per microbatch (Korthikanti et al. 2022, arXiv 2205.05198, Table 2: 16-bit
// activations, 1-byte dropout masks), times the microbatches a stage holds in flight under its pipeline
// schedule (pipeline.hpp's orders). strategies/memory.hpp is the fp32 model of what ddplab trains today.
//
// The model: L layers of hidden size h, a heads, FFN 4h, biases, sequence s, vocabulary V, learned position
// embeddings, a final LayerNorm and the output layer tied to the word embeddings (GPT-2 / Megatron-LM's GPT).
// Left out: the embedding's and output layer's activations, and the FSDP / DeepSpeed working buffers.
#pragma once
#include <string>

namespace ddplab {

struct TransformerDims {
  int layers = 1, hidden = 1, heads = 1, seq = 1, vocab = 1;
};

struct TransformerLayout {
  int tp = 1, pp = 1, dp = 1;
  int zero = 0;                            // 0 (plain data parallel), 1, 2 or 3
  int microbatch = 1;                      // sequences per microbatch (b)
  int microbatches = 1;                    // per step (M)
  std::string pipeline_schedule = "1f1b";  // pipeline.hpp's registry
  int chunks = 1;                          // model chunks per rank (interleaved)
  bool sequence_parallel = false;          // Megatron's: LayerNorm and dropout activations split over TP too
  std::string recompute = "none";          // "none", "selective" (attention's s^2 terms) or "full" (layer inputs only)
};

// Parameters of the whole model: 12 L h^2 + 13 L h + (V + s) h + 2h (Narayanan et al. 2021, Eq. 2, and the
// final LayerNorm).
double transformer_parameters(const TransformerDims& d);
// Parameters a device of pipeline stage `stage` holds: its L / pp layers, their matrices and column-parallel
// biases split over tp, LayerNorms and row-parallel biases whole; the word embedding split over tp on the
// first stage and, for the tied output layer, again on the last; position embeddings on the first stage and
// the final LayerNorm on the last.
double device_parameters(const TransformerDims& d, const TransformerLayout& l, int stage);
// Bytes of model states for psi parameters on a device with dp replicas of them: 16 psi at ZeRO 0, 4 psi +
// 12 psi / dp at 1, 2 psi + 14 psi / dp at 2, 16 psi / dp at 3.
double model_state_bytes(double psi, int dp, int zero);
// Activations of one layer for one microbatch (Korthikanti Table 2), with t = tp:
// sbh (34 + 5as/h) without TP; sbh (10 + 24/t + 5as/(ht)) with TP; sbh/t (34 + 5as/h) with sequence
// parallelism; selective recomputation drops the 5as/h terms; full recomputation keeps the layer's input, 2sbh
// (2sbh/t with sequence parallelism).
double layer_activation_bytes(const TransformerDims& d, const TransformerLayout& l);

struct LayoutMemory {
  double parameters = 0;    // the device's parameters (count, not bytes)
  double model_states = 0;  // bytes
  double activations = 0;   // bytes: in-flight microbatch-chunks x layers per chunk x one layer's
  double total() const { return model_states + activations; }
};
// A device of pipeline stage `stage`. Throws InputError for a layout the dimensions do not split
// (tp not dividing h, a or V; pp x chunks not dividing L), an unknown schedule or recomputation.
LayoutMemory transformer_device_memory(const TransformerDims& d, const TransformerLayout& l, int stage);

}  // namespace ddplab
