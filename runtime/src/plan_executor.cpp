#include "ddplab/runtime/plan_executor.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>
#include <tuple>

#include "ddplab/strategies/schedule.hpp"

namespace ddplab {
namespace {
using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }
}  // namespace

PlanExecutor::PlanExecutor(Communicator& comm, Ops& ops, Mlp& model, Strategy& strategy, const OptimizerConfig& opt)
    : comm_(comm), ops_(ops), model_(model), strategy_(strategy), opt_(opt), exec_(comm),
      momentum_(ops, model.num_params()) {
  // Parameters and gradients live bucket by bucket, so every bucket is one contiguous range.
  model_.set_offsets(strategy_.bucketing().grad_offset);
  thread_ = std::thread([this] { comm_loop(); });
}

PlanExecutor::~PlanExecutor() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
}

void PlanExecutor::comm_loop() {
  for (;;) {
    const PlanOp* op = nullptr;
    {
      std::unique_lock<std::mutex> lock(mu_);
      cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
      if (stop_) return;
      op = queue_.front();
      queue_.pop_front();
      // A bucket's collective waits for the backward op that completes the bucket.
      cv_.wait(lock, [&] {
        for (int d : op->deps)
          if (!done_[static_cast<std::size_t>(d)]) return false;
        return true;
      });
    }
    OpRecord& out = (*records_)[static_cast<std::size_t>(op->id)];
    out.start_s = since(t0_);
    try {
      if (!comm_error_) run_comm(*op, *step_rec_, out);
    } catch (...) {
      std::lock_guard<std::mutex> lock(mu_);
      comm_error_ = std::current_exception();
    }
    out.end_s = since(t0_);
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_[static_cast<std::size_t>(op->id)] = 1;
    }
    cv_.notify_all();
  }
}

void PlanExecutor::collective(const CollectiveCall& call, const std::string& schedule, void* buf, std::uint64_t& bytes) {
  const int n = comm_.size();
  if (n == 1) return;  // every collective of one rank is the identity
  if (schedule == "native") {
    // The backend's own collective. Its wire bytes are nominal: those of a bandwidth-optimal algorithm
    // (nccl-tests' bus bytes). Schedules below count their bytes exactly.
    const double nd = n, total = static_cast<double>(call.count * elem_bytes(call.type));
    double factor = 0;
    if (call.collective == "allreduce") {
      comm_.allreduce_sum(buf, call.count, call.type);
      factor = 2.0 * (nd - 1) / nd;
    } else if (call.collective == "all_gather") {
      comm_.all_gather(buf, call.count * elem_bytes(call.type));
      factor = nd - 1;
    } else if (call.collective == "reduce_scatter") {
      comm_.reduce_scatter_sum(static_cast<float*>(buf), call.count);
      factor = (nd - 1) / nd;
    } else if (call.collective == "all_gather_shards") {
      comm_.all_gather_shards(static_cast<float*>(buf), call.count);
      factor = (nd - 1) / nd;
    } else {
      throw std::invalid_argument("plan names an unknown collective \"" + call.collective + "\"");
    }
    bytes += static_cast<std::uint64_t>(std::llround(factor * total));
    return;
  }
  // A schedule from strategies/, over point-to-point.
  const Schedule s = strategy_.schedule_for(call, schedule);
  const std::uint64_t before = exec_.bytes_sent();
  exec_.run(s, buf, call.type);
  bytes += exec_.bytes_sent() - before;
}

void PlanExecutor::run_comm(const PlanOp& op, StepRecord&, OpRecord& out) {
  const Bucket& b = strategy_.bucketing().buckets.at(static_cast<std::size_t>(op.index));
  const int n = comm_.size();
  const std::int64_t sync_step = step_ / strategy_.config().accumulate_steps;
  float* grads = model_.grads() + b.offset;
  float* params = model_.params() + b.offset;
  const std::string& schedule = op.schedule;
  switch (op.kind) {
    case OpKind::SyncGrads: {
      // The codec issues exactly the calls the plan announced (the simulator replays those).
      std::size_t call_no = 0;
      strategy_.codec().run(b.layout, grads, n, sync_step, [&](const CollectiveCall& call, void* buf) {
        if (call_no >= op.calls.size() || op.calls[call_no].count != call.count || op.calls[call_no].type != call.type ||
            op.calls[call_no].collective != call.collective)
          throw std::logic_error("codec " + strategy_.codec().name() + " issued a collective its plan did not announce");
        ++call_no;
        collective(call, schedule, buf, out.bytes);
      });
      if (call_no != op.calls.size())
        throw std::logic_error("codec " + strategy_.codec().name() + " issued fewer collectives than planned");
      break;
    }
    case OpKind::SyncParams:
      collective(op.calls.at(0), schedule, params, out.bytes);
      ops_.scale(params, b.count, 1.0f / static_cast<float>(n));
      break;
    case OpKind::ReduceScatter: {
      collective(op.calls.at(0), schedule, grads, out.bytes);
      const Chunk mine = strategy_.shard(b.id, comm_.rank());
      ops_.scale(grads + mine.offset, mine.count, 1.0f / static_cast<float>(n));
      break;
    }
    case OpKind::Push: {
      const Chunk mine = strategy_.shard(b.id, comm_.rank());
      // A dedicated server has no gradients of its own: its shard only collects the workers' sum.
      if (!strategy_.is_worker(comm_.rank())) ops_.scale(grads + mine.offset, mine.count, 0.0f);
      collective(op.calls.at(0), schedule, grads, out.bytes);
      ops_.scale(grads + mine.offset, mine.count, 1.0f / static_cast<float>(strategy_.workers()));
      break;
    }
    case OpKind::AllGather:
    case OpKind::Pull:
      collective(op.calls.at(0), schedule, params, out.bytes);
      break;
    default:
      throw std::logic_error(std::string("not a comm op: ") + op_name(op.kind));
  }
}

void PlanExecutor::run_compute(const PlanOp& op, const StepPlan&, StepRecord& rec) {
  const int k = strategy_.config().accumulate_steps;
  const bool first_update = step_ / k == 0;
  auto update = [&](std::size_t offset, std::size_t count) {
    // Accumulated micro-step gradients are summed; their mean is what the optimizer sees.
    if (k > 1) ops_.scale(model_.grads() + offset, count, 1.0f / static_cast<float>(k));
    ops_.sgd_momentum(model_.params() + offset, model_.grads() + offset, momentum_.data() + offset, count, opt_.lr,
                      opt_.momentum, opt_.weight_decay, first_update);
  };
  // A dedicated parameter server trains nothing: it has no batch, no loss and no gradients to compute.
  const bool worker = strategy_.is_worker(comm_.rank());
  switch (op.kind) {
    case OpKind::Forward:
      if (!worker) {
        rec.loss = std::nan("");
        break;
      }
      model_.forward(x_, batch_);
      rec.loss = model_.loss_grad(y_);
      break;
    case OpKind::Backward:
      if (worker) model_.backward_layer(op.index, micro_in_window_ > 0);
      if (!first_sync_done_) {
        // Gradient-ready order, for DDP's one-time bucket rebuild. A server records the plan's order,
        // which is the workers' order for this model, so its buckets are rebuilt exactly as theirs.
        observed_order_.push_back(2 * op.index);
        observed_order_.push_back(2 * op.index + 1);
      }
      break;
    case OpKind::Optimizer: {
      const Bucket& b = strategy_.bucketing().buckets.at(static_cast<std::size_t>(op.index));
      update(b.offset, b.count);
      break;
    }
    case OpKind::ShardOptimizer: {
      const Bucket& b = strategy_.bucketing().buckets.at(static_cast<std::size_t>(op.index));
      const Chunk mine = strategy_.shard(b.id, comm_.rank());
      update(b.offset + mine.offset, mine.count);
      break;
    }
    default:
      throw std::logic_error(std::string("not a compute op: ") + op_name(op.kind));
  }
  ops_.synchronize();
}

StepRecord PlanExecutor::run_step(std::int64_t step, const float* x, const std::int32_t* y, int batch) {
  const StepPlan plan = strategy_.plan(step);
  StepRecord rec;
  rec.ops.resize(plan.ops.size());
  for (std::size_t i = 0; i < plan.ops.size(); ++i) rec.ops[i] = {plan.ops[i].kind, plan.ops[i].index};
  step_ = step;
  x_ = x;
  y_ = y;
  batch_ = batch;
  exec_.reset_counters();
  if (!first_sync_done_) observed_order_.clear();  // the order of this micro-step's backward
  t0_ = Clock::now();
  rec.start = t0_;
  {
    std::lock_guard<std::mutex> lock(mu_);
    done_.assign(plan.ops.size(), 0);
    records_ = &rec.ops;
    step_rec_ = &rec;
    comm_error_ = nullptr;
  }
  auto wait_for = [&](const std::vector<int>& deps) {
    std::unique_lock<std::mutex> lock(mu_);
    const auto before = Clock::now();
    cv_.wait(lock, [&] {
      if (comm_error_) return true;
      for (int d : deps)
        if (!done_[static_cast<std::size_t>(d)]) return false;
      return true;
    });
    // Compute ops only wait on comm ops (compute ops before them ran on this thread already).
    rec.exposed_comm_s += std::chrono::duration<double>(Clock::now() - before).count();
  };
  // Only compute ops that a comm op waits for need to wake the comm thread; waking it for every op would
  // let it preempt compute on a machine with no spare core.
  std::vector<char> wakes_comm(plan.ops.size(), 0);
  for (const PlanOp& op : plan.ops)
    if (is_comm(op.kind))
      for (int d : op.deps) wakes_comm[static_cast<std::size_t>(d)] = 1;
  for (const PlanOp& op : plan.ops) {
    if (is_comm(op.kind)) {
      {
        std::lock_guard<std::mutex> lock(mu_);
        queue_.push_back(&op);
      }
      cv_.notify_all();
      continue;
    }
    wait_for(op.deps);
    if (comm_error_) break;
    OpRecord& r = rec.ops[static_cast<std::size_t>(op.id)];
    r.start_s = since(t0_);
    run_compute(op, plan, rec);
    r.end_s = since(t0_);
    {
      std::lock_guard<std::mutex> lock(mu_);
      done_[static_cast<std::size_t>(op.id)] = 1;
    }
    if (wakes_comm[static_cast<std::size_t>(op.id)]) cv_.notify_all();
  }
  // Comm that is still running when compute is done is exposed too.
  std::vector<int> all(plan.ops.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
  if (!comm_error_) wait_for(all);
  {
    // Let the comm thread drain what it took before rethrowing its error.
    std::unique_lock<std::mutex> lock(mu_);
    queue_.clear();
    if (comm_error_) std::rethrow_exception(comm_error_);
  }
  rec.step_s = since(t0_);
  for (const OpRecord& r : rec.ops) {
    const double d = r.end_s - r.start_s;
    if (r.kind == OpKind::Forward || r.kind == OpKind::Backward) rec.compute_s += d;
    else if (r.kind == OpKind::Optimizer || r.kind == OpKind::ShardOptimizer) rec.optimizer_s += d;
    else rec.comm_s += d;
    rec.bytes_sent += r.bytes;
  }
  rec.bytes_to_peer = exec_.bytes_to_peer();

  if (plan.sync) {
    micro_in_window_ = 0;
    if (!first_sync_done_) {
      first_sync_done_ = true;
      if (strategy_.observe_ready_order(observed_order_)) apply_layout();
    }
  } else {
    ++micro_in_window_;
  }
  return rec;
}

void PlanExecutor::apply_layout() {
  // Move the optimizer state with the parameters: read it in the old layout, write it in the new one.
  const std::vector<ParamInfo> old_info = model_.param_info();
  std::vector<float> before(model_.num_params()), after(model_.num_params());
  ops_.to_host(before.data(), momentum_.data(), before.size());
  const auto& offsets = strategy_.bucketing().grad_offset;
  for (std::size_t i = 0; i < old_info.size(); ++i)
    std::copy_n(before.begin() + static_cast<std::ptrdiff_t>(old_info[i].offset), old_info[i].count,
                after.begin() + static_cast<std::ptrdiff_t>(offsets[i]));
  ops_.to_device(momentum_.data(), after.data(), after.size());
  model_.set_offsets(offsets);
}

void PlanExecutor::average_parameters() {
  std::uint64_t bytes = 0;
  const CollectiveCall call{"allreduce", ElemType::F32, model_.num_params(), 0, "params"};
  collective(call, strategy_.config().schedule, model_.params(), bytes);
  ops_.scale(model_.params(), model_.num_params(), 1.0f / static_cast<float>(comm_.size()));
}

}  // namespace ddplab
