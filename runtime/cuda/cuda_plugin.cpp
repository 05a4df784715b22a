// The exported entry points of the CUDA plugin (libddplab_cuda.so). Everything else in the plugin is
// compiled with hidden visibility, so its copies of Ops/CudaOps never interpose with the executable's.
#include "cuda_plugin.hpp"

#include <cstdio>
#include <exception>

#include "cuda_ops.hpp"
#ifdef DDPLAB_PLUGIN_NCCL
#include "nccl_communicator.hpp"
#endif

#define DDPLAB_EXPORT extern "C" __attribute__((visibility("default")))

namespace {
void copy(const char* s, char* out, std::size_t size) {
  if (size > 0) std::snprintf(out, size, "%s", s);
}
}  // namespace

DDPLAB_EXPORT int ddplab_cuda_plugin_abi() { return DDPLAB_CUDA_PLUGIN_ABI; }

DDPLAB_EXPORT ddplab::Ops* ddplab_cuda_make_ops(bool tf32, int device, char* error, std::size_t error_size) {
  try {
    ddplab::CudaOpsOptions o;
    o.tf32 = tf32;
    o.device = device;
    return ddplab::make_cuda_ops(o).release();
  } catch (const std::exception& e) {
    copy(e.what(), error, error_size);
  } catch (...) {
    copy("unknown error", error, error_size);
  }
  return nullptr;
}

DDPLAB_EXPORT void ddplab_cuda_unavailable_reason(char* reason, std::size_t reason_size) {
  try {
    copy(ddplab::cuda_device_unavailable_reason().c_str(), reason, reason_size);
  } catch (const std::exception& e) {
    copy(e.what(), reason, reason_size);
  }
}

DDPLAB_EXPORT ddplab::Communicator* ddplab_cuda_make_nccl(ddplab::Communicator* bootstrap, ddplab::Ops* ops,
                                                          double timeout_s, char* error, std::size_t error_size) {
#ifdef DDPLAB_PLUGIN_NCCL
  try {
    ddplab::NcclOptions o;
    o.bootstrap = bootstrap;
    o.device = ddplab::cuda_device(*ops);
    o.timeout_s = timeout_s;
    o.compute_stream = ddplab::cuda_stream(*ops);
    return ddplab::make_nccl_communicator(o).release();
  } catch (const std::exception& e) {
    copy(e.what(), error, error_size);
  } catch (...) {
    copy("unknown error", error, error_size);
  }
#else
  (void)bootstrap, (void)ops, (void)timeout_s;
  copy("this CUDA plugin was built without NCCL (reconfigure with NCCL installed, or use backend \"cuda+mpi\")", error,
       error_size);
#endif
  return nullptr;
}
