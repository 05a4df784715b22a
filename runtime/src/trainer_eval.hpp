// Private to the trainer: evaluating the model a strategy trains, on the test set, with every rank taking
// part. Before it, each rank holds the whole model its replica trains: a dedicated parameter server the
// shards of every server, a ZeRO-3 rank its gathered parameters, a rank of a split model the whole model
// assembled from replica 0's shares; and every rank the workers' average batch-norm statistics.
#pragma once
#include <cstdint>

#include "ddplab/runtime/communicator.hpp"
#include "ddplab/runtime/evaluation.hpp"
#include "ddplab/runtime/model.hpp"
#include "ddplab/runtime/ops.hpp"
#include "ddplab/strategies/strategy.hpp"
#include "trainer_run.hpp"

namespace ddplab {

// Collective: dedicated parameter servers hold only their shards up to date. Before an evaluation or the
// final check each server receives every server's shards, as the workers pulled them, and so holds the whole
// model; check_identical then compares the servers' shards with what the workers hold. Workers receive into
// scratch (what they pulled stays theirs).
void assemble_server_models(Communicator& comm, Ops& ops, Model& model, const Strategy& strategy);

// Collective: batch norm's running statistics differ between replicas that normalise by their own batches
// (bn = "local"). Before an evaluation every rank takes the workers' average (a dedicated server has none of
// its own), so all evaluate one model and keep training from the same statistics. (DDP instead broadcasts
// rank 0's buffers before each forward; the average uses every replica's data.)
void average_buffers(Communicator& comm, Ops& ops, Model& model, bool worker, int workers);

// Collective: the model after `at_step` steps evaluated, stored by rank 0 with the run (`wall_s` from
// `start`, the run's clock).
Evaluation evaluate_run(StrategyRun& r, std::int64_t at_step, TrainerClock::time_point start);

}  // namespace ddplab
