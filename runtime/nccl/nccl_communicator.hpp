// The Communicator over NCCL: one process per GPU, buffers in device memory (host buffers are staged
// through the device for the small calls the trainer makes with them, e.g. evaluation sums).
// Schedules from strategies/ run through ScheduleExecutor as grouped ncclSend/ncclRecv per step plus a
// reduce kernel (ChunkMemory); "native" maps to ncclAllReduce, ncclReduceScatter and ncclAllGather.
#pragma once
#include <memory>

#include <cuda_runtime_api.h>

#include "ddplab/runtime/communicator.hpp"

namespace ddplab {

struct NcclOptions {
  // Broadcasts rank 0's ncclUniqueId and gives rank, size and local rank (the MPI communicator).
  // Null: a single-process job of world size 1, the id made locally.
  Communicator* bootstrap = nullptr;
  int device = -1;                        // -1: local_device() (the local rank's device)
  double timeout_s = 300;                 // watchdog: a collective stuck longer aborts the communicator
  double abort_grace_s = 10;              // how long the error waits for ncclCommAbort to return
  cudaStream_t compute_stream = nullptr;  // each operation first waits for the work queued here
};

std::unique_ptr<Communicator> make_nccl_communicator(const NcclOptions& options);

}  // namespace ddplab
