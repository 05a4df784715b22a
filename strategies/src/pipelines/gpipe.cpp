// GPipe: every microbatch's forward, then every backward, in microbatch order. The stage holds all M
// microbatches' activations at its peak.
#include "pipelines.hpp"

namespace ddplab {

std::vector<PipeOp> gpipe_order(const PipelineShape& shape, int) {
  std::vector<PipeOp> out;
  for (int m = 0; m < shape.microbatches; ++m) out.push_back({true, m, 0});
  for (int m = 0; m < shape.microbatches; ++m) out.push_back({false, m, 0});
  return out;
}

}  // namespace ddplab
