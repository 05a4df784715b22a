// Elastic resume: the checkpoint a rank of a new world starts from, made from the files of every rank of the
// old world (PlanExecutor::save's tensors). Parameters, batch-norm buffers and the bucket rebuild are rank 0's
// (a worker: where checkpoints are taken every worker holds the whole model, and the launcher refuses one at
// which the replicas part). Optimizer state is made whole: rank 0's where every rank updates whole buckets,
// else each bucket's shards from the old ranks that updated them (ZeRO-1, parameter servers), so that the new
// world cuts its own. Codec state is not carried: error feedback starts again at zero and PowerSGD's Q from a
// fresh draw, as after a bucket change.
#pragma once
#include <cstdint>
#include <vector>

#include "ddplab/core/checkpoint.hpp"
#include "ddplab/strategies/strategy.hpp"

namespace ddplab {

// `old` holds one checkpoint per old rank, in rank order; `old_strategy` is the strategy on the old world,
// with its bucket rebuild applied as the files record it. Throws CheckpointError naming what does not fit.
Checkpoint elastic_checkpoint(const std::vector<Checkpoint>& old, const Strategy& old_strategy);

// The step a run of `new_workers` workers continues at, having seen about as many samples as `old_workers`
// did in `old_step` steps: rounded down to the start of an accumulation window of `window` micro-steps.
std::int64_t elastic_step(std::int64_t old_step, int old_workers, int new_workers, int window);

}  // namespace ddplab
