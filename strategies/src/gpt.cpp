#include "ddplab/strategies/gpt.hpp"

#include <fmt/format.h>

#include "ddplab/core/error.hpp"

namespace ddplab {

std::vector<GptLayer> gpt_layers(const GptConfig& g) {
  std::vector<GptLayer> out{{GptOp::Embed, -1}};
  for (int b = 0; b < g.blocks; ++b)
    for (GptOp op : {GptOp::Norm1, GptOp::Qkv, GptOp::Attention, GptOp::AttnProj, GptOp::ResidualAttn, GptOp::Norm2,
                     GptOp::FcIn, GptOp::Act, GptOp::FcOut, GptOp::ResidualMlp})
      out.push_back({op, b});
  out.push_back({GptOp::NormF, -1});
  out.push_back({GptOp::Head, -1});
  return out;
}

int gpt_output_width(const GptConfig& g, GptOp op) {
  const int swiglu = g.activation == GptActivation::SwiGlu ? 2 : 1;
  switch (op) {
    case GptOp::Qkv:
      return (g.heads + 2 * g.kv()) * g.head_dim();
    case GptOp::FcIn:
      return swiglu * g.mlp_units();
    case GptOp::Act:
      return g.mlp_units();
    case GptOp::Head:
      return g.vocab;
    default:
      return g.dim;
  }
}

namespace {

// One layer's row of the spec, per sequence of s tokens.
struct Builder {
  const GptConfig& g;
  ModelSpec spec;
  double s;

  int add(const std::string& name, double fwd, double out_per_token, TpSplit tp, double extra_backward = 0,
          double extra_bytes = 0) {
    LayerSpec l;
    l.name = name;
    l.forward_flops = fwd;
    l.backward_flops = 2 * fwd + extra_backward;
    l.activation_bytes = 4 * (s * out_per_token + extra_bytes);
    l.tp = tp;
    spec.layers.push_back(l);
    return static_cast<int>(spec.layers.size()) - 1;
  }
  void param(const std::string& name, std::vector<std::size_t> shape, int layer) {
    ParamSpec p;
    p.name = name;
    p.shape = shape;
    p.rows = shape[0];
    p.cols = shape.size() > 1 ? shape[1] : 1;
    p.layer = layer;
    spec.params.push_back(p);
  }
  void norm(const std::string& name) {
    const double per = g.norm == GptNorm::LayerNorm ? 5 : 4;
    const int l = add(name, per * s * g.dim, g.dim, TpSplit::None);
    param(name + ".weight", {sz(g.dim)}, l);
    if (g.norm == GptNorm::LayerNorm) param(name + ".bias", {sz(g.dim)}, l);
  }
  void linear(const std::string& name, int in, int out, TpSplit tp, bool bias) {
    const int l = add(name, 2 * s * in * out + (bias ? s * out : 0), out, tp);
    param(name + ".weight", {sz(out), sz(in)}, l);
    if (bias) param(name + ".bias", {sz(out)}, l);
  }
  static std::size_t sz(int v) { return static_cast<std::size_t>(v); }
};

}  // namespace

ModelSpec gpt_model_spec(const GptConfig& g) {
  if (g.dim % g.heads || g.heads % g.kv())
    throw InternalError(
        fmt::format("gpt_model_spec: {} heads, {} kv heads and width {} do not split", g.heads, g.kv(), g.dim));
  Builder b{g, {}, static_cast<double>(g.seq)};
  b.spec.name = "gpt";
  const bool learned = g.position == GptPosition::Learned;
  const double s = g.seq, d = g.dim, f = g.mlp_units();
  // The embedding's lookup is a copy; learned positions add one element each. Its gradient is scattered into
  // wte (vocabulary-parallel under TP: a Row layer whose output is summed over the group).
  const int embed = b.add("embed", learned ? s * d : 0, d, TpSplit::Row);
  b.param("wte.weight", {Builder::sz(g.vocab), Builder::sz(g.dim)}, embed);
  if (learned) b.param("wpe.weight", {Builder::sz(g.seq), Builder::sz(g.dim)}, embed);
  for (int i = 0; i < g.blocks; ++i) {
    const std::string p = fmt::format("h.{}.", i);
    b.norm(p + "ln_1");
    b.linear(p + "attn.c_attn", g.dim, gpt_output_width(g, GptOp::Qkv), TpSplit::Column, g.bias);
    // QK^T and PV at full length, the softmax over every score, RoPE on queries and keys; backward also
    // recomputes the scores and their softmax. Output: the context and a log-sum-exp per head and position.
    const double scores = 2 * s * s * d, softmax = 5 * g.heads * s * s;
    const double rope = g.position == GptPosition::Rotary ? 3 * s * (g.heads + g.kv()) * g.head_dim() : 0;
    b.add(p + "attn.core", 2 * scores + softmax + rope, d, TpSplit::Split, scores + softmax, s * g.heads);
    b.linear(p + "attn.c_proj", g.dim, g.dim, TpSplit::Row, g.bias);
    b.add(p + "residual_attn", s * d, d, TpSplit::None);
    b.norm(p + "ln_2");
    b.linear(p + "mlp.c_fc", g.dim, gpt_output_width(g, GptOp::FcIn), TpSplit::Column, g.bias);
    b.add(p + "mlp.act", (g.activation == GptActivation::SwiGlu ? 5 : 8) * s * f, f, TpSplit::Split);
    b.linear(p + "mlp.c_proj", g.mlp_units(), g.dim, TpSplit::Row, g.bias);
    b.add(p + "residual_mlp", s * d, d, TpSplit::None);
  }
  b.norm("ln_f");
  if (g.tied)
    b.add("lm_head", 2 * s * d * g.vocab, g.vocab, TpSplit::Column);  // its gradient goes into wte
  else
    b.linear("lm_head", g.dim, g.vocab, TpSplit::Column, false);
  return b.spec;
}

}  // namespace ddplab
