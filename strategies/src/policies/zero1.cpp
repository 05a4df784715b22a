// zero1: ZeRO stage 1. Each bucket's gradients are reduce-scattered as soon as they are ready; rank r
// updates only shard r of the parameters (and keeps optimizer state only for it); the updated shards are
// then all-gathered so every rank holds the whole model again.
#include "policies.hpp"

namespace ddplab {

void build_zero1(const Strategy& s, std::int64_t step, StepPlan& plan) {
  const std::vector<int> backward = s.add_compute_pass(plan, step);
  std::vector<int> scatters, updates;
  for (const Bucket& b : s.bucketing().buckets)
    scatters.push_back(s.add_op(plan, OpKind::ReduceScatter, b.id, {s.ready_op(backward, b.id)}));
  for (const Bucket& b : s.bucketing().buckets)
    updates.push_back(s.add_op(plan, OpKind::ShardOptimizer, b.id, {scatters[static_cast<std::size_t>(b.id)]}));
  for (const Bucket& b : s.bucketing().buckets)
    s.add_op(plan, OpKind::AllGather, b.id, {updates[static_cast<std::size_t>(b.id)]});
}

}  // namespace ddplab
