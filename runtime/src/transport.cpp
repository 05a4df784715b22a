#include "ddplab/runtime/transport.hpp"

#include <stdexcept>

#include "ddplab/core/error.hpp"

namespace ddplab {

TransportComm open_transport(Communicator& mpi, const std::string& name, double timeout_s) {
  TransportComm t;
  t.name = name;
  t.comm = &mpi;
  if (name == "nccl") {
    t.device = make_cuda_ops();
    t.nccl = open_nccl_communicator(mpi, *t.device, timeout_s);
    t.comm = t.nccl.get();
  } else if (name != "mpi") {
    throw InputError("unknown transport \"" + name + "\" (known: mpi, nccl)");
  }
  return t;
}

void require_gpu_backend(const std::string& option, const std::string& backend) {
  if (backend == "cpu" || backend == "mpi") return;
  const std::string why = cuda_unavailable_reason();
  if (!why.empty()) throw InputError(option + " \"" + backend + "\" cannot run here: " + why);
}

}  // namespace ddplab
