// Private to the trainer: whether the replicas still hold the same parameters. During a run, every
// train.consistency_every steps, by checksum among the workers; at its end, bit for bit against replica 0.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "ddplab/runtime/communicator.hpp"
#include "ddplab/runtime/fault_injection.hpp"
#include "ddplab/runtime/model.hpp"
#include "ddplab/runtime/model_parallel.hpp"
#include "ddplab/runtime/ops.hpp"
#include "ddplab/strategies/strategy.hpp"

namespace ddplab {

// FNV-1a over the bytes of `n` floats.
std::uint64_t parameter_checksum(const float* p, std::size_t n);

// The checksums of the ranks (by rank; `worker[r]`: whether rank r holds a replica to compare) judged after
// `step`: "" when the workers' agree; else a message naming the ranks whose checksum differs from the one a
// strict majority holds, or, without one, every group of ranks with its checksum. `every`:
// train.consistency_every, for the message.
std::string judge_checksums(const std::vector<std::uint64_t>& sums, const std::vector<char>& worker, std::int64_t step,
                            int every);

// Collective: the workers' parameters compared by checksum, every rank learning every checksum; the outcome
// as judge_checksums gives it, the same on every rank.
std::string check_consistency(Communicator& comm, Ops& ops, Model& model, const Strategy& strategy, std::int64_t step,
                              int every);

// Collective: every rank compares its parameters with replica 0's (rank 0's without a split; the first of its
// DP group, which holds the same share, with one), bit for bit. Returns "" or a message naming the ranks, the
// same outcome on every rank. A perturb fault changes one of its rank's parameters first.
std::string check_identical(Communicator& comm, RankParallel& rp, Ops& ops, Model& model, const FaultInjection& fault);

// A bitflip fault: the lowest bit of the middle parameter flipped.
void flip_a_bit(Ops& ops, Model& model);

}  // namespace ddplab
