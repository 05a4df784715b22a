#include "ddplab/runtime/transport.hpp"

#include <stdexcept>

#include "ddplab/core/error.hpp"

namespace ddplab {

TransportComm open_transport(Communicator& mpi, const std::string& name, double timeout_s) {
  TransportComm t;
  t.name = name;
  t.comm = &mpi;
  const auto kind = choice_from<Transport>(name);
  if (!kind) throw InputError("unknown transport \"" + name + "\" (known: " + choice_names<Transport>() + ")");
  if (*kind == Transport::Nccl) {
    t.device = make_cuda_ops();
    t.nccl = open_nccl_communicator(mpi, *t.device, timeout_s);
    t.comm = t.nccl.get();
  }
  return t;
}

void require_gpu_backend(const std::string& option, const std::string& backend) {
  // A backend's name or a transport's: only those on the GPU need CUDA.
  if (choice_from<Backend>(backend) == Backend::Cpu || choice_from<Transport>(backend) == Transport::Mpi) return;
  const std::string why = cuda_unavailable_reason();
  if (!why.empty()) throw InputError(option + " \"" + backend + "\" cannot run here: " + why);
}

}  // namespace ddplab
