// Interleaved 1F1B: each rank holds v model chunks; the step's M x v chunk-passes run in groups of P
// microbatches per chunk (forward chunk 0 of microbatches 0..P-1, then chunk 1 of the same, ...; backward
// in the reverse chunk order). Stage s warms up with 2 (P - s - 1) + (v - 1) P forwards, then alternates,
// then drains; when M = P every forward runs first. Needs M a multiple of P.
#include <algorithm>

#include "pipelines.hpp"

namespace ddplab {

namespace {
// The microbatch and chunk of virtual pass k (forward or backward).
PipeOp pass(const PipelineShape& shape, int k, bool forward) {
  const int P = shape.stages, v = shape.chunks;
  const int in_group = k % (P * v);
  const int chunk = in_group / P;
  return {forward, (k / (P * v)) * P + k % P, forward ? chunk : v - 1 - chunk};
}
}  // namespace

std::vector<PipeOp> interleaved_order(const PipelineShape& shape, int stage) {
  const int P = shape.stages, v = shape.chunks, total = shape.microbatches * v;
  const int warmup = shape.microbatches == P ? total : std::min(2 * (P - stage - 1) + (v - 1) * P, total);
  std::vector<PipeOp> out;
  for (int k = 0; k < warmup; ++k) out.push_back(pass(shape, k, true));
  for (int i = 0; i < total - warmup; ++i) {
    out.push_back(pass(shape, warmup + i, true));
    out.push_back(pass(shape, i, false));
  }
  for (int k = total - warmup; k < total; ++k) out.push_back(pass(shape, k, false));
  return out;
}

}  // namespace ddplab
