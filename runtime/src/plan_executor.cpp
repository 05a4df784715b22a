#include "ddplab/runtime/plan_executor.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <stdexcept>
#include <tuple>

#include <fmt/format.h>

#include "ddplab/core/error.hpp"
#include "ddplab/strategies/schedule.hpp"

namespace ddplab {
namespace {
using Clock = std::chrono::steady_clock;
double since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }
}  // namespace

PlanExecutor::PlanExecutor(Communicator& comm, Ops& ops, Model& model, Strategy& strategy, const OptimizerConfig& opt)
    : comm_(comm),
      ops_(ops),
      model_(model),
      strategy_(strategy),
      opt_(opt),
      exec_(comm),
      optimizer_(ops, opt, strategy.optimizer_ranges(comm.rank())),
      staged_(ops.device_memory() && comm.chunk_memory() == nullptr) {
  if ((opt.clip_grad_norm > 0) != strategy_.context().clip_grad_norm)
    throw InternalError(
        "PlanExecutor: clip_grad_norm must be set in both the optimizer and the strategy's context "
        "(whose plan then holds the norm's ops), or in neither");
  if (strategy_.policy().zero >= 2 && !ops.can_release())
    throw InputError(fmt::format(
        "policy \"{}\" gives back {}, which backend \"{}\" cannot do (its buffers are whole allocations); it runs on "
        "the cpu backend",
        strategy_.policy().name, released_memory(strategy_.policy()), ops.name()));
  if (!staged_) norm_buf_ = DeviceBuffer(ops, 1);
  // Parameters and gradients live bucket by bucket, so every bucket is one contiguous range.
  model_.set_offsets(strategy_.bucketing().grad_offset);
  if (staged_) host_ = static_cast<float*>(ops_.alloc_host(model_.num_params() * sizeof(float)));
  thread_ = std::thread([this] { comm_loop(); });
}

PlanExecutor::~PlanExecutor() {
  {
    std::lock_guard<std::mutex> lock(mu_);
    stop_ = true;
  }
  cv_.notify_all();
  thread_.join();
  if (host_) ops_.free_host(host_);
}

void PlanExecutor::scale(float* x, std::size_t n, float alpha) {
  if (!staged_) return ops_.scale(x, n, alpha);
  for (std::size_t i = 0; i < n; ++i) x[i] *= alpha;
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
      // A bucket's collective waits for the backward op that completes the bucket (or for the step to end
      // without it: an error here or on the compute thread, or the executor closing).
      cv_.wait(lock, [&] {
        if (stop_ || aborted_ || comm_error_) return true;
        for (int d : op->deps)
          if (!done_[static_cast<std::size_t>(d)]) return false;
        return true;
      });
      if (stop_) return;
      if (aborted_) continue;
    }
    OpRecord& out = (*records_)[static_cast<std::size_t>(op->id)];
    out.start_s = since(t0_);
    try {
      ops_.bind_thread();           // this thread's device calls (reduce kernels, events) go to the backend's device
      comm_.take_device_seconds();  // restart the count: this op's transfers only
      comm_.annotate(std::string(op_name(op->kind)) +
                     (op->index >= 0 ? " #" + std::to_string(op->index) : std::string()) + " on " + op->schedule);
      if (!comm_error_) run_comm(*op, *step_rec_, out);
      out.device_s = comm_.take_device_seconds();
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

void PlanExecutor::update(std::size_t offset, std::size_t count, std::vector<TensorSlice> tensors) {
  const int k = strategy_.config().accumulate_steps;
  const std::int64_t t = step_ / k;  // updates before this one
  // Accumulated micro-step gradients are summed; their mean is what the optimizer sees, clipped (as
  // torch.nn.utils.clip_grad_norm_) to a global norm of at most clip_grad_norm.
  double scale = 1.0 / k;
  if (opt_.clip_grad_norm > 0) scale *= std::min(1.0, opt_.clip_grad_norm / (std::sqrt(grad_sq_) / k + 1e-6));
  optimizer_.update(model_.params(), model_.grads(), offset, count, std::move(tensors), t + 1,
                    static_cast<float>(opt_.lr.lr(t)), static_cast<float>(scale));
}

double PlanExecutor::sum_squares_to_update() const {
  double sum = 0;
  for (const PlanOp& op : plan_.ops) {
    if (op.kind != OpKind::Optimizer && op.kind != OpKind::ShardOptimizer) continue;
    const Bucket& b = strategy_.bucketing().buckets.at(static_cast<std::size_t>(op.index));
    const Chunk part = op.kind == OpKind::Optimizer ? Chunk{0, b.count} : strategy_.shard(b.id, comm_.rank());
    sum += ops_.codec_compute().sum_squares(model_.grads() + b.offset + part.offset, part.count);
  }
  return sum;
}

void PlanExecutor::run_compute(const PlanOp& op, const StepPlan&, StepRecord& rec) {
  // A dedicated parameter server trains nothing: it has no batch, no loss and no gradients to compute.
  // A worker without a batch has run out of data (join): it syncs zero gradients, or adds none to a window.
  const bool worker = strategy_.is_worker(comm_.rank());
  const bool shadow = worker && batch_ == 0;
  switch (op.kind) {
    case OpKind::Forward: {
      if (op.microbatch >= 0) {
        passes_->forward(op.microbatch, op.chunk, op.index);
        break;
      }
      // The whole pass (index -1), or its chunk through layer `index` from where the last chunk ended.
      const int first = op.index < 0 ? 0 : forward_from_;
      const int last = op.index < 0 ? model_.num_layers() - 1 : op.index;
      forward_from_ = last + 1;
      if (!worker || shadow) {
        rec.loss = std::nan("");
        // The ranks' summed batch-norm moments move every replica's running statistics alike.
        if (first > 0 && model_.spec().layers.at(static_cast<std::size_t>(first)).sync_channels > 0)
          model_.absorb_sync_stats(first);
        break;
      }
      if (first == 0) model_.begin_forward(x_, batch_);
      model_.forward_through(last);
      if (last + 1 == model_.num_layers()) rec.loss = model_.loss_grad(y_);
      break;
    }
    case OpKind::Backward:
      if (op.microbatch >= 0) {
        // The first microbatch's backward of a layer replaces its gradients (but within an accumulation
        // window); the others add to them.
        char& seen = backward_seen_.at(static_cast<std::size_t>(op.index));
        passes_->backward(op.microbatch, op.index, micro_in_window_ > 0 || seen);
        seen = 1;
      } else if (shadow && micro_in_window_ == 0) {
        const auto& info = model_.param_info();
        for (int p : model_.layer_params(op.index)) {
          const ParamInfo& pi = info.at(static_cast<std::size_t>(p));
          ops_.codec_compute().fill(model_.grads() + pi.offset, pi.count, 0.0f);
        }
      } else if (worker && !shadow) {
        model_.backward_layer(op.index, micro_in_window_ > 0);
      }
      if (!first_sync_done_) {
        // Gradient-ready order, for DDP's one-time bucket rebuild. A server records the plan's order,
        // which is the workers' order for this model, so its buckets are rebuilt exactly as theirs.
        for (int p : model_.layer_params(op.index)) observed_order_.push_back(p);
      }
      break;
    case OpKind::Optimizer: {
      const Bucket& b = strategy_.bucketing().buckets.at(static_cast<std::size_t>(op.index));
      update(b.offset, b.count, b.layout.tensors);
      break;
    }
    case OpKind::ShardOptimizer: {  // a chunk cuts tensors: per-tensor optimizers are refused with these policies
      const Bucket& b = strategy_.bucketing().buckets.at(static_cast<std::size_t>(op.index));
      const Chunk mine = strategy_.shard(b.id, comm_.rank());
      update(b.offset + mine.offset, mine.count, {});
      break;
    }
    case OpKind::GradNorm:
      grad_sq_ = sum_squares_to_update();
      break;
    case OpKind::Reshard:  // ZeRO-3: the bucket's parameters outside this rank's shard, until its next gather
      release_outside_shard(model_.params(), op.index);
      break;
    case OpKind::TpSync:
      if (!tensor_) throw InternalError("PlanExecutor: a TP plan without set_groups");
      run_tp_sync(op, rec.ops[static_cast<std::size_t>(op.id)]);
      break;
    default:
      throw InternalError(std::string("not a compute op: ") + op_name(op.kind));
  }
  // No synchronize: a device backend's kernels stay queued. Comm ops are ordered after them on the device
  // (NCCL's stream waits on the compute stream; staging's to_host waits for it), and run_step times them
  // with device marks.
}

CodecCompute& PlanExecutor::bucket_compute() { return staged_ ? host_codec_compute() : ops_.codec_compute(); }

void PlanExecutor::set_grad_divisor(int ranks) {
  if (ranks < 1 || ranks > comm_.size())
    throw InternalError("PlanExecutor::set_grad_divisor: " + std::to_string(ranks) + " ranks of " +
                        std::to_string(comm_.size()));
  grad_divisor_ = ranks;
}

void PlanExecutor::set_compute_factor(double factor) {
  slowdown_ = Slowdown(factor);
  slowed_codec_ = slowdown_.active() ? slowed_codec_compute(bucket_compute(), slowdown_) : nullptr;
}

StepRecord PlanExecutor::run_step(std::int64_t step, const float* x, const std::int32_t* y, int batch) {
  x_ = x;
  y_ = y;
  batch_ = batch;
  if (!first_sync_done_) observed_order_.clear();  // the order of this micro-step's backward
  if (strategy_.context().pipeline.schedule && !passes_)
    throw InternalError("PlanExecutor: a pipeline or TP plan needs set_groups before its first step");
  if (passes_) {
    passes_->begin_step(x, y, batch, strategy_.context().pipeline.shape.microbatches);
    backward_seen_.assign(static_cast<std::size_t>(model_.num_layers()), 0);
  }
  StepRecord rec = execute(strategy_.plan(step));
  if (passes_) rec.loss = passes_->step_loss();
  if (passes_ && !first_sync_done_) {
    // A parameter's gradient is ready after its last microbatch's backward: the order of last sightings.
    std::vector<int> last;
    std::vector<char> seen(model_.param_info().size(), 0);
    for (auto it = observed_order_.rbegin(); it != observed_order_.rend(); ++it)
      if (!seen[static_cast<std::size_t>(*it)]) seen[static_cast<std::size_t>(*it)] = 1, last.push_back(*it);
    observed_order_.assign(last.rbegin(), last.rend());
  }
  if (plan_.sync) {
    micro_in_window_ = 0;
    if (!first_sync_done_) {
      first_sync_done_ = true;
      // ZeRO-3: the parameters whole in the layout they are in, then given back in the one they end in.
      gather_parameters();
      if (strategy_.observe_ready_order(observed_order_)) apply_layout();
      if (strategy_.policy().zero >= 3) {
        for (const Bucket& b : strategy_.bucketing().buckets) release_outside_shard(model_.params(), b.id);
        whole_ = false;
      }
    }
  } else {
    ++micro_in_window_;
  }
  return rec;
}

StepRecord PlanExecutor::finish(std::int64_t step) {
  x_ = nullptr;
  y_ = nullptr;
  batch_ = 0;
  return execute(strategy_.finish_plan(step));
}

namespace {
// The comm ops the comm thread runs (a TP allreduce runs on the compute thread, blocking its pass).
bool on_comm_thread(const PlanOp& op) { return is_comm(op.kind) && !on_compute_stream(op.kind); }
}  // namespace

StepRecord PlanExecutor::execute(StepPlan next) {
  start_plan(std::move(next));
  const std::vector<char> wakes_comm = queue_comm_ops();
  run_compute_ops(wakes_comm);
  finish_comm();
  close_record();
  return std::move(current_);  // current_ is done with: every comm op of the step has finished
}

void PlanExecutor::start_plan(StepPlan next) {
  plan_ = std::move(next);
  current_ = StepRecord{};
  StepRecord& rec = current_;
  rec.ops.resize(plan_.ops.size());
  for (std::size_t i = 0; i < plan_.ops.size(); ++i) rec.ops[i] = {plan_.ops[i].kind, plan_.ops[i].index};
  step_ = plan_.step;
  forward_from_ = 0;
  whole_ = false;  // ZeRO-3's Reshards give the parameters back
  exec_.reset_counters();
  // Device backends: compute ops are timed by device marks (CUDA events), host backends by the clock.
  marks_.assign(ops_.device_memory() ? plan_.ops.size() : 0, {-1, -1});
  t0_ = Clock::now();
  rec.start = t0_;
  step_mark_ = -1;
  if (ops_.device_memory()) {
    ops_.reset_marks();
    step_mark_ = ops_.mark();
  }
  std::lock_guard<std::mutex> lock(mu_);
  done_.assign(plan_.ops.size(), 0);
  records_ = &rec.ops;
  step_rec_ = &rec;
  comm_error_ = nullptr;
  aborted_ = false;
}

void PlanExecutor::wait_for_deps(const std::vector<int>& deps) {
  std::unique_lock<std::mutex> lock(mu_);
  const auto before = Clock::now();
  cv_.wait(lock, [&] {
    if (comm_error_) return true;
    for (int d : deps)
      if (!done_[static_cast<std::size_t>(d)]) return false;
    return true;
  });
  // Compute ops only wait on comm ops (compute ops before them ran on this thread already).
  current_.exposed_comm_s += std::chrono::duration<double>(Clock::now() - before).count();
}

std::vector<char> PlanExecutor::queue_comm_ops() {
  // Only compute ops that a comm op waits for need to wake the comm thread; waking it for every op would
  // let it preempt compute on a machine with no spare core.
  std::vector<char> wakes_comm(plan_.ops.size(), 0);
  for (const PlanOp& op : plan_.ops)
    if (on_comm_thread(op))
      for (int d : op.deps) wakes_comm[static_cast<std::size_t>(d)] = 1;
  // Every comm op goes to the comm thread now, in plan order; it starts each one once its deps are done. A
  // plan lists a bucket's collective after the whole backward pass (policies add compute first), so queueing
  // it only when this loop reached it would start it after backward: no overlap at all. The simulator's comm
  // stream has the same rule (plan_replay.cpp).
  {
    std::lock_guard<std::mutex> lock(mu_);
    for (const PlanOp& op : plan_.ops)
      if (on_comm_thread(op)) queue_.push_back(&op);
  }
  cv_.notify_all();
  return wakes_comm;
}

void PlanExecutor::run_compute_ops(const std::vector<char>& wakes_comm) {
  const bool device_timing = ops_.device_memory();
  try {
    for (const PlanOp& op : plan_.ops) {
      if (on_comm_thread(op)) continue;
      wait_for_deps(op.deps);
      if (comm_error_) break;
      OpRecord& r = current_.ops[static_cast<std::size_t>(op.id)];
      r.start_s = since(t0_);
      if (device_timing) marks_[static_cast<std::size_t>(op.id)].first = ops_.mark();
      const auto op_start = Slowdown::Clock::now();
      run_compute(op, plan_, current_);
      if (slowdown_.active()) {
        if (device_timing) ops_.synchronize();
        slowdown_.stretch(op_start);
      }
      if (device_timing) marks_[static_cast<std::size_t>(op.id)].second = ops_.mark();
      r.end_s = since(t0_);
      {
        std::lock_guard<std::mutex> lock(mu_);
        done_[static_cast<std::size_t>(op.id)] = 1;
      }
      if (wakes_comm[static_cast<std::size_t>(op.id)]) cv_.notify_all();
    }
  } catch (...) {
    // Comm ops still queued wait for compute that will not happen: drop them.
    {
      std::lock_guard<std::mutex> lock(mu_);
      aborted_ = true;
      queue_.clear();
    }
    cv_.notify_all();
    throw;
  }
}

void PlanExecutor::finish_comm() {
  // Comm that is still running when compute is done is exposed too.
  std::vector<int> all(plan_.ops.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
  if (!comm_error_) wait_for_deps(all);
  {
    // Let the comm thread drain what it took before rethrowing its error.
    std::unique_lock<std::mutex> lock(mu_);
    queue_.clear();
    if (comm_error_) std::rethrow_exception(comm_error_);
  }
  if (pipeline_) {  // the step's pipeline sends, whose buffers the next step reuses
    const auto before = Clock::now();
    pipeline_->wait_all();
    current_.exposed_comm_s += std::chrono::duration<double>(Clock::now() - before).count();
  }
}

void PlanExecutor::close_record() {
  StepRecord& rec = current_;
  const bool device_timing = ops_.device_memory();
  if (device_timing) {
    // The step ends when the device is done; compute op times become device times from the step's mark
    // (the device was idle when it was recorded: the previous step ended with this synchronize).
    ops_.synchronize();
    for (std::size_t i = 0; i < marks_.size(); ++i)
      if (marks_[i].first >= 0) {
        rec.ops[i].start_s = ops_.seconds_between(step_mark_, marks_[i].first);
        rec.ops[i].end_s = ops_.seconds_between(step_mark_, marks_[i].second);
      }
  }
  rec.step_s = since(t0_);
  for (const OpRecord& r : rec.ops) {
    const double d = r.end_s - r.start_s;
    if (r.kind == OpKind::Forward || r.kind == OpKind::Backward)
      rec.compute_s += d;
    else if (r.kind == OpKind::Optimizer || r.kind == OpKind::ShardOptimizer || r.kind == OpKind::GradNorm)
      rec.optimizer_s += d;
    else if (is_comm(r.kind))
      rec.comm_s += r.device_s >= 0 ? r.device_s : d;       // NCCL: event time of the transfers
    if (r.kind == OpKind::TpSync) rec.exposed_comm_s += d;  // the pass waited for it
    rec.bytes_sent += r.bytes;
  }
  rec.bytes_to_peer = exec_.bytes_to_peer();
  // On a device the compute thread runs ahead of the kernels, so its waits do not measure exposed comm:
  // take the part of the step the device spent outside compute and optimizer kernels instead.
  if (device_timing) rec.exposed_comm_s = std::max(0.0, rec.step_s - rec.compute_s - rec.optimizer_s);
}

}  // namespace ddplab
