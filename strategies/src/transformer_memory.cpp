// See transformer_memory.hpp.
#include "ddplab/strategies/transformer_memory.hpp"

#include <stdexcept>

#include <fmt/format.h>

#include "ddplab/core/error.hpp"
#include "ddplab/strategies/pipeline.hpp"

namespace ddplab {

namespace {
void check(const TransformerDims& d, const TransformerLayout& l) {
  if (l.tp < 1 || l.pp < 1 || l.dp < 1 || l.chunks < 1 || l.microbatch < 1 || l.microbatches < 1)
    throw InputError("transformer memory: every size of the layout must be at least 1");
  if (d.hidden % l.tp != 0 || d.heads % l.tp != 0 || d.vocab % l.tp != 0)
    throw InputError(
        fmt::format("transformer memory: tp {} must divide the hidden size {}, the heads {} and "
                    "the vocabulary {}",
                    l.tp, d.hidden, d.heads, d.vocab));
  if (d.layers % (l.pp * l.chunks) != 0)
    throw InputError(
        fmt::format("transformer memory: pp x chunks = {} x {} must divide the {} layers", l.pp, l.chunks, d.layers));
  if (l.zero < 0 || l.zero > 3) throw InputError(fmt::format("transformer memory: ZeRO stage {}", l.zero));
}
}  // namespace

double transformer_parameters(const TransformerDims& d) {
  const double L = d.layers, h = d.hidden;
  return 12 * L * h * h + 13 * L * h + (static_cast<double>(d.vocab) + d.seq) * h + 2 * h;
}

double device_parameters(const TransformerDims& d, const TransformerLayout& l, int stage) {
  check(d, l);
  const double h = d.hidden, t = l.tp;
  // A layer: QKV (3h^2 + 3h) and the first MLP matrix (4h^2 + 4h) split by columns, the attention output
  // and the second MLP matrix (h^2 and 4h^2) by rows; their two output biases and the two LayerNorms (4h) whole.
  const double layer = (12 * h * h + 7 * h) / t + 6 * h;
  double out = layer * (d.layers / l.pp);
  if (stage == 0) out += static_cast<double>(d.vocab) * h / t + static_cast<double>(d.seq) * h;
  if (stage == l.pp - 1) out += 2 * h + (l.pp > 1 ? static_cast<double>(d.vocab) * h / t : 0.0);
  return out;
}

double model_state_bytes(double psi, int dp, int zero) {
  constexpr double kHalf = 2, kStates = 12;  // fp16 parameters and gradients; fp32 parameters, momentum, variance
  switch (zero) {
    case 0:
      return (2 * kHalf + kStates) * psi;
    case 1:
      return 2 * kHalf * psi + kStates * psi / dp;
    case 2:
      return kHalf * psi + (kHalf + kStates) * psi / dp;
    case 3:
      return (2 * kHalf + kStates) * psi / dp;
    default:
      throw InternalError(fmt::format("model_state_bytes: ZeRO stage {}", zero));
  }
}

double layer_activation_bytes(const TransformerDims& d, const TransformerLayout& l) {
  const double s = d.seq, b = l.microbatch, h = d.hidden, a = d.heads, t = l.tp;
  const double sbh = s * b * h, scores = 5 * a * s / h;
  if (l.recompute == "full") return 2 * sbh / (l.sequence_parallel ? t : 1.0);
  const double kept = l.recompute == "selective" ? 0.0 : scores;
  if (l.recompute != "none" && l.recompute != "selective")
    throw InputError("layer_activation_bytes: recompute must be \"none\", \"selective\" or \"full\", got \"" +
                     l.recompute + "\"");
  if (l.sequence_parallel) return sbh / t * (34 + kept);
  return sbh * (10 + 24 / t + kept / t);
}

LayoutMemory transformer_device_memory(const TransformerDims& d, const TransformerLayout& l, int stage) {
  check(d, l);
  const PipelineInfo* schedule = find_pipeline_schedule(l.pipeline_schedule);
  if (!schedule) throw InputError("transformer memory: no pipeline schedule \"" + l.pipeline_schedule + "\"");
  if (stage < 0 || stage >= l.pp) throw InternalError(fmt::format("transformer memory: stage {} of {}", stage, l.pp));
  LayoutMemory m;
  m.parameters = device_parameters(d, l, stage);
  m.model_states = model_state_bytes(m.parameters, l.dp, l.zero);
  const int chunks_in_flight = peak_in_flight(schedule->order({l.pp, l.microbatches, l.chunks}, stage));
  m.activations = chunks_in_flight * (d.layers / (l.pp * l.chunks)) * layer_activation_bytes(d, l);
  return m;
}

}  // namespace ddplab
