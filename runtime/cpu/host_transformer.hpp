// TransformerKernels on host memory. HostTransformer is plain loops (no BLAS), what the reference backend
// runs; the cpu backend's BlasTransformer (blas_attention.cpp) replaces its per-head attention by GEMMs on
// query tiles.
#pragma once
#include <cstddef>
#include <vector>

#include "ddplab/runtime/transformer_kernels.hpp"

namespace ddplab {

class HostTransformer : public TransformerKernels {
 public:
  void embed(const float* tokens, const float* wte, const float* wpe, float* y, int rows, int seq, int dim) override;
  void embed_backward(const float* tokens, const float* dy, float* dwte, float* dwpe, int rows, int seq, int dim,
                      int vocab, bool accumulate_wte, bool accumulate_wpe) override;
  void norm(const float* x, const float* w, const float* b, float* y, float* stats, int rows, int dim, bool rms,
            float eps) override;
  void norm_backward(const float* dy, const float* x, const float* w, const float* stats, float* dx, float* dw,
                     float* db, int rows, int dim, bool rms, bool accumulate_dx, bool accumulate) override;
  void gelu(const float* x, float* y, std::size_t n) override;
  void gelu_backward(const float* x, const float* dy, float* dx, std::size_t n) override;
  void swiglu(const float* x, float* y, int rows, int f) override;
  void swiglu_backward(const float* x, const float* dy, float* dx, int rows, int f) override;
  void add(const float* a, const float* b, float* y, std::size_t n) override;
  void attention(const float* qkv, float* out, float* lse, const AttentionShape& s) override;
  void attention_backward(const float* qkv, const float* out, const float* lse, const float* dout, float* dqkv,
                          const AttentionShape& s) override;

 protected:
  // One head of one sequence, as attention() and attention_backward() hand it to the two below: its queries,
  // keys and values as contiguous seq x hd matrices (rotated already), and the 1/sqrt(hd) scale.
  struct Head {
    const float *q, *k, *v;
    int seq, hd;
    float scale;
  };
  // out (rows of stride ld) and the log-sum-exp of each query's scores.
  virtual void head_forward(const Head& h, float* out, int ld, float* lse);
  // dq (overwritten), and dk and dv (added to: a key/value head serves a group of query heads), from dout
  // (rows of stride ld), the forward's lse and delta = rowsum(dout * out).
  virtual void head_backward(const Head& h, const float* dout, int ld, const float* lse, const float* delta, float* dq,
                             float* dk, float* dv);
};

// The cpu backend's kernels: HostTransformer with the attention on OpenBLAS.
TransformerKernels& blas_transformer_kernels();

namespace host_attention {
// RoPE's rotations for positions [0, seq) of heads of width hd: pair i (features 2i, 2i + 1) at position p
// turns by p / 10000^(2i / hd).
class Rope {
 public:
  Rope(int seq, int hd);
  // One head's row at position p; inverse: the transpose, which takes a gradient back.
  void rotate(float* x, int p, bool inverse) const;

 private:
  int hd_;
  std::vector<float> cs_;  // cos, sin per position and pair
};
float dot(const float* a, const float* b, int n);
// A sequence's head (column col of qkv rows of `width`) as a contiguous seq x hd matrix, rotated by rope
// when it is not null.
void gather_head(const float* qkv, float* dst, int seq, int width, int col, int hd, const Rope* rope);
// The reverse for gradients: src's rows (a head's gradient, seq x hd) rotated back by rope when it is not null
// (in place) and written to column col of qkv.
void scatter_head(float* src, float* qkv, int seq, int width, int col, int hd, const Rope* rope);
}  // namespace host_attention

}  // namespace ddplab
