// The GPT of [model] type = "gpt", described once: its layers in execution order, their parameters, FLOPs,
// activations and tensor-parallel marks. The runtime's Gpt (runtime/gpt.hpp) allocates and runs exactly
// these layers, and the simulator replays the ModelSpec made from them, so the two cannot drift apart
// (tests/runtime/test_gpt.cpp checks shapes, GEMM FLOPs and activation sizes against the running model).
//
// Layers (names as the parameters', GPT-2's layout with nn.Linear (out, in) weights):
//   embed                 token embedding wte (vocab x dim), plus learned positions wpe (seq x dim)
//   h.<i>.ln_1            LayerNorm (weight, bias) or RMSNorm (weight)
//   h.<i>.attn.c_attn     Q, K and V in one linear layer: heads + 2 kv_heads head-widths of outputs
//   h.<i>.attn.core       causal attention, fused: scores never stored, recomputed in backward; RoPE here
//   h.<i>.attn.c_proj     output projection
//   h.<i>.residual_attn   x + attention
//   h.<i>.ln_2
//   h.<i>.mlp.c_fc        ffn outputs (GELU) or 2 ffn (SwiGLU: the gate's ffn rows, then the up projection's)
//   h.<i>.mlp.act         GELU (tanh approximation) or SiLU(gate) * up
//   h.<i>.mlp.c_proj
//   h.<i>.residual_mlp
//   ln_f
//   lm_head               logits; with tied = true it multiplies by wte and holds no parameter of its own
//
// FLOPs per sequence follow strategies/models/README.md: 2 x multiply-accumulates of every matrix product,
// a per-element cost for the rest (add 1, RMSNorm 4, LayerNorm 5, softmax 5, SiLU-and-multiply 5, GELU 8,
// RoPE 3), attention at full length (4 seq^2 dim, without causal savings) and backward = 2 x forward. The
// fused attention's backward also recomputes the scores and their softmax (FlashAttention-2).
// activation_bytes: the layer's output per sequence in fp32; the fused attention's is its context and one
// log-sum-exp per head and position, never the seq^2 scores.
#pragma once
#include <vector>

#include "ddplab/core/scenario.hpp"
#include "ddplab/strategies/model_spec.hpp"

namespace ddplab {

enum class GptOp {
  Embed,
  Norm1,
  Qkv,
  Attention,
  AttnProj,
  ResidualAttn,
  Norm2,
  FcIn,
  Act,
  FcOut,
  ResidualMlp,
  NormF,
  Head
};

struct GptLayer {
  GptOp op = GptOp::Embed;
  int block = -1;  // the transformer block; -1 for embed, ln_f and lm_head
};

// LayerNorm or RMSNorm: ln_1, ln_2 and ln_f.
inline bool gpt_norm(GptOp op) { return op == GptOp::Norm1 || op == GptOp::Norm2 || op == GptOp::NormF; }

// The layers of `g`, in execution order (the ModelSpec's layer order).
std::vector<GptLayer> gpt_layers(const GptConfig& g);
// Floats per token of layer `op`'s output (its activation, what its backward receives the gradient of).
int gpt_output_width(const GptConfig& g, GptOp op);
// The ModelSpec of gpt_layers(g): parameters in PyTorch's order, per-sequence FLOPs and activations, TP marks.
ModelSpec gpt_model_spec(const GptConfig& g);

}  // namespace ddplab
