#include "ddplab/strategies/plan.hpp"

#include "ddplab/core/error.hpp"
#include "ddplab/strategies/nccl_model.hpp"

#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

namespace ddplab {

const char* op_name(OpKind k) {
  switch (k) {
    case OpKind::Forward:
      return "forward";
    case OpKind::Backward:
      return "backward";
    case OpKind::SyncGrads:
      return "sync_grads";
    case OpKind::Optimizer:
      return "optimizer";
    case OpKind::SyncParams:
      return "sync_params";
    case OpKind::ReduceScatter:
      return "reduce_scatter";
    case OpKind::ShardOptimizer:
      return "shard_optimizer";
    case OpKind::AllGather:
      return "all_gather";
    case OpKind::Push:
      return "push";
    case OpKind::Pull:
      return "pull";
    case OpKind::GradNorm:
      return "grad_norm";
    case OpKind::NormSync:
      return "norm_sync";
    case OpKind::SyncBnStats:
      return "sync_bn_stats";
    case OpKind::SyncBnGrads:
      return "sync_bn_grads";
    case OpKind::PpSend:
      return "pp_send";
    case OpKind::PpRecv:
      return "pp_recv";
    case OpKind::TpSync:
      return "tp_sync";
    case OpKind::Recompute:
      return "recompute";
    case OpKind::Reshard:
      return "reshard";
  }
  return "?";
}

bool is_comm(OpKind k) {
  return k == OpKind::SyncGrads || k == OpKind::SyncParams || k == OpKind::ReduceScatter || k == OpKind::AllGather ||
         k == OpKind::Push || k == OpKind::Pull || k == OpKind::NormSync || k == OpKind::SyncBnStats ||
         k == OpKind::SyncBnGrads || k == OpKind::PpSend || k == OpKind::PpRecv || k == OpKind::TpSync;
}

bool on_compute_stream(OpKind k) { return !is_comm(k) || k == OpKind::TpSync; }

NativeReplay NativeReplay::parse(const std::string& text, const std::string& field) {
  if (const auto t = choice_from<Transport>(text)) return {*t, ""};
  if (!is_backend_native(text) && has_schedule(text, Collective::Allreduce)) return {std::nullopt, text};
  std::string known = choice_names<Transport>();
  for (const std::string& s : allreduce_schedule_names())
    if (!is_backend_native(s)) known += ", " + s;
  throw InputError(
      fmt::format("{}: \"{}\" is neither a transport nor an allreduce schedule (one of {})", field, text, known),
      field);
}

std::string NativeReplay::name() const { return transport ? to_string(*transport) : schedule; }

Schedule schedule_for_call(const CollectiveCall& call, const std::string& schedule, int n, int ranks_per_node,
                           const NativeReplay& native_as) {
  return schedule_for_call(call, schedule, ScheduleParams{n, 0, ranks_per_node, 0}, native_as);
}

Schedule schedule_for_call(const CollectiveCall& call, const std::string& schedule, const ScheduleParams& where,
                           const NativeReplay& native_as) {
  const int n = where.world_size;
  if (call.collective == Collective::Push || call.collective == Collective::Pull)
    return make_schedule(schedule, ScheduleParams{n, call.count, where.ranks_per_node, where.servers}, call.collective);
  const CallShape shape = call_shape(call, n);
  if (is_backend_native(schedule) && native_as.transport == Transport::Nccl && where.nccl)  // NCCL's own choice
    return nccl_schedule(*where.nccl, shape.collective, n, shape.count, elem_bytes(call.type));
  return make_schedule(schedule_name_for_call(call, schedule, n, native_as),
                       ScheduleParams{n, shape.count, where.ranks_per_node, where.servers}, shape.collective);
}

CallShape call_shape(const CollectiveCall& call, int n) {
  if (call.collective == Collective::Allreduce || call.collective == Collective::ReduceScatter)
    return {call.collective, call.count};
  if (call.collective == Collective::AllGatherShards) return {Collective::AllGather, call.count};
  if (call.collective == Collective::AllGather)
    return {Collective::AllGather, call.count * static_cast<std::size_t>(n)};
  throw InternalError("call_shape: collective \"" + to_string(call.collective) + "\" has no schedule of its own");
}

std::string schedule_name_for_call(const CollectiveCall& call, const std::string& schedule, int n,
                                   const NativeReplay& native_as) {
  const bool gather = call.collective == Collective::AllGather || call.collective == Collective::AllGatherShards;
  std::string name = schedule;
  if (is_backend_native(schedule))
    name = native_as.transport ? native_schedule(*native_as.transport, gather ? Collective::AllGather : call.collective,
                                                 n, call.count, elem_bytes(call.type))
                               : native_as.schedule;
  return gather && !has_schedule(name, Collective::AllGather) ? "ring" : name;
}

nlohmann::json StepPlan::to_json() const {
  nlohmann::json j = {{"step", step}, {"sync", sync}, {"ops", nlohmann::json::array()}};
  for (const PlanOp& op : ops) {
    nlohmann::json o = {{"id", op.id},
                        {"kind", op_name(op.kind)},
                        {"index", op.index},
                        {"deps", op.deps},
                        {"stream", on_compute_stream(op.kind) ? "compute" : "comm"}};
    if (op.flops > 0) o["flops"] = op.flops;
    if (op.microbatch >= 0) o["microbatch"] = op.microbatch, o["chunk"] = op.chunk;
    if (op.peer >= 0) o["peer"] = op.peer, o["bytes"] = op.p2p_bytes, o["gradient"] = op.gradient;
    if (op.group == CommGroup::Tensor) o["group"] = "tensor", o["gradient"] = op.gradient;
    if (is_comm(op.kind)) {
      o["schedule"] = op.schedule;
      o["calls"] = nlohmann::json::array();
      auto work = [](const std::vector<LocalWork>& ws) {
        nlohmann::json out = nlohmann::json::array();
        for (const LocalWork& w : ws) {
          nlohmann::json j = {{"kind", work_name(w.kind)}, {"n", w.n}};
          if (w.c) j["c"] = w.c;
          if (w.k) j["k"] = w.k;
          if (w.type != ElemType::F32) j["type"] = elem_name(w.type);
          out.push_back(std::move(j));
        }
        return out;
      };
      for (const auto& c : op.calls)
        o["calls"].push_back({{"collective", c.collective},
                              {"type", elem_name(c.type)},
                              {"count", c.count},
                              {"label", c.label},
                              {"before", work(c.before)},
                              {"after", work(c.after)}});
    }
    j["ops"].push_back(std::move(o));
  }
  return j;
}

bool StepPlan::same_ops(const StepPlan& other) const {
  if (sync != other.sync || ops.size() != other.ops.size()) return false;
  nlohmann::json a = to_json(), b = other.to_json();
  a.erase("step");
  b.erase("step");
  return a == b;
}

}  // namespace ddplab
