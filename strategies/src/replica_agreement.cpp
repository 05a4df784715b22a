// See replica_agreement.hpp.
#include "ddplab/strategies/replica_agreement.hpp"

#include <algorithm>

namespace ddplab {

void ReplicaAgreement::after(const StepPlan& plan, std::size_t buckets) {
  if (buckets != agree_.size()) agree_.assign(buckets, agree() ? 1 : 0);
  const std::size_t n = agree_.size();
  std::vector<char> grads_synced(n, 0), params_synced(n, 0), updated(n, 0);
  auto mark = [n](std::vector<char>& v, int bucket) {
    if (bucket >= 0 && static_cast<std::size_t>(bucket) < n) v[static_cast<std::size_t>(bucket)] = 1;
  };
  for (const PlanOp& op : plan.ops) switch (op.kind) {
      case OpKind::SyncGrads:
      case OpKind::ReduceScatter:
      case OpKind::Push:
        mark(grads_synced, op.index);
        break;
      case OpKind::SyncParams:
      case OpKind::AllGather:
      case OpKind::Pull:
        mark(params_synced, op.index);
        break;
      case OpKind::Optimizer:
      case OpKind::ShardOptimizer:
        mark(updated, op.index);
        break;
      default:
        break;
    }
  for (std::size_t b = 0; b < n; ++b)
    if (params_synced[b])
      agree_[b] = 1;
    else if (updated[b] && !grads_synced[b])
      agree_[b] = 0;
}

bool ReplicaAgreement::agree() const {
  return std::all_of(agree_.begin(), agree_.end(), [](char a) { return a != 0; });
}

}  // namespace ddplab
