#include "ddplab/strategies/strategy.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "ddplab/strategies/schedule.hpp"

namespace ddplab {

Strategy::Strategy(const StrategyConfig& config, const ModelSpec& model, const StrategyContext& ctx)
    : config_(config), model_(model), ctx_(ctx) {
  policy_ = find_policy(config.policy);
  if (!policy_) throw std::invalid_argument("unknown policy \"" + config.policy + "\"");
  if (ctx.world_size < 1) throw std::invalid_argument("world size must be >= 1");
  check_policy_options(config);
  // Sharding by servers is the parameter-server policies': their option says how many are dedicated.
  servers_ = policy_->shards == Shards::Servers ? static_cast<int>(policy_option(config, "ps_servers")) : 0;
  if (servers_ >= ctx.world_size)
    throw std::invalid_argument(fmt::format("policy ps: ps_servers = {} dedicated servers leave no worker among {} ranks",
                                            servers_, ctx.world_size));
  codec_ = make_codec(config.codec, config.codec_options, ctx.seed);
  bucketize(reverse_parameter_order(model_));
}

void Strategy::bucketize(const std::vector<int>& order) {
  bucketing_ = policy_->bucketed ? make_buckets(model_, order, config_.bucket_cap, config_.first_bucket_cap)
                                 : make_buckets(model_, order, 0, 0);
}

bool Strategy::observe_ready_order(const std::vector<int>& order) {
  const std::vector<std::size_t> before = bucketing_.grad_offset;
  const std::size_t buckets_before = bucketing_.buckets.size();
  bucketize(order);
  rebuilt_ = true;
  return before != bucketing_.grad_offset || buckets_before != bucketing_.buckets.size();
}

PsLayout Strategy::ps_layout() const {
  return PsLayout{ctx_.world_size, servers_};
}

Chunk Strategy::shard(int bucket, int rank) const {
  const std::size_t count = bucketing_.buckets.at(static_cast<std::size_t>(bucket)).count;
  switch (policy_->shards) {
    case Shards::Ranks: return chunk_of(count, ctx_.world_size, rank);
    case Shards::Servers: {
      const PsLayout ps = ps_layout();
      const int s = ps.server_index(rank);
      return s < 0 ? Chunk{0, 0} : chunk_of(count, ps.number(), s);
    }
    case Shards::None: break;
  }
  return Chunk{0, 0};
}

Schedule Strategy::schedule_for(const CollectiveCall& call, const std::string& schedule, const std::string& native_as,
                                const NcclFabric* nccl) const {
  return schedule_for_call(
      call, schedule, ScheduleParams{ctx_.world_size, 0, ctx_.ranks_per_node, ps_layout().servers, nccl}, native_as);
}

bool Strategy::is_sync_step(std::int64_t step) const { return (step + 1) % config_.accumulate_steps == 0; }

std::vector<int> Strategy::add_compute_pass(StepPlan& plan, std::int64_t) const {
  const int fwd = add_op(plan, OpKind::Forward, -1, {});
  std::vector<int> backward(model_.layers.size(), -1);
  int prev = fwd;
  for (int l = static_cast<int>(model_.layers.size()) - 1; l >= 0; --l) {
    backward[static_cast<std::size_t>(l)] = add_op(plan, OpKind::Backward, l, {prev});
    prev = backward[static_cast<std::size_t>(l)];
  }
  return backward;
}

int Strategy::ready_op(const std::vector<int>& backward_ids, int bucket) const {
  // Backward runs from the last layer down, so the bucket is complete after its lowest layer.
  int lowest = static_cast<int>(model_.layers.size());
  for (int p : bucketing_.buckets.at(static_cast<std::size_t>(bucket)).params)
    lowest = std::min(lowest, model_.params[static_cast<std::size_t>(p)].layer);
  return backward_ids.at(static_cast<std::size_t>(lowest));
}

int Strategy::add_op(StepPlan& plan, OpKind kind, int index, std::vector<int> deps) const {
  PlanOp op;
  op.id = static_cast<int>(plan.ops.size());
  op.kind = kind;
  op.index = index;
  op.deps = std::move(deps);
  const double batch = ctx_.batch_size;
  const int n = ctx_.world_size;
  const Bucket* bucket = (index >= 0 && kind != OpKind::Backward) ? &bucketing_.buckets.at(static_cast<std::size_t>(index)) : nullptr;
  // The codec counts optimizer steps, not micro-steps.
  const std::int64_t sync_step = plan.step / config_.accumulate_steps;
  switch (kind) {
    case OpKind::Forward:
      for (const auto& l : model_.layers) op.flops += batch * l.forward_flops;
      break;
    case OpKind::Backward:
      op.flops = batch * model_.layers.at(static_cast<std::size_t>(index)).backward_flops;
      break;
    case OpKind::Optimizer:  // SGD with momentum and weight decay: a few FLOPs per element
      op.flops = 4.0 * static_cast<double>(bucket->count);
      break;
    case OpKind::ShardOptimizer:  // the largest shard (chunk 0), which sets the pace
      op.flops = 4.0 * static_cast<double>(chunk_of(bucket->count, policy_->shards == Shards::Servers ? ps_layout().number() : n, 0).count);
      break;
    case OpKind::SyncGrads:
      op.calls = codec_->plan(bucket->layout, n, sync_step);
      break;
    case OpKind::SyncParams:
      op.calls = {{"allreduce", ElemType::F32, bucket->count, "params"}};
      break;
    case OpKind::ReduceScatter:
      op.calls = {{"reduce_scatter", ElemType::F32, bucket->count, "grads"}};
      break;
    case OpKind::AllGather:
      op.calls = {{"all_gather_shards", ElemType::F32, bucket->count, "params"}};
      break;
    case OpKind::Push:
      op.calls = {{"push", ElemType::F32, bucket->count, "grads"}};
      break;
    case OpKind::Pull:
      op.calls = {{"pull", ElemType::F32, bucket->count, "params"}};
      break;
  }
  // Push and pull are the parameter server's own wire pattern; the rest run on the configured schedule.
  if (is_comm(kind)) op.schedule = kind == OpKind::Push || kind == OpKind::Pull ? "ps" : config_.schedule;
  plan.ops.push_back(std::move(op));
  return plan.ops.back().id;
}

StepPlan Strategy::plan(std::int64_t step) const {
  StepPlan plan;
  plan.step = step;
  plan.sync = is_sync_step(step);
  if (!plan.sync) {
    // Gradient accumulation: no communication and no optimizer until the K-th micro-step (DDP's no_sync()).
    add_compute_pass(plan, step);
    return plan;
  }
  policy_->build(*this, step, plan);
  return plan;
}

}  // namespace ddplab
