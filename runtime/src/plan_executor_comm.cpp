// The PlanExecutor's comm ops: collectives over its communicator (the backend's own, or a schedule's steps),
// a bucket's sync through its codec, batch norm's and the gradient norm's sums, and a split model's TP
// allreduces and pipeline sends and receives.
#include "ddplab/runtime/plan_executor.hpp"

#include <cmath>
#include <stdexcept>
#include <string>

#include "ddplab/core/error.hpp"
#include "ddplab/strategies/schedule.hpp"

namespace ddplab {

template <class F>
void PlanExecutor::staged(float* device, std::size_t offset, std::size_t n, F f) {
  if (!staged_) return f(device);
  // to_host waits for the stream, so the bucket's gradients are complete and the previous step's copy
  // back into this range is done; the copy back is ordered before the optimizer on the same stream.
  float* host = host_ + offset;
  ops_.to_host(host, device, n);
  f(host);
  ops_.to_device(device, host, n);
}

namespace {
// The backend's own collective on `comm`. Its wire bytes are nominal: those of a bandwidth-optimal algorithm
// (nccl-tests' bus bytes). Schedules count their bytes exactly.
std::uint64_t native_collective(Communicator& comm, const CollectiveCall& call, void* buf) {
  const double nd = comm.size(), total = static_cast<double>(call.count * elem_bytes(call.type));
  double factor = 0;
  switch (call.collective) {
    case Collective::Allreduce:
      comm.allreduce_sum(buf, call.count, call.type);
      factor = 2.0 * (nd - 1) / nd;
      break;
    case Collective::AllGather:
      comm.all_gather(buf, call.count * elem_bytes(call.type));
      factor = nd - 1;
      break;
    case Collective::ReduceScatter:
      comm.reduce_scatter_sum(static_cast<float*>(buf), call.count);
      factor = (nd - 1) / nd;
      break;
    case Collective::AllGatherShards:
      comm.all_gather_shards(static_cast<float*>(buf), call.count);
      factor = (nd - 1) / nd;
      break;
    case Collective::Push:
    case Collective::Pull:
      throw InternalError("plan runs " + to_string(call.collective) + " as the backend's own collective");
  }
  return static_cast<std::uint64_t>(std::llround(factor * total));
}
}  // namespace

void PlanExecutor::collective(const CollectiveCall& call, const std::string& schedule, void* buf,
                              std::uint64_t& bytes) {
  if (comm_.size() == 1) return;  // every collective of one rank is the identity
  if (is_backend_native(schedule)) {
    bytes += native_collective(comm_, call, buf);
    return;
  }
  // A schedule from strategies/, over point-to-point.
  const Schedule s = strategy_.schedule_for(call, schedule);
  const std::uint64_t before = exec_.bytes_sent();
  exec_.run(s, buf, call.type);
  bytes += exec_.bytes_sent() - before;
}

void PlanExecutor::set_groups(Communicator* tensor, Communicator* pipeline) {
  const PipelineStage& pipe = strategy_.context().pipeline;
  if (!pipe.schedule) throw InternalError("PlanExecutor::set_groups: the strategy's plan has no pipeline stage");
  passes_ = model_.stage_passes();
  if (!passes_)
    throw InputError("PlanExecutor: model " + model_.spec().name + " cannot run a pipeline stage or a TP share");
  if (staged_) throw InputError("PlanExecutor: pipeline stages and TP shares run on host-memory communicators only");
  if (!tensor || tensor->size() != strategy_.context().tp)
    throw InternalError("PlanExecutor::set_groups: a TP group of " + std::to_string(tensor ? tensor->size() : 0) +
                        " ranks for tp = " + std::to_string(strategy_.context().tp));
  if (!pipeline || pipeline->size() != pipe.shape.stages || pipeline->rank() != pipe.stage)
    throw InternalError("PlanExecutor::set_groups: the pipeline group does not hold this rank as stage " +
                        std::to_string(pipe.stage) + " of " + std::to_string(pipe.shape.stages));
  tensor_ = tensor, pipeline_ = pipeline;
}

void PlanExecutor::run_tp_sync(const PlanOp& op, OpRecord& out) {
  const StagePasses::Span span = passes_->tp_sum(op.microbatch, op.index, op.gradient);
  if (!is_backend_native(op.schedule) || op.calls.size() != 1)
    throw InternalError("PlanExecutor: a TP allreduce runs as one native call");
  CollectiveCall call = op.calls.front();
  call.count = span.count;  // the plan's is nominal: an epoch's short last batch has fewer rows
  tensor_->annotate(std::string("TpSync #") + std::to_string(op.index) + " microbatch " +
                    std::to_string(op.microbatch));
  if (tensor_->size() > 1) out.bytes += native_collective(*tensor_, call, span.data);
  passes_->tp_summed(op.microbatch, op.index, op.gradient);
}

void PlanExecutor::run_p2p(const PlanOp& op, StepRecord& rec, OpRecord& out) {
  const bool send = op.kind == OpKind::PpSend;
  const StagePasses::Span span = passes_->boundary(op.microbatch, op.chunk, op.gradient, send);
  // One tag per direction and chunk boundary, named by the place whose pass produced the data, as the
  // simulator's mailboxes: a chunk's microbatches run in order, so the k-th send meets the k-th receive.
  const PipelineStage& pipe = strategy_.context().pipeline;
  const int at = op.chunk * pipe.shape.stages + pipe.stage;
  const int from = send ? at : op.gradient ? at + 1 : at - 1;
  const int tag = 2 * from + (op.gradient ? 1 : 0);
  const std::size_t bytes = span.count * sizeof(float);
  pipeline_->annotate(std::string(op_name(op.kind)) + " microbatch " + std::to_string(op.microbatch) + " chunk " +
                      std::to_string(op.chunk) + (send ? " to stage " : " from stage ") + std::to_string(op.peer));
  if (send) {
    pipeline_->isend(span.data, bytes, op.peer, tag);  // completed at the end of the step
    out.bytes += bytes;
    rec.bytes_to_stage[op.peer] += bytes;  // only the comm thread touches it before the step ends
    return;
  }
  pipeline_->irecv(span.data, bytes, op.peer, tag);
  pipeline_->wait_receives();
}

void PlanExecutor::run_comm(const PlanOp& op, StepRecord& rec, OpRecord& out) {
  if (op.kind == OpKind::PpSend || op.kind == OpKind::PpRecv) {
    if (!pipeline_) throw InternalError("PlanExecutor: a pipeline plan without set_groups");
    return run_p2p(op, rec, out);
  }
  if (op.kind == OpKind::SyncBnStats || op.kind == OpKind::SyncBnGrads) return run_sync_bn(op, out);
  if (op.kind == OpKind::NormSync) return run_norm_sync(op, out);
  run_bucket_comm(op, out);
}

void PlanExecutor::run_sync_bn(const PlanOp& op, OpRecord& out) {
  float* buf = op.kind == OpKind::SyncBnStats ? model_.sync_stats(op.index) : model_.sync_grads(op.index);
  const std::size_t n = op.calls.at(0).count;
  // A rank without a batch (a dedicated server, a worker out of data under join) adds zero sums and a zero
  // row count.
  if (!strategy_.is_worker(comm_.rank()) || batch_ == 0) ops_.codec_compute().fill(buf, n, 0.0f);
  if (!staged_) return collective(op.calls.at(0), op.schedule, buf, out.bytes);
  std::vector<float> host(n);
  ops_.to_host(host.data(), buf, n);
  collective(op.calls.at(0), op.schedule, host.data(), out.bytes);
  ops_.to_device(buf, host.data(), n);
  ops_.synchronize();  // host is pageable and goes out of scope
}

void PlanExecutor::run_norm_sync(const PlanOp& op, OpRecord& out) {
  // One float: in host memory for a staged communicator, else in the backend's.
  float sum = static_cast<float>(grad_sq_);
  if (staged_) {
    collective(op.calls.at(0), op.schedule, &sum, out.bytes);
  } else {
    ops_.to_device(norm_buf_.data(), &sum, 1);
    collective(op.calls.at(0), op.schedule, norm_buf_.data(), out.bytes);
    ops_.to_host(&sum, norm_buf_.data(), 1);
  }
  grad_sq_ = sum;
}

void PlanExecutor::sync_grads(const PlanOp& op, const Bucket& b, float* buf, OpRecord& out) {
  const int n = comm_.size();
  const std::int64_t sync_step = step_ / strategy_.config().accumulate_steps;
  // The codec issues exactly the calls the plan announced (the simulator replays those).
  std::size_t call_no = 0;
  strategy_.codec().run(
      b.layout, buf, n, sync_step,
      [&](const CollectiveCall& call, void* wire) {
        if (call_no >= op.calls.size() || op.calls[call_no].count != call.count ||
            op.calls[call_no].type != call.type || op.calls[call_no].collective != call.collective)
          throw InternalError("codec " + strategy_.codec().name() + " issued a collective its plan did not announce");
        ++call_no;
        collective(call, op.schedule, wire, out.bytes);
      },
      slowed_codec_ ? *slowed_codec_ : bucket_compute());
  if (call_no != op.calls.size())
    throw InternalError("codec " + strategy_.codec().name() + " issued fewer collectives than planned");
  // The codec averaged over every rank; under join the sum is over the ranks still training.
  if (grad_divisor_ > 0 && grad_divisor_ != n)
    scale(buf, b.count, static_cast<float>(n) / static_cast<float>(grad_divisor_));
}

void PlanExecutor::run_bucket_comm(const PlanOp& op, OpRecord& out) {
  const Bucket& b = strategy_.bucketing().buckets.at(static_cast<std::size_t>(op.index));
  const int n = comm_.size();
  const bool on_params = op.kind == OpKind::SyncParams || op.kind == OpKind::AllGather || op.kind == OpKind::Pull;
  float* device = (on_params ? model_.params() : model_.grads()) + b.offset;
  const std::string& schedule = op.schedule;
  staged(device, b.offset, b.count, [&](float* buf) {
    switch (op.kind) {
      case OpKind::SyncGrads:
        sync_grads(op, b, buf, out);
        break;
      case OpKind::SyncParams:
        collective(op.calls.at(0), schedule, buf, out.bytes);
        scale(buf, b.count, 1.0f / static_cast<float>(n));
        break;
      case OpKind::ReduceScatter: {
        collective(op.calls.at(0), schedule, buf, out.bytes);
        const Chunk mine = strategy_.shard(b.id, comm_.rank());
        scale(buf + mine.offset, mine.count, 1.0f / static_cast<float>(grad_divisor_ > 0 ? grad_divisor_ : n));
        break;
      }
      case OpKind::Push: {
        const Chunk mine = strategy_.shard(b.id, comm_.rank());
        // A dedicated server has no gradients of its own: its shard only collects the workers' sum.
        if (!strategy_.is_worker(comm_.rank())) scale(buf + mine.offset, mine.count, 0.0f);
        collective(op.calls.at(0), schedule, buf, out.bytes);
        scale(buf + mine.offset, mine.count, 1.0f / static_cast<float>(strategy_.workers()));
        break;
      }
      case OpKind::AllGather:
      case OpKind::Pull:
        collective(op.calls.at(0), schedule, buf, out.bytes);
        break;
      default:
        throw InternalError(std::string("not a comm op: ") + op_name(op.kind));
    }
  });
  // ZeRO-2: only this rank's shard of the reduced gradients is read from here on.
  if (op.kind == OpKind::ReduceScatter && strategy_.policy().zero >= 2) release_outside_shard(model_.grads(), b.id);
}

}  // namespace ddplab
