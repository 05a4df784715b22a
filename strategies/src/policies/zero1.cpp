// zero1: ZeRO stage 1. Each bucket's gradients are reduce-scattered as soon as they are ready; rank r
// updates only shard r of the parameters (and keeps optimizer state only for it); the updated shards are
// then all-gathered so every rank holds the whole model again. ZeRO-2 (`zero2`) runs this plan too: its stage
// (PolicyInfo::zero = 2) changes only what a rank keeps, its shard of the gradients once reduce-scattered
// (the runtime gives the rest back; the memory model counts the shard).
#include "policies.hpp"

namespace ddplab {

void build_zero1(const Strategy& s, std::int64_t step, StepPlan& plan) {
  build_sharded(s, step, plan, OpKind::ReduceScatter, OpKind::AllGather);
}

}  // namespace ddplab
