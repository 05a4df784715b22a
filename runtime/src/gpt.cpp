#include "ddplab/runtime/gpt.hpp"

#include <cmath>
#include <random>

#include <fmt/format.h>

#include "ddplab/core/error.hpp"

namespace ddplab {

namespace {

std::size_t sz(int v) { return static_cast<std::size_t>(v); }

// Box-Muller over our own uniform draws: std::normal_distribution's use of the engine is implementation-defined.
class Normal {
 public:
  explicit Normal(std::uint64_t seed) : rng_(seed) {}
  double operator()() {
    if (have_) return have_ = false, spare_;
    const double u1 = (static_cast<double>(rng_() >> 11) + 1) / 9007199254740993.0;  // (0, 1]
    const double u2 = static_cast<double>(rng_() >> 11) / 9007199254740992.0;
    const double r = std::sqrt(-2 * std::log(u1)), a = 6.283185307179586 * u2;
    spare_ = r * std::sin(a), have_ = true;
    return r * std::cos(a);
  }

 private:
  std::mt19937_64 rng_;
  double spare_ = 0;
  bool have_ = false;
};

bool ends_with(const std::string& s, const std::string& tail) {
  return s.size() >= tail.size() && s.compare(s.size() - tail.size(), tail.size(), tail) == 0;
}

TransformerKernels& kernels_of(Ops& ops) {
  if (TransformerKernels* k = ops.transformer()) return *k;
  throw InputError(
      fmt::format("the {} backend has no transformer kernels: train model.type = \"gpt\" with "
                  "train.backend = \"cpu\"",
                  ops.name()));
}

}  // namespace

std::vector<float> gpt_initial_params(const GptConfig& g, std::uint64_t seed) {
  const ModelSpec spec = gpt_model_spec(g);
  const std::vector<GptLayer> layers = gpt_layers(g);
  Normal normal(seed);
  const double residual_std = 0.02 / std::sqrt(2.0 * g.blocks);
  std::vector<float> out;
  out.reserve(spec.parameter_count());
  for (const ParamSpec& p : spec.params) {
    const GptOp op = layers[sz(p.layer)].op;
    const bool bias = ends_with(p.name, ".bias");
    const double sd = op == GptOp::AttnProj || op == GptOp::FcOut ? residual_std : 0.02;  // the residual projections
    for (std::size_t i = 0; i < p.count(); ++i) {
      if (gpt_norm(op))
        out.push_back(bias ? 0.0f : 1.0f);
      else
        out.push_back(bias ? 0.0f : static_cast<float>(normal() * sd));
    }
  }
  return out;
}

Gpt::Gpt(Ops& ops, const GptConfig& g, int max_batch)
    : Model(ops, gpt_model_spec(g), g.seq, g.vocab, max_batch), g_(g), layers_(gpt_layers(g)), k_(kernels_of(ops)) {
  labels_per_sample_ = g.seq;
  for (std::size_t i = 0; i < param_info().size(); ++i) {
    if (param_info()[i].name == "wte.weight") wte_ = static_cast<int>(i);
    if (param_info()[i].name == "wpe.weight") wpe_ = static_cast<int>(i);
  }
  const std::size_t rows = sz(max_batch) * sz(g.seq);
  for (int l = 0; l < num_layers(); ++l) {
    act_.emplace_back(ops_, rows * sz(width(l)));
    const GptOp op = layers_[sz(l)].op;
    stats_.emplace_back(ops_, gpt_norm(op)             ? 2 * rows
                              : op == GptOp::Attention ? sz(max_batch) * sz(g.heads) * sz(g.seq)
                                                       : 0);
  }
  dres_ = DeviceBuffer(ops_, rows * sz(g.dim));
  dnorm_ = DeviceBuffer(ops_, rows * sz(g.dim));
  datt_ = DeviceBuffer(ops_, rows * sz(g.dim));
  dqkv_ = DeviceBuffer(ops_, rows * sz(gpt_output_width(g, GptOp::Qkv)));
  dfc_ = DeviceBuffer(ops_, rows * sz(gpt_output_width(g, GptOp::FcIn)));
  dact_ = DeviceBuffer(ops_, rows * sz(g.mlp_units()));
  dlogits_ = DeviceBuffer(ops_, rows * sz(g.vocab));
}

void Gpt::init(std::uint64_t seed) { load_ordered_params(gpt_initial_params(g_, seed)); }

const float* Gpt::bias(int l) { return layer_params(l).size() > 1 ? weight(l, 1) : nullptr; }

AttentionShape Gpt::attention_shape() const {
  return {batch_, g_.seq, g_.heads, g_.kv(), g_.head_dim(), g_.position == GptPosition::Rotary};
}

void Gpt::linear_forward(int l, const float* in, int in_width) {
  const int out = width(l);
  float* y = act_[sz(l)].data();
  ops_.gemm(false, true, rows(), out, in_width, 1.0f, in, in_width, weight(l), in_width, 0.0f, y, out);
  if (const float* b = bias(l)) ops_.add_bias(y, b, rows(), out);
}

void Gpt::linear_backward(int l, const float* in, int in_width, const float* dy, float* dx, bool accumulate) {
  const int out = width(l);
  const std::vector<int>& p = layer_params(l);
  ops_.gemm(true, false, out, in_width, rows(), 1.0f, dy, out, in, in_width, accumulate ? 1.0f : 0.0f, grad(p[0]),
            in_width);
  if (p.size() > 1) ops_.bias_grad(dy, grad(p[1]), rows(), out, accumulate);
  if (dx) ops_.gemm(false, false, rows(), in_width, out, 1.0f, dy, out, weight(l), in_width, 0.0f, dx, in_width);
}

void Gpt::run_layers(int first, int end) {
  const bool rms = g_.norm == GptNorm::RmsNorm;
  for (int l = first; l < end; ++l) {
    const GptOp op = layers_[sz(l)].op;
    const float* in = l > 0 ? act_[sz(l) - 1].data() : nullptr;
    float* y = act_[sz(l)].data();
    switch (op) {
      case GptOp::Embed:
        k_.embed(input_, param(wte_), wpe_ >= 0 ? param(wpe_) : nullptr, y, rows(), g_.seq, g_.dim);
        break;
      case GptOp::Norm1:
      case GptOp::Norm2:
      case GptOp::NormF:
        k_.norm(in, weight(l), rms ? nullptr : weight(l, 1), y, stats_[sz(l)].data(), rows(), g_.dim, rms, 1e-5f);
        break;
      case GptOp::Qkv:
      case GptOp::AttnProj:
      case GptOp::FcIn:
      case GptOp::FcOut:
        linear_forward(l, in, width(l - 1));
        break;
      case GptOp::Attention:
        k_.attention(in, y, stats_[sz(l)].data(), attention_shape());
        break;
      case GptOp::ResidualAttn:
      case GptOp::ResidualMlp:
        // The stream before the block's branch (five layers back) plus the branch's output.
        k_.add(act_[sz(l) - 5].data(), in, y, sz(rows()) * sz(g_.dim));
        break;
      case GptOp::Act:
        if (g_.activation == GptActivation::SwiGlu)
          k_.swiglu(in, y, rows(), g_.mlp_units());
        else
          k_.gelu(in, y, sz(rows()) * sz(g_.mlp_units()));
        break;
      case GptOp::Head:
        ops_.gemm(false, true, rows(), g_.vocab, g_.dim, 1.0f, in, g_.dim, g_.tied ? param(wte_) : weight(l), g_.dim,
                  0.0f, y, g_.vocab);
        break;
    }
  }
}

void Gpt::backward_layer(int l, bool accumulate) {
  const bool rms = g_.norm == GptNorm::RmsNorm;
  const GptOp op = layers_[sz(l)].op;
  const float* in = l > 0 ? act_[sz(l) - 1].data() : nullptr;
  const std::vector<int>& p = layer_params(l);
  switch (op) {
    case GptOp::Head:
      ops_.gemm(true, false, g_.vocab, g_.dim, rows(), 1.0f, dlogits_.data(), g_.vocab, in, g_.dim,
                accumulate ? 1.0f : 0.0f, grad(g_.tied ? wte_ : p[0]), g_.dim);
      ops_.gemm(false, false, rows(), g_.dim, g_.vocab, 1.0f, dlogits_.data(), g_.vocab,
                g_.tied ? param(wte_) : weight(l), g_.dim, 0.0f, dnorm_.data(), g_.dim);
      break;
    case GptOp::NormF:
    case GptOp::Norm1:
    case GptOp::Norm2:
      // ln_f starts the residual stream's gradient; a block's norms add their branch's share to it.
      k_.norm_backward(dnorm_.data(), in, weight(l), stats_[sz(l)].data(), dres_.data(), grad(p[0]),
                       rms ? nullptr : grad(p[1]), rows(), g_.dim, rms, op != GptOp::NormF, accumulate);
      break;
    case GptOp::ResidualMlp:
    case GptOp::ResidualAttn:
      break;  // the branch and the stream both take dres_ as it is
    case GptOp::FcOut:
      linear_backward(l, in, g_.mlp_units(), dres_.data(), dact_.data(), accumulate);
      break;
    case GptOp::Act:
      if (g_.activation == GptActivation::SwiGlu)
        k_.swiglu_backward(in, dact_.data(), dfc_.data(), rows(), g_.mlp_units());
      else
        k_.gelu_backward(in, dact_.data(), dfc_.data(), sz(rows()) * sz(g_.mlp_units()));
      break;
    case GptOp::FcIn:
      linear_backward(l, in, g_.dim, dfc_.data(), dnorm_.data(), accumulate);
      break;
    case GptOp::AttnProj:
      linear_backward(l, in, g_.dim, dres_.data(), datt_.data(), accumulate);
      break;
    case GptOp::Attention:
      k_.attention_backward(in, act_[sz(l)].data(), stats_[sz(l)].data(), datt_.data(), dqkv_.data(),
                            attention_shape());
      break;
    case GptOp::Qkv:
      linear_backward(l, in, g_.dim, dqkv_.data(), dnorm_.data(), accumulate);
      break;
    case GptOp::Embed:
      // A tied wte already holds lm_head's share of its gradient.
      k_.embed_backward(input_, dres_.data(), grad(wte_), wpe_ >= 0 ? grad(wpe_) : nullptr, rows(), g_.seq, g_.dim,
                        g_.vocab, accumulate || g_.tied, accumulate);
      break;
  }
}

}  // namespace ddplab
