// What `ddplab calibrate` measures, on any Communicator: MPI with host buffers, or NCCL with buffers in a
// device backend's memory (each exchange then completes through the communicator's ChunkMemory, as a
// schedule step does). Every rank of the communicator calls each function; results are on every rank
// unless said otherwise.
#pragma once
#include <cstdint>
#include <vector>

#include "ddplab/core/store.hpp"
#include "ddplab/runtime/communicator.hpp"
#include "ddplab/runtime/ops.hpp"
#include "ddplab/strategies/optimizer.hpp"

namespace ddplab {

// One-way time of a message of `bytes`, from a pattern of transfers.
struct MessageTime {
  std::uint64_t bytes = 0;
  double one_way_s = 0;
};

// Round trips per size: as many as fit in budget_s seconds (judged from 2 warm-ups), at least 5, at most 100.
int pingpong_iters(double warm_rtt_s, double budget_s);

// Ping-pong between rank 0 and every other rank in turn, over `sizes` (ascending). Rank 0 gets one row per
// (peer, size), one-way = half the fastest round trip; the others get none. `device`: the backend whose
// memory holds the buffers, required when the communicator has ChunkMemory (NCCL), else null.
std::vector<PingPongRow> measure_pingpong(Communicator& comm, Ops* device, const std::vector<std::uint64_t>& sizes,
                                          double budget_s);

// Every rank at once sends `bytes` to its right neighbour and receives as much from its left, back to back;
// per size the median time per exchange, averaged over ranks.
std::vector<MessageTime> measure_exchange(Communicator& comm, Ops* device, const std::vector<std::uint64_t>& sizes,
                                          double budget_s);

// The runtime's ring allreduce (ScheduleExecutor) of n x s bytes for each size s: one allreduce's mean
// time over `iters` (at least 5) / 2(n-1) is the one-way time of its s-byte steps. Needs 2 ranks or more.
std::vector<MessageTime> measure_ring(Communicator& comm, Ops* device, const std::vector<std::uint64_t>& sizes,
                                      int iters);

// Per-layer compute of an MLP of these widths at `batch`, on `ops`, averaged over the communicator's ranks
// (which all compute at once, loading the machine as training does): forward (GEMM, bias, ReLU), backward
// (the loss gradient counts with the last layer) and one update of every parameter by `opt`'s optimizer
// (at lr 0), each the median of `reps`. Device backends are timed with their events (the kernels' time), host ones by
// the clock.
struct MlpComputeTimes {
  std::vector<double> forward_s, backward_s;  // per layer, input layer first
  double optimizer_s = 0;
};
MlpComputeTimes measure_mlp_compute(Communicator& comm, Ops& ops, const std::vector<int>& widths, int batch,
                                    std::uint64_t seed, int reps, const OptimizerConfig& opt);

}  // namespace ddplab
