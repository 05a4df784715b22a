// OpCosts (plan_replay.hpp): how long each op of a plan lasts on an idle host, from the measured times.
#include "plan_replay.hpp"

namespace ddplab::sim {

OpCosts op_costs(const StepPlan& plan, double compute_s, double model_fb_flops) {
  OpCosts c;
  // The model's own work sets the rate; a recomputed forward is extra time at that rate.
  for (const PlanOp& op : plan.ops) {
    if (op.kind == OpKind::Forward || op.kind == OpKind::Backward) c.fb_flops += op.flops;
    if (op.kind == OpKind::Forward) c.forward_flops += op.flops;
  }
  const double flops = model_fb_flops > 0 ? model_fb_flops : c.fb_flops;
  c.seconds_per_flop = flops > 0 ? compute_s / flops : 0.0;
  return c;
}

double OpCosts::compute_seconds(const PlanOp& op, const Strategy& s, int rank, double optimizer_s) const {
  if (is_compute_work(op.kind) && !backward_s.empty() && s.is_worker(rank))  // a calibration's per-layer times
    return op.kind == OpKind::Backward                  ? backward_s.at(static_cast<std::size_t>(op.index))
           : op.kind == OpKind::Forward && op.index < 0 ? forward_s
                                                        : forward_s * op.flops / forward_flops;
  if (is_compute_work(op.kind))  // compute_s split by FLOPs; a dedicated parameter server trains nothing
    return s.is_worker(rank) ? op.flops * seconds_per_flop : 0.0;
  // optimizer_s is for the whole model: each update gets its share of the elements it touches.
  const std::size_t total = s.bucketing().total;
  if (total == 0) return 0.0;
  if (op.kind == OpKind::GradNorm) {
    // One read of each gradient the rank updates: 4 of the 20 bytes per parameter an SGD update moves.
    std::size_t count = 0;
    for (const Bucket& b : s.bucketing().buckets)
      count += s.policy().shards == Shards::None ? b.count : s.shard(b.id, rank).count;
    return 0.2 * optimizer_s * static_cast<double>(count) / static_cast<double>(total);
  }
  if (!is_optimizer(op.kind)) return 0.0;
  const Bucket& b = s.bucketing().buckets.at(static_cast<std::size_t>(op.index));
  const std::size_t count = op.kind == OpKind::Optimizer ? b.count : s.shard(b.id, rank).count;
  return optimizer_s * static_cast<double>(count) / static_cast<double>(total);
}

}  // namespace ddplab::sim
