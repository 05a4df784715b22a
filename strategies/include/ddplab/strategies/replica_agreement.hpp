// Whether the replicas' parameters are equal after each step, read from the plans alone. A bucket's parameters
// agree again once the step syncs them (SyncParams, AllGather, Pull); they stop agreeing when a rank updates
// them from gradients that were not synced (local SGD between its syncs); otherwise they keep what they were
// (an update from synced gradients is the same on every rank, and an accumulating micro-step changes none).
// Within a step the order of ops is not read: every policy today syncs parameters after its update, never
// before one (mpi.replica_agreement checks the rule against the parameters of every policy).
// The trainer compares the replicas' checksums only after steps where they must agree
// (train.consistency_every). Dedicated parameter servers hold shards, not replicas: compare workers only.
#pragma once
#include <cstddef>
#include <utility>
#include <vector>

#include "ddplab/strategies/plan.hpp"

namespace ddplab {

class ReplicaAgreement {
 public:
  // At the start every bucket agrees: every rank holds rank 0's parameters.
  // `buckets`: the strategy's bucket count now; when it changes (DDP's rebuild after the first step), the
  // new buckets agree if every old one did.
  void after(const StepPlan& plan, std::size_t buckets);
  bool agree() const;
  // By bucket (empty: every one agrees), for checkpoints.
  const std::vector<char>& state() const { return agree_; }
  void restore(std::vector<char> agree) { agree_ = std::move(agree); }

 private:
  std::vector<char> agree_;  // by bucket; empty: every one agrees
};

}  // namespace ddplab
