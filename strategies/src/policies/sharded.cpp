// The plan shape both sharded policies share: as soon as a bucket's gradients are ready they go to the
// ranks that own its shards (`gather`), each owner updates its shard, and the updated shards go back to
// every rank that needs them (`spread`). ZeRO-1 and the parameter server differ only in those two ops.
#include "policies.hpp"

namespace ddplab {

void build_sharded(const Strategy& s, std::int64_t step, StepPlan& plan, OpKind gather, OpKind spread) {
  const std::vector<int> backward = s.add_compute_pass(plan, step);
  std::vector<int> gathers, updates;
  for (const Bucket& b : s.bucketing().buckets)
    gathers.push_back(s.add_op(plan, gather, b.id, {s.ready_op(backward, b.id)}));
  for (const Bucket& b : s.bucketing().buckets)
    updates.push_back(s.add_op(plan, OpKind::ShardOptimizer, b.id, {gathers[static_cast<std::size_t>(b.id)]}));
  for (const Bucket& b : s.bucketing().buckets) s.add_op(plan, spread, b.id, {updates[static_cast<std::size_t>(b.id)]});
}

}  // namespace ddplab
