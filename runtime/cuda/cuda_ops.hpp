// The CUDA backend's extras beyond the Ops interface: device choice, TF32, and the stream its work runs
// on (the NCCL communicator orders its own stream after it with events).
#pragma once
#include <memory>
#include <string>

#include <cuda_runtime_api.h>

#include "ddplab/runtime/ops.hpp"

namespace ddplab {

struct CudaOpsOptions {
  int device = -1;    // -1: the local rank's device (local_device())
  bool tf32 = false;  // cuBLAS GEMMs on TF32 tensor cores (10-bit mantissa inputs, fp32 accumulate)
};

// The static library's constructor (ddplab_cuda). make_ops("cuda") / make_cuda_ops(bool) in ops.hpp go
// through the plugin instead, whose backends cuda_stream cannot see.
std::unique_ptr<Ops> make_cuda_ops(const CudaOpsOptions& options);

// Empty when a device is visible, else "no CUDA device visible: ..." (cuda_unavailable_reason() of
// ops.hpp asks the plugin the same question).
std::string cuda_device_unavailable_reason();

// The device for this process: OMPI_COMM_WORLD_LOCAL_RANK, else SLURM_LOCALID, else 0, modulo the number
// of visible devices. Throws when no device is visible.
int local_device();

// The stream of a backend made by make_cuda_ops; throws std::invalid_argument for any other backend.
cudaStream_t cuda_stream(Ops& ops);
// The device of such a backend.
int cuda_device(Ops& ops);

}  // namespace ddplab
