// ps: a parameter server (PsLayout). Each bucket's gradients are pushed as soon as they are ready: server s
// receives shard s from every worker and averages it, updates that shard of the parameters with the
// optimizer state it alone keeps, and every worker pulls the updated shards back. Servers are the last
// ps_servers ranks (dedicated: they train nothing) or, with ps_servers = 0, every rank serves one shard.
#include "policies.hpp"

namespace ddplab {

void build_parameter_server(const Strategy& s, std::int64_t step, StepPlan& plan) {
  const std::vector<int> backward = s.add_compute_pass(plan, step);
  std::vector<int> pushes, updates;
  for (const Bucket& b : s.bucketing().buckets)
    pushes.push_back(s.add_op(plan, OpKind::Push, b.id, {s.ready_op(backward, b.id)}));
  for (const Bucket& b : s.bucketing().buckets)
    updates.push_back(s.add_op(plan, OpKind::ShardOptimizer, b.id, {pushes[static_cast<std::size_t>(b.id)]}));
  for (const Bucket& b : s.bucketing().buckets)
    s.add_op(plan, OpKind::Pull, b.id, {updates[static_cast<std::size_t>(b.id)]});
}

}  // namespace ddplab
