// flat and bucketed: every bucket is synchronised once backward has finished; then the optimizer.
// flat puts every gradient in one bucket (one collective), bucketed follows the bucket caps.
#include "policies.hpp"

namespace ddplab {

void build_after_backward(const Strategy& s, std::int64_t step, StepPlan& plan) {
  const std::vector<int> backward = s.add_compute_pass(plan, step);
  const int last = backward.front();  // layer 0 is the last to finish
  std::vector<int> syncs;
  for (const Bucket& b : s.bucketing().buckets) syncs.push_back(s.add_op(plan, OpKind::SyncGrads, b.id, {last}));
  for (const Bucket& b : s.bucketing().buckets)
    s.add_op(plan, OpKind::Optimizer, b.id, {syncs[static_cast<std::size_t>(b.id)]});
}

}  // namespace ddplab
