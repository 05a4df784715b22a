// What `ddplab bench collectives` and `ddplab calibrate` measure collectives on: the job's MPI communicator
// with host buffers, or NCCL over it (one rank per GPU) with buffers in the CUDA backend's device memory.
#pragma once
#include <memory>
#include <string>

#include "ddplab/runtime/communicator.hpp"
#include "ddplab/runtime/ops.hpp"

namespace ddplab {

struct TransportComm {
  std::string name = "mpi";            // "mpi" or "nccl": stored with the measurements
  std::unique_ptr<Ops> device;         // nccl: the backend whose memory holds the buffers
  std::unique_ptr<Communicator> nccl;  // nccl: bootstrapped over the MPI communicator
  Communicator* comm = nullptr;        // what to measure on

  Ops* device_ops() const { return nccl ? device.get() : nullptr; }
};

// On every rank: `name` over `mpi`. NCCL's watchdog aborts a collective stuck longer than timeout_s.
TransportComm open_transport(Communicator& mpi, const std::string& name, double timeout_s);

// Before mpirun starts any rank: throws InputError saying why this machine cannot run a GPU
// `backend` ("cuda", "cuda+mpi" or transport "nccl"), naming the option it came from; nothing for "cpu"/"mpi".
void require_gpu_backend(const std::string& option, const std::string& backend);

}  // namespace ddplab
