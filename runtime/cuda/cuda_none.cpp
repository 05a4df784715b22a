// The CUDA entry points of a build without the CUDA toolkit: they say so instead of failing to link.
#include <stdexcept>

#include "ddplab/core/error.hpp"
#include "ddplab/runtime/communicator.hpp"
#include "ddplab/runtime/ops.hpp"

namespace ddplab {

std::string cuda_unavailable_reason() { return "built without CUDA"; }

std::unique_ptr<Ops> make_cuda_ops(bool) {
  throw InputError(
      "backend \"cuda\" is not available: built without CUDA (reconfigure with -DDDPLAB_CUDA=ON "
      "and the CUDA toolkit installed)");
}

std::unique_ptr<Communicator> open_nccl_communicator(Communicator&, Ops&, double) {
  throw InputError("NCCL is not available: built without CUDA");
}

}  // namespace ddplab
