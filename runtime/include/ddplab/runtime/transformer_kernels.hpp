// The transformer's element-wise and attention kernels, beside Ops' GEMMs: what a GPT needs that a CNN does
// not. A backend offers them through Ops::transformer() (nullptr where it has none: the CUDA backend, for
// now, so a GPT is refused there before any rank starts). Tensors are row-major in the backend's memory,
// one row per token (rows = sequences x seq); sums accumulate in double.
#pragma once
#include <cstddef>

namespace ddplab {

struct AttentionShape {
  int n = 1;         // sequences
  int seq = 1;       // tokens per sequence
  int heads = 1;     // query heads
  int kv_heads = 1;  // key/value heads (heads / kv_heads query heads share one)
  int head_dim = 1;
  bool rope = false;  // rotate queries and keys by position (RoPE, base 10000, interleaved pairs)
  int qkv_width() const { return (heads + 2 * kv_heads) * head_dim; }
};

class TransformerKernels {
 public:
  virtual ~TransformerKernels() = default;

  // y[r] = wte[token r] (+ wpe[r % seq] when wpe is not null); tokens are ids held as floats (exact below 2^24).
  virtual void embed(const float* tokens, const float* wte, const float* wpe, float* y, int rows, int seq, int dim) = 0;
  // dwte[token r] += dy[r] (dwte zeroed first unless accumulate_wte), dwpe[r % seq] += dy[r] (zeroed first
  // unless accumulate_wpe; skipped when null).
  virtual void embed_backward(const float* tokens, const float* dy, float* dwte, float* dwpe, int rows, int seq,
                              int dim, int vocab, bool accumulate_wte, bool accumulate_wpe) = 0;

  // LayerNorm (y = (x - mean) rstd w + b) or, with b null and rms, RMSNorm (y = x rstd w, rstd =
  // 1/sqrt(mean(x^2) + eps)). stats gets mean and rstd per row (2 floats).
  virtual void norm(const float* x, const float* w, const float* b, float* y, float* stats, int rows, int dim, bool rms,
                    float eps) = 0;
  // dx gets the input gradient, added to what it holds with accumulate_dx (the residual stream's other
  // branch); dw and db (null for RMSNorm) are written, or added to with accumulate.
  virtual void norm_backward(const float* dy, const float* x, const float* w, const float* stats, float* dx, float* dw,
                             float* db, int rows, int dim, bool rms, bool accumulate_dx, bool accumulate) = 0;

  // GELU, tanh approximation (GPT-2's; torch's approximate="tanh"), element-wise; the backward writes dx.
  virtual void gelu(const float* x, float* y, std::size_t n) = 0;
  virtual void gelu_backward(const float* x, const float* dy, float* dx, std::size_t n) = 0;
  // SwiGLU: x is rows x 2f, the gate's f columns then the up projection's; y (rows x f) = silu(gate) * up.
  virtual void swiglu(const float* x, float* y, int rows, int f) = 0;
  virtual void swiglu_backward(const float* x, const float* dy, float* dx, int rows, int f) = 0;

  // y = a + b (the residual stream).
  virtual void add(const float* a, const float* b, float* y, std::size_t n) = 0;

  // Causal attention over qkv (rows x qkv_width: every query head, then the key heads, then the value
  // heads) into out (rows x heads*head_dim), scaled by 1/sqrt(head_dim), fused as FlashAttention-2: the scores
  // are never stored; lse keeps each query's log-sum-exp (n x heads x seq), which the backward recomputes
  // the probabilities from.
  virtual void attention(const float* qkv, float* out, float* lse, const AttentionShape& s) = 0;
  // dqkv (rows x qkv_width, overwritten) from dout, the forward's inputs, out and lse.
  virtual void attention_backward(const float* qkv, const float* out, const float* lse, const float* dout, float* dqkv,
                                  const AttentionShape& s) = 0;
};

// The host implementation (runtime/cpu/host_transformer.cpp), shared by the cpu and reference backends.
TransformerKernels& host_transformer_kernels();

}  // namespace ddplab
