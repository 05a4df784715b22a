// zero2: ZeRO stage 2. The plan is ZeRO-1's (each bucket reduce-scattered once ready, shard r updated by
// rank r, the updated shards all-gathered); what changes is memory. Once a bucket is reduce-scattered, a
// rank needs only its shard of the gradients and gives the rest back (PolicyInfo::zero = 2): the runtime
// releases it, the memory model counts the shard.
#include "policies.hpp"

namespace ddplab {

void build_zero2(const Strategy& s, std::int64_t step, StepPlan& plan) {
  build_sharded(s, step, plan, OpKind::ReduceScatter, OpKind::AllGather);
}

}  // namespace ddplab
