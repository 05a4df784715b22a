// 1F1B (PipeDream-Flush): stage s runs min(P - s - 1, M) warm-up forwards, then alternates one forward with
// the oldest outstanding backward, then drains the backwards. Same bubble as GPipe, but a stage holds at
// most min(P - s, M) microbatches' activations.
#include <algorithm>

#include "pipelines.hpp"

namespace ddplab {

std::vector<PipeOp> one_f_one_b_order(const PipelineShape& shape, int stage) {
  const int M = shape.microbatches;
  const int warmup = std::min(shape.stages - stage - 1, M);
  std::vector<PipeOp> out;
  for (int m = 0; m < warmup; ++m) out.push_back({true, m, 0});
  for (int i = 0; i < M - warmup; ++i) {
    out.push_back({true, warmup + i, 0});
    out.push_back({false, i, 0});
  }
  for (int m = M - warmup; m < M; ++m) out.push_back({false, m, 0});
  return out;
}

}  // namespace ddplab
