// The C ABI between ddplab_runtime's loader (cuda_loader.cpp) and the CUDA plugin (cuda_plugin.cpp,
// libddplab_cuda.so). Plain C++: no CUDA headers, so the runtime compiles without the toolkit.
// Errors come back as text in a caller's buffer, never as exceptions across dlopen's boundary.
#pragma once
#include <cstddef>

namespace ddplab {
class Communicator;
class Ops;
}  // namespace ddplab

// Bump when the Ops or Communicator interface (runtime/include/ddplab/runtime/ops.hpp, communicator.hpp;
// the plugin implements both) or these signatures change: the loader refuses a plugin of another version
// instead of calling through a mismatched vtable.
#define DDPLAB_CUDA_PLUGIN_ABI 9

extern "C" {
// DDPLAB_CUDA_PLUGIN_ABI of the plugin.
using ddplab_cuda_plugin_abi_fn = int();
// A new CUDA backend (delete through Ops' virtual destructor), or null with the reason in error.
// device -1: the local rank's device.
using ddplab_cuda_make_ops_fn = ddplab::Ops*(bool tf32, int device, char* error, std::size_t error_size);
// Empty when a device is usable, else why not (same text as make_ops would fail with).
using ddplab_cuda_unavailable_reason_fn = void(char* reason, std::size_t reason_size);
// An NCCL communicator over `bootstrap`'s ranks (rank 0's unique id is broadcast through it), on the
// device of `ops` (a backend this plugin made), ordered after its stream; null with the reason in error
// (also when the plugin was built without NCCL). Delete through Communicator's virtual destructor.
using ddplab_cuda_make_nccl_fn = ddplab::Communicator*(ddplab::Communicator* bootstrap, ddplab::Ops* ops,
                                                       double timeout_s, char* error, std::size_t error_size);
}
