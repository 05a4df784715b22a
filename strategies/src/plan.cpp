#include "ddplab/strategies/plan.hpp"

#include <nlohmann/json.hpp>

namespace ddplab {

const char* op_name(OpKind k) {
  switch (k) {
    case OpKind::Forward: return "forward";
    case OpKind::Backward: return "backward";
    case OpKind::SyncGrads: return "sync_grads";
    case OpKind::Optimizer: return "optimizer";
    case OpKind::SyncParams: return "sync_params";
    case OpKind::ReduceScatter: return "reduce_scatter";
    case OpKind::ShardOptimizer: return "shard_optimizer";
    case OpKind::AllGather: return "all_gather";
  }
  return "?";
}

bool is_comm(OpKind k) {
  return k == OpKind::SyncGrads || k == OpKind::SyncParams || k == OpKind::ReduceScatter || k == OpKind::AllGather;
}

nlohmann::json StepPlan::to_json() const {
  nlohmann::json j = {{"step", step}, {"sync", sync}, {"ops", nlohmann::json::array()}};
  for (const PlanOp& op : ops) {
    nlohmann::json o = {{"id", op.id}, {"kind", op_name(op.kind)}, {"index", op.index}, {"deps", op.deps},
                        {"stream", is_comm(op.kind) ? "comm" : "compute"}};
    if (op.flops > 0) o["flops"] = op.flops;
    if (is_comm(op.kind)) {
      o["schedule"] = op.schedule;
      o["calls"] = nlohmann::json::array();
      for (const auto& c : op.calls)
        o["calls"].push_back({{"collective", c.collective}, {"type", elem_name(c.type)}, {"count", c.count},
                              {"flops_before", c.flops_before}, {"label", c.label}});
    }
    j["ops"].push_back(std::move(o));
  }
  return j;
}

}  // namespace ddplab
