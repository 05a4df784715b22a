// overlap: a bucket's collective starts as soon as its last gradient is ready, while backward goes on
// (PyTorch DDP's default); each bucket's optimizer update waits only for its own collective.
#include "policies.hpp"

namespace ddplab {

void build_overlap(const Strategy& s, std::int64_t step, StepPlan& plan) {
  const std::vector<int> backward = s.add_compute_pass(plan, step);
  std::vector<int> syncs;
  for (const Bucket& b : s.bucketing().buckets)
    syncs.push_back(s.add_op(plan, OpKind::SyncGrads, b.id, {s.ready_op(backward, b.id)}));
  for (const Bucket& b : s.bucketing().buckets)
    s.add_op(plan, OpKind::Optimizer, b.id, {syncs[static_cast<std::size_t>(b.id)]});
}

}  // namespace ddplab
