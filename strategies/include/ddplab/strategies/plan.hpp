// The step plan: what a strategy does in one (micro-)step, as a DAG of ops over two streams per rank.
// Compute ops run in order on the compute stream; comm ops run in order on the comm stream, but TpSync,
// which the compute stream runs (on_compute_stream); an op starts once its dependencies are done. The runtime executes
// it with real tensors (a communication thread), the simulator as SimGrid activities, so both move the same bytes
// between the same ranks.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "ddplab/strategies/codec.hpp"
#include "ddplab/strategies/schedule.hpp"

namespace ddplab {

enum class OpKind {
  Forward,         // compute: forward and loss of the micro-batch (index -1), or its chunk from where the last
                   // Forward ended through layer `index` (the loss with the last layer's): whole-batch chunks
                   // end before each SyncBatchNorm layer, whose moments the chunk takes (ModelSpec::
                   // forward_chunks), and at ZeRO-3's parameter units; in a pipeline plan (microbatch >= 0), the
                   // microbatch's chunk through layer `index`
  Backward,        // compute: backward of layer `index`, producing its parameters' gradients
  SyncGrads,       // comm: bucket `index` gradients become their average over ranks (codec calls on a schedule)
  Optimizer,       // compute: optimizer update of the parameters of bucket `index`
  SyncParams,      // comm: bucket `index` parameters become their average over ranks (local SGD)
  ReduceScatter,   // comm: bucket `index` gradients reduce-scattered; rank r keeps the sum of shard r
  ShardOptimizer,  // compute: optimizer update of this rank's shard of bucket `index` (ZeRO-1, servers)
  AllGather,       // comm: bucket `index` parameter shards all-gathered to every rank (ZeRO-1 after the update,
                   // ZeRO-3 before the forward and the backward that use them)
  Push,            // comm: bucket `index` gradients pushed to the parameter servers, each summing its shard
  Pull,            // comm: bucket `index` parameter shards pulled from the servers by every worker
  // Global-norm clipping ([train].clip_grad_norm): after every gradient the updates read is synced and
  // before any update, GradNorm sums the squares of the gradients this rank updates; where ranks update
  // different shards, NormSync allreduces that sum, so every rank clips by the same norm.
  GradNorm,  // compute: sum of squares of this rank's synced gradients (index -1)
  NormSync,  // comm: allreduce of the per-rank sums of squares, one float (index -1; the sum, kept in
             // double on one rank, goes through float here: sharded and dense plans may clip 1e-7 apart)
  // SyncBatchNorm (LayerSpec::sync_channels), every micro-step, on the critical path:
  SyncBnStats,  // comm: layer `index`'s per-channel sums and squares and row count summed over ranks
                // (2 channels + 1 floats), between the forward chunk that took them and the next
  SyncBnGrads,  // comm: layer `index`'s per-channel gradient sums summed over ranks (2 channels floats),
                // between its backward and the backward of the layer below, which needs them
  // Pipeline parallelism ([parallel] pp > 1): a stage's plan holds every microbatch's passes in its pipeline
  // schedule's order (pipeline.hpp); the activations of a microbatch, and in backward their gradients,
  // move point to point between neighbouring stages of the rank's pipeline:
  PpSend,  // comm: microbatch `microbatch`'s activations (or gradients) of chunk `chunk` to stage `peer`
  PpRecv,  // comm: the same from stage `peer`; the pass that needs them waits for it
  // Tensor parallelism ([parallel] tp > 1), on the critical path, over the rank's TP group:
  TpSync,  // comm: layer `index`'s allreduce for microbatch `microbatch`: a row-parallel layer's output
           // in forward, a column-parallel layer's input gradient in backward (`gradient`). It runs
           // on the compute stream, the pass waiting for it as Megatron-LM's layers do, so that the
           // comm stream's DP sync overlaps the pass around it
  // Activation recomputation ([train] recompute = "full"; the simulator replays it, the runtime refuses it):
  Recompute,  // compute: the forward of layers up to `index` of microbatch `microbatch` (a numbered block's,
              // in segments ending at its row-parallel layers' TpSync), run again right before the block's
              // backward because only the block's input was kept
  // ZeRO-3 (PolicyInfo::zero = 3): a rank keeps only its shard of the parameters between their uses; each
  // bucket is a parameter unit (FSDP's), all-gathered (AllGather) before the forward and again before the
  // backward that need it, and given back after them:
  Reshard,  // compute: bucket `index`'s parameters outside this rank's shard given back (no FLOPs)
};

// The ranks a comm op's collectives run over: the rank's DP group (every rank without [parallel]) or its
// TP group (layout.hpp); the plan's ranks are the group's.
enum class CommGroup { Data, Tensor };
const char* op_name(OpKind k);
bool is_comm(OpKind k);
// The compute ops and TpSync run in order on the compute stream; every other comm op on the comm stream.
bool on_compute_stream(OpKind k);

struct PlanOp {
  int id = 0;  // index in StepPlan::ops
  OpKind kind = OpKind::Forward;
  int index = 0;                      // layer (Backward) or bucket (the rest); -1 = not applicable
  std::vector<int> deps;              // ids of ops that must finish first (always earlier in the list)
  double flops = 0;                   // compute ops: work estimate for the whole micro-batch
  std::vector<CollectiveCall> calls;  // comm ops: what goes on the wire, in order
  std::string schedule;               // comm ops: the schedule each call runs on ("native" = the backend's)
  // Pipeline plans: the microbatch of a Forward, Backward, PpSend or PpRecv (-1: the whole micro-step), and
  // which of the rank's model chunks it belongs to (interleaved schedules; 0 otherwise).
  int microbatch = -1;
  int chunk = 0;
  // PpSend, PpRecv: the pipeline stage on the other side (an index into the rank's pipeline group, which
  // the executor maps to a rank), the bytes moved, and whether they are activation gradients (backward).
  int peer = -1;
  std::uint64_t p2p_bytes = 0;
  bool gradient = false;
  CommGroup group = CommGroup::Data;  // comm ops with calls
};

// The collective and element count a call's Schedule is built for: "allreduce", "reduce_scatter" or
// "all_gather" (all_gather_shards too); the codec's all_gather concatenates equal parts, so it is the
// all-gather of n * count elements, rank r owning part r. Throws InternalError for push, pull or an
// unknown collective.
struct CallShape {
  Collective collective = Collective::Allreduce;
  std::size_t count = 0;
};
CallShape call_shape(const CollectiveCall& call, int world_size);

// What the simulator replays the backend's own collective (`native`) as: a transport's own choice, modelled
// (Open MPI 4.1's by world size and bytes, native_schedule; NCCL's by size and fabric, nccl_model.hpp), or
// one registered schedule (a what-if).
struct NativeReplay {
  std::optional<Transport> transport;  // set: that transport's own choice
  std::string schedule = "ring";       // without a transport: this schedule
  // "mpi", "nccl" or a registered allreduce schedule; InputError (naming `field`) otherwise.
  static NativeReplay parse(const std::string& text, const std::string& field = "--native");
  std::string name() const;  // as parse reads it
  bool operator==(const NativeReplay&) const = default;
};

// The Schedule that carries one collective call of a plan, shared by both executors so they move the same
// bytes: allreduce and reduce_scatter use the named schedule; all_gather (equal parts per rank, count each)
// and all_gather_shards use its all-gather variant, or the ring's when it has none. `native` has no
// Schedule in the runtime (the backend's own collective runs); the simulator replays it as native_as says
// (NCCL's choice needs where.nccl; the ring without it). Elements are of call.type.
// push and pull (parameter server) use the "ps" schedules with where.servers. where.count is ignored.
Schedule schedule_for_call(const CollectiveCall& call, const std::string& schedule, const ScheduleParams& where,
                           const NativeReplay& native_as = {});
Schedule schedule_for_call(const CollectiveCall& call, const std::string& schedule, int world_size, int ranks_per_node,
                           const NativeReplay& native_as = {});
// The name of the schedule schedule_for_call builds for a call (not push or pull): `native` resolved by
// native_as, and the ring for a gather whose schedule has no all-gather variant.
std::string schedule_name_for_call(const CollectiveCall& call, const std::string& schedule, int world_size,
                                   const NativeReplay& native_as);

struct StepPlan {
  std::int64_t step = 0;    // micro-step number
  bool sync = true;         // false: gradients only accumulate this micro-step (no comm, no optimizer)
  std::vector<PlanOp> ops;  // topologically ordered
  nlohmann::json to_json() const;
  // The same ops (kinds, indices, dependencies, work and calls): the step number does not count.
  bool same_ops(const StepPlan& other) const;
};

}  // namespace ddplab
