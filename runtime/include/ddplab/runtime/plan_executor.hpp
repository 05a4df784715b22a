// Executes a strategy's step plan on this rank with real tensors: compute ops on the calling thread, comm
// ops on a communication thread, each op starting once its dependencies are done. So a bucket's collective
// runs while backward goes on, and each optimizer update waits only for its own bucket.
#pragma once
#include <condition_variable>
#include <cstdint>
#include <chrono>
#include <deque>
#include <exception>
#include <map>
#include <mutex>
#include <thread>
#include <utility>
#include <vector>

#include "ddplab/core/checkpoint.hpp"
#include "ddplab/runtime/communicator.hpp"
#include "ddplab/runtime/model.hpp"
#include "ddplab/runtime/model_optimizer.hpp"
#include "ddplab/runtime/ops.hpp"
#include "ddplab/runtime/schedule_executor.hpp"
#include "ddplab/runtime/slowdown.hpp"
#include "ddplab/runtime/stage_passes.hpp"
#include "ddplab/strategies/optimizer.hpp"
#include "ddplab/strategies/strategy.hpp"

namespace ddplab {

// One op as it ran: times in seconds since the step began, and bytes this rank sent.
struct OpRecord {
  OpKind kind;
  int index;
  double start_s = 0, end_s = 0;
  double device_s = -1;  // comm ops on NCCL: device time of their transfers (CUDA events); -1: host-timed
  std::uint64_t bytes = 0;
};

struct StepRecord {
  std::chrono::steady_clock::time_point start;  // OpRecord times are relative to this
  double compute_s = 0;  // forward + backward (device backends: CUDA-event time of their kernels)
  double comm_s = 0;     // comm ops in flight (one at a time on the comm thread); NCCL: their transfers' event time
  double exposed_comm_s = 0;  // host: time the compute thread waited for comm; device: step - compute - optimizer
  double optimizer_s = 0;
  double step_s = 0;
  std::uint64_t bytes_sent = 0;
  double loss = 0;
  std::vector<OpRecord> ops;
  std::map<int, std::uint64_t> bytes_to_peer;   // this step's collectives, by destination rank of the DP group
  std::map<int, std::uint64_t> bytes_to_stage;  // this step's pipeline sends, by destination stage
};

class PlanExecutor {
 public:
  PlanExecutor(Communicator& comm, Ops& ops, Model& model, Strategy& strategy, const OptimizerConfig& opt);
  ~PlanExecutor();
  PlanExecutor(const PlanExecutor&) = delete;
  PlanExecutor& operator=(const PlanExecutor&) = delete;

  // Runs micro-step `step` on a batch already on the device. A worker with batch 0 has run out of data
  // (data.uneven = "join"): it shadows the step, computing nothing and syncing zero gradients. Rebuilds buckets after
  // the first sync step from the gradient-ready order seen (moving parameters and optimizer state to the new layout).
  StepRecord run_step(std::int64_t step, const float* x, const std::int32_t* y, int batch);

  // Runs the policy's end-of-run plan (Strategy::finish_plan: local SGD's final average of the
  // parameters), numbered `step`; a policy without one gives an empty record.
  StepRecord finish(std::int64_t step);

  // The synced gradients are the ranks' sum divided by `ranks`: every worker by default; under join, the
  // ranks still training (data.uneven = "join"). Takes effect from the next step.
  void set_grad_divisor(int ranks);

  // Checkpoints (core/checkpoint.hpp): this rank's parameters, batch-norm buffers and optimizer state (each
  // in parameter order, whatever the bucket layout), its codec's state and the bucket rebuild. save() is for
  // the end of an accumulation window; load() is for an executor that has run no step, and throws
  // CheckpointError naming `what` when the checkpoint does not fit this model and strategy.
  void save(Checkpoint& c);  // collective under ZeRO-3 (gather_parameters): its file holds the whole model
  // ZeRO-3 (PolicyInfo::zero = 3) keeps each bucket's parameters whole only while a step uses them: between
  // steps a rank holds its shards. This all-gathers every bucket's, so that the rank holds the whole model
  // (for an evaluation, a checkpoint, a check of the replicas); the next step's Reshards give it back.
  // Collective: every rank of the communicator calls it. Other policies hold whole parameters: no-op.
  void gather_parameters();
  void load(const Checkpoint& c, const std::string& what);

  // A [parallel] layout's other groups (the executor's own communicator is the rank's DP group): the TP group
  // its TpSync ops allreduce over, and its pipeline by stage (its rank there is its stage), where PpSend
  // and PpRecv go. The model must then run its passes by microbatch (Model::stage_passes). Before the first step.
  void set_groups(Communicator* tensor, Communicator* pipeline);

  // Makes this rank a straggler: its compute ops and its codec work take `factor` (>= 1) times longer
  // (slowdown.hpp). On a device each compute op is synchronised first, so that its time is known.
  void set_compute_factor(double factor);

 private:
  StepRecord execute(StepPlan plan);  // runs a plan: compute here, comm ops on the comm thread
  // execute's parts, in order: a new record, counters and shared state; every comm op queued for the comm
  // thread (returns, by op, whether finishing it must wake that thread); the compute ops here; the wait for
  // the step's comm (rethrowing the comm thread's error); the step's totals from its ops' records.
  void start_plan(StepPlan plan);
  std::vector<char> queue_comm_ops();
  void run_compute_ops(const std::vector<char>& wakes_comm);
  void finish_comm();
  void close_record();
  void wait_for_deps(const std::vector<int>& deps);  // on the compute thread: the wait is exposed comm
  void comm_loop();
  void run_comm(const PlanOp& op, StepRecord& rec, OpRecord& out);
  // run_comm's kinds of op: batch norm's sums, the gradient norm's, and a bucket's collectives.
  void run_sync_bn(const PlanOp& op, OpRecord& out);
  void run_norm_sync(const PlanOp& op, OpRecord& out);
  void run_bucket_comm(const PlanOp& op, OpRecord& out);
  void sync_grads(const PlanOp& op, const Bucket& b, float* buf, OpRecord& out);  // through the codec
  void run_compute(const PlanOp& op, const StepPlan& plan, StepRecord& rec);
  void collective(const CollectiveCall& call, const std::string& schedule, void* buf, std::uint64_t& bytes);
  void run_tp_sync(const PlanOp& op, OpRecord& out);               // on the compute thread
  void run_p2p(const PlanOp& op, StepRecord& rec, OpRecord& out);  // PpSend, PpRecv on the comm thread
  void update(std::size_t offset, std::size_t count, std::vector<TensorSlice> tensors);  // the optimizer on a range
  double sum_squares_to_update() const;  // this rank's gradients that its plan's updates read
  void apply_layout();
  void release_outside_shard(float* base,
                             int bucket);  // Ops::release of a bucket's range of base but this rank's shard
  // Runs f on n elements at `device`: in place, or (staged_) on their copy in host_ and copied back.
  template <class F>
  void staged(float* device, std::size_t offset, std::size_t n, F f);
  void scale(float* x, std::size_t n, float alpha);  // device or host_ memory, as staged_ says
  CodecCompute& bucket_compute();                    // the codec compute where buckets live (staged_: host memory)

  Communicator& comm_;
  Communicator* tensor_ = nullptr;  // set_groups'
  Communicator* pipeline_ = nullptr;
  Ops& ops_;
  Model& model_;
  StagePasses* passes_ = nullptr;    // the model's, under a pipeline or TP plan
  std::vector<char> backward_seen_;  // by layer: a microbatch's backward ran this step (the next ones add)
  Strategy& strategy_;
  OptimizerConfig opt_;
  ScheduleExecutor exec_;
  OptimizerState optimizer_;  // its per-parameter state follows the parameters' layout
  DeviceBuffer norm_buf_;     // NormSync's one float, in the communicator's memory
  double grad_sq_ = 0;        // GradNorm's sum of squares (after NormSync: over all ranks)
  // Device-memory backend with a host-memory communicator (cuda+mpi): each comm op copies its bucket to
  // host_ (page-locked, model-sized), communicates there, and copies the result back.
  bool staged_ = false;
  float* host_ = nullptr;
  std::vector<int> observed_order_;
  bool first_sync_done_ = false;
  Slowdown slowdown_;
  std::unique_ptr<CodecCompute> slowed_codec_;  // the codec's compute, stretched by slowdown_ (a straggler)
  int forward_from_ = 0;                        // the first layer of the plan's next whole-batch Forward chunk
  bool whole_ = false;       // gather_parameters has run since the last step: nothing to gather again
  int micro_in_window_ = 0;  // micro-steps accumulated since the last sync
  int grad_divisor_ = 0;     // set_grad_divisor's; 0 = every worker
  const float* x_ = nullptr;
  const std::int32_t* y_ = nullptr;
  int batch_ = 0;
  std::int64_t step_ = 0;

  // The step in flight; members, not run_step's locals, so that the comm thread never points into a
  // frame that an exception unwound.
  StepPlan plan_;
  StepRecord current_;

  // Shared with the comm thread.
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<const PlanOp*> queue_;
  std::vector<char> done_;
  std::vector<OpRecord>* records_ = nullptr;
  StepRecord* step_rec_ = nullptr;
  std::exception_ptr comm_error_;
  bool stop_ = false;
  bool aborted_ = false;  // the compute thread left the step on an exception: drop its comm ops
  std::chrono::steady_clock::time_point t0_;
  // Device backends: the device marks of the step's start and of each compute op's start and end.
  int step_mark_ = -1;
  std::vector<std::pair<int, int>> marks_;
  std::thread thread_;
};

}  // namespace ddplab
