#include "ddplab/strategies/strategy.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>

#include "ddplab/core/error.hpp"
#include "ddplab/strategies/schedule.hpp"

namespace ddplab {

Strategy::Strategy(const StrategyConfig& config, const ModelSpec& model, const StrategyContext& ctx)
    : config_(config), model_(model), ctx_(ctx) {
  policy_ = find_policy(config.policy);
  if (!policy_) throw InputError("unknown policy \"" + config.policy + "\"");
  if (ctx.world_size < 1) throw InputError("world size must be >= 1");
  check_policy_options(config);
  // Sharding by servers is the parameter-server policies': their option says how many are dedicated.
  servers_ = policy_->shards == Shards::Servers ? static_cast<int>(policy_option(config, "ps_servers")) : 0;
  if (servers_ >= ctx.world_size)
    throw InputError(fmt::format("policy ps: ps_servers = {} dedicated servers leave no worker among {} ranks",
                                 servers_, ctx.world_size));
  codec_ = make_codec(config.codec, config.codec_options, ctx.seed);
  bucketize(reverse_parameter_order(model_));
}

std::size_t Strategy::largest_shard(const Bucket& b) const {
  return chunk_of(b.count, policy_->shards == Shards::Servers ? ps_layout().number() : ctx_.world_size, 0).count;
}

ElemType activation_type(const TrainConfig& train) {
  return train.precision == "bf16" ? ElemType::BF16 : train.precision == "fp16" ? ElemType::F16 : ElemType::F32;
}

StrategyContext strategy_context(const Scenario& sc, int world_size, int ranks_per_node) {
  StrategyContext ctx{
      world_size, ranks_per_node, sc.train.batch_size, sc.train.seed, sc.train.clip_grad_norm > 0, {}, 1, 1};
  ctx.activations = activation_type(sc.train);
  ctx.recompute = sc.train.recompute == "full";
  return ctx;
}

void Strategy::bucketize(const std::vector<int>& order) {
  // ZeRO-3's buckets are its parameter units: whole layers, as FSDP wraps whole modules.
  bucketing_ = policy_->bucketed
                   ? make_buckets(model_, order, config_.bucket_cap, config_.first_bucket_cap, 4, policy_->zero >= 3)
                   : make_buckets(model_, order, 0, 0);
}

bool Strategy::observe_ready_order(const std::vector<int>& order) {
  const std::vector<std::size_t> before = bucketing_.grad_offset;
  const std::size_t buckets_before = bucketing_.buckets.size();
  bucketize(order);
  rebuilt_ = true;
  return before != bucketing_.grad_offset || buckets_before != bucketing_.buckets.size();
}

PsLayout Strategy::ps_layout() const { return PsLayout{ctx_.world_size, servers_}; }

Chunk Strategy::shard(int bucket, int rank) const {
  const std::size_t count = bucketing_.buckets.at(static_cast<std::size_t>(bucket)).count;
  switch (policy_->shards) {
    case Shards::Ranks:
      return chunk_of(count, ctx_.world_size, rank);
    case Shards::Servers: {
      const PsLayout ps = ps_layout();
      const int s = ps.server_index(rank);
      return s < 0 ? Chunk{0, 0} : chunk_of(count, ps.number(), s);
    }
    case Shards::None:
      break;
  }
  return Chunk{0, 0};
}

std::vector<Chunk> Strategy::optimizer_ranges(int rank) const {
  if (policy_->shards == Shards::None) return {Chunk{0, model_.parameter_count()}};
  std::vector<Chunk> out;
  for (const Bucket& b : bucketing_.buckets)
    if (const Chunk c = shard(b.id, rank); c.count > 0) out.push_back({b.offset + c.offset, c.count});
  std::sort(out.begin(), out.end(), [](const Chunk& a, const Chunk& b) { return a.offset < b.offset; });
  return out;
}

ScheduleParams Strategy::schedule_params(CommGroup group, const NcclFabric* nccl) const {
  if (group == CommGroup::Tensor) return ScheduleParams{ctx_.tp, 0, ctx_.tp_ranks_per_node, 0, nccl};
  return ScheduleParams{ctx_.world_size, 0, ctx_.ranks_per_node, ps_layout().servers, nccl};
}

Schedule Strategy::schedule_for(const CollectiveCall& call, const std::string& schedule, const NativeReplay& native_as,
                                const NcclFabric* nccl, CommGroup group) const {
  return schedule_for_call(call, schedule, schedule_params(group, nccl), native_as);
}

bool Strategy::is_sync_step(std::int64_t step) const { return (step + 1) % config_.accumulate_steps == 0; }

std::vector<int> Strategy::add_compute_pass(StepPlan& plan, std::int64_t) const {
  if (ctx_.pipeline.schedule) return add_pipeline_pass(plan);
  return add_backward_pass(plan, add_forward_pass(plan));
}

int Strategy::add_forward_pass(StepPlan& plan, const std::vector<int>& cuts, const PassBefore& before,
                               const PassAfter& after) const {
  const std::vector<int> ends = model_.forward_chunks(cuts);
  const int last = static_cast<int>(model_.layers.size()) - 1;
  int prev = -1, first = 0;
  for (int end : ends) {
    std::vector<int> deps = before ? before(end) : std::vector<int>{};
    if (prev >= 0) deps.push_back(prev);
    std::sort(deps.begin(), deps.end());
    deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
    prev = add_op(plan, OpKind::Forward, ends.size() == 1 ? -1 : end, std::move(deps));
    PlanOp& op = plan.ops.back();
    for (int l = first; l <= end; ++l)
      op.flops += ctx_.batch_size * model_.layers[static_cast<std::size_t>(l)].forward_flops;
    first = end + 1;
    const int id = prev;
    // SyncBatchNorm: the moments the chunk took of the next layer are summed before the next chunk.
    if (end < last && model_.layers[static_cast<std::size_t>(end) + 1].sync_channels > 0)
      prev = add_op(plan, OpKind::SyncBnStats, end + 1, {prev});
    if (after) after(end, id);
  }
  return prev;
}

std::vector<int> Strategy::add_backward_pass(StepPlan& plan, int prev, const PassBefore& before,
                                             const PassAfter& after) const {
  if (ctx_.recompute && !model_.sync_layers().empty())
    throw InputError("train.recompute = \"full\": " + model_.name +
                     " has SyncBatchNorm layers, whose statistics a recomputed forward would take again");
  std::vector<int> backward(model_.layers.size(), -1);
  int grads = -1;  // the gradient sums the next layer down waits for
  for (int l = static_cast<int>(model_.layers.size()) - 1; l >= 0; --l) {
    // Recomputation: on reaching a block's last layer, the block's forward again.
    if (ctx_.recompute && model_.ends_block(l)) prev = add_op(plan, OpKind::Recompute, l, {prev});
    std::vector<int> deps = before ? before(l) : std::vector<int>{};
    deps.push_back(prev);
    if (grads >= 0) deps.push_back(grads);
    std::sort(deps.begin(), deps.end());
    deps.erase(std::unique(deps.begin(), deps.end()), deps.end());
    backward[static_cast<std::size_t>(l)] = prev = add_op(plan, OpKind::Backward, l, std::move(deps));
    grads = l > 0 && model_.layers[static_cast<std::size_t>(l)].sync_channels > 0
                ? add_op(plan, OpKind::SyncBnGrads, l, {prev})
                : -1;
    if (after) after(l, prev);
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
  const bool on_bucket = kind != OpKind::Forward && kind != OpKind::Backward && kind != OpKind::SyncBnStats &&
                         kind != OpKind::SyncBnGrads && kind != OpKind::PpSend && kind != OpKind::PpRecv &&
                         kind != OpKind::TpSync && kind != OpKind::Recompute;  // Reshard's index is a bucket's
  const Bucket* bucket = index >= 0 && on_bucket ? &bucketing_.buckets.at(static_cast<std::size_t>(index)) : nullptr;
  // The codec counts optimizer steps, not micro-steps.
  const std::int64_t sync_step = plan.step / config_.accumulate_steps;
  switch (kind) {
    case OpKind::Forward:  // its pass sets its FLOPs (add_forward_pass, add_pipeline_pass)
      break;
    case OpKind::Backward:
      op.flops = batch * model_.layers.at(static_cast<std::size_t>(index)).backward_flops;
      break;
    case OpKind::Optimizer:  // SGD with momentum and weight decay: a few FLOPs per element
      op.flops = 4.0 * static_cast<double>(bucket->count);
      break;
    case OpKind::ShardOptimizer:  // the largest shard (chunk 0), which sets the pace
      op.flops = 4.0 * static_cast<double>(largest_shard(*bucket));
      break;
    case OpKind::SyncGrads:
      op.calls = codec_->plan(bucket->layout, n, sync_step);
      break;
    case OpKind::SyncParams:
      op.calls = {{Collective::Allreduce, ElemType::F32, bucket->count, "params"}};
      break;
    // A ZeRO rank's shards travel in the training precision: under [train] precision = "fp16" or "bf16" its
    // gradients and parameters are 16-bit (DeepSpeed's fp16 partitions, FSDP's reduce_dtype and param_dtype);
    // the runtime trains in fp32 only.
    case OpKind::ReduceScatter:
      op.calls = {{Collective::ReduceScatter, ctx_.activations, bucket->count, "grads"}};
      break;
    case OpKind::AllGather:
      op.calls = {{Collective::AllGatherShards, ctx_.activations, bucket->count, "params"}};
      break;
    case OpKind::Push:
      op.calls = {{Collective::Push, ElemType::F32, bucket->count, "grads"}};
      break;
    case OpKind::Pull:
      op.calls = {{Collective::Pull, ElemType::F32, bucket->count, "params"}};
      break;
    case OpKind::GradNorm:  // a multiply-add per gradient this rank updates
      for (const Bucket& b : bucketing_.buckets)
        op.flops += 2.0 * static_cast<double>(policy_->shards == Shards::None ? b.count : largest_shard(b));
      break;
    case OpKind::NormSync:
      op.calls = {{Collective::Allreduce, ElemType::F32, 1, "grad_norm"}};
      break;
    case OpKind::SyncBnStats:
    case OpKind::SyncBnGrads: {
      const auto channels = static_cast<std::size_t>(model_.layers.at(static_cast<std::size_t>(index)).sync_channels);
      op.calls = {kind == OpKind::SyncBnStats
                      ? CollectiveCall{Collective::Allreduce, ElemType::F32, 2 * channels + 1, "bn_stats"}
                      : CollectiveCall{Collective::Allreduce, ElemType::F32, 2 * channels, "bn_grads"}};
      break;
    }
    case OpKind::PpSend:  // point to point: add_pipeline_pass sets the peer and bytes
    case OpKind::PpRecv:
    case OpKind::TpSync:  // add_pipeline_pass sets its call
      break;
    case OpKind::Reshard:  // gives memory back: no work
      break;
    case OpKind::Recompute: {  // a whole-batch pass's (a pipeline pass sets it): the block through `index`
      for (int l = std::max(model_.block_start(index), 0); l <= index; ++l)
        op.flops += batch * model_.layers[static_cast<std::size_t>(l)].forward_flops;
      break;
    }
  }
  // Push and pull are the parameter server's own wire pattern; the rest run on the configured schedule.
  // TP allreduces run on the backend's own collective, whatever the strategy's (DP) schedule.
  if (kind == OpKind::TpSync)
    op.schedule = "native", op.group = CommGroup::Tensor;
  else if (is_comm(kind) && kind != OpKind::PpSend && kind != OpKind::PpRecv)
    op.schedule = kind == OpKind::Push || kind == OpKind::Pull ? "ps" : config_.schedule;
  plan.ops.push_back(std::move(op));
  return plan.ops.back().id;
}

StepPlan Strategy::plan(std::int64_t step) const {
  StepPlan plan;
  plan.step = step;
  plan.sync = is_sync_step(step);
  if (!plan.sync) {
    // Gradient accumulation: no gradient sync and no optimizer until the K-th micro-step (DDP's no_sync()).
    if (policy_->accumulate)
      policy_->accumulate(*this, step, plan);
    else
      add_compute_pass(plan, step);
    return plan;
  }
  policy_->build(*this, step, plan);
  if (ctx_.clip_grad_norm) add_grad_norm(plan);
  return plan;
}

void Strategy::add_grad_norm(StepPlan& plan) const {
  const auto is_update = [](const PlanOp& op) {
    return op.kind == OpKind::Optimizer || op.kind == OpKind::ShardOptimizer;
  };
  // The updates and every op that waits for one (ZeRO-1's all-gather, local SGD's average) move behind
  // the norm; the rest keep their order.
  std::vector<char> behind(plan.ops.size(), 0);
  for (const PlanOp& op : plan.ops) {
    behind[static_cast<std::size_t>(op.id)] = is_update(op);
    for (int d : op.deps) behind[static_cast<std::size_t>(op.id)] |= behind[static_cast<std::size_t>(d)];
  }
  if (std::find(behind.begin(), behind.end(), 1) == behind.end()) return;
  std::vector<int> norm_deps;  // what the updates wait for outside `behind`: the gradients' syncs
  for (const PlanOp& op : plan.ops)
    if (is_update(op))
      for (int d : op.deps)
        if (!behind[static_cast<std::size_t>(d)] && std::find(norm_deps.begin(), norm_deps.end(), d) == norm_deps.end())
          norm_deps.push_back(d);
  std::vector<PlanOp> old = std::move(plan.ops);
  plan.ops.clear();
  std::vector<int> id(old.size(), -1);
  const auto keep = [&](PlanOp op) {
    const int next = static_cast<int>(plan.ops.size());
    id[static_cast<std::size_t>(op.id)] = next;
    op.id = next;
    for (int& d : op.deps) d = id[static_cast<std::size_t>(d)];
    plan.ops.push_back(std::move(op));
  };
  for (const PlanOp& op : old)
    if (!behind[static_cast<std::size_t>(op.id)]) keep(op);
  for (int& d : norm_deps) d = id[static_cast<std::size_t>(d)];
  std::sort(norm_deps.begin(), norm_deps.end());
  int norm = add_op(plan, OpKind::GradNorm, -1, norm_deps);
  // Ranks that update different shards add their sums; ranks that update everything have the same norm.
  if (policy_->shards != Shards::None) norm = add_op(plan, OpKind::NormSync, -1, {norm});
  for (const PlanOp& op : old) {
    if (!behind[static_cast<std::size_t>(op.id)]) continue;
    keep(op);
    if (is_update(op)) plan.ops.back().deps.push_back(norm);
  }
}

}  // namespace ddplab
