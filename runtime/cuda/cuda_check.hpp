// Error checks for CUDA, cuBLAS and NCCL calls: each failure throws std::runtime_error naming the call,
// the error and the file:line it was made from, so a GPU failure is as easy to place as a CPU one.
#pragma once
#include <stdexcept>
#include <string>

#include <cuda_runtime_api.h>

namespace ddplab::cuda_detail {

[[noreturn]] inline void fail(const char* what, const std::string& error, const char* file, int line) {
  throw std::runtime_error(std::string(file) + ":" + std::to_string(line) + ": " + what + " failed: " + error);
}

}  // namespace ddplab::cuda_detail

#define cudaCheck(call)                                                                                               \
  do {                                                                                                                \
    const cudaError_t ddplab_err_ = (call);                                                                           \
    if (ddplab_err_ != cudaSuccess)                                                                                   \
      ::ddplab::cuda_detail::fail(                                                                                    \
          #call, std::string(cudaGetErrorName(ddplab_err_)) + " (" + cudaGetErrorString(ddplab_err_) + ")", __FILE__, \
          __LINE__);                                                                                                  \
  } while (0)

// cuBLAS and NCCL are checked only where their headers are included.
#ifdef CUBLAS_API_H_
#define cublasCheck(call)                                                                                       \
  do {                                                                                                          \
    const cublasStatus_t ddplab_st_ = (call);                                                                   \
    if (ddplab_st_ != CUBLAS_STATUS_SUCCESS)                                                                    \
      ::ddplab::cuda_detail::fail(                                                                              \
          #call, std::string(cublasGetStatusName(ddplab_st_)) + " (" + cublasGetStatusString(ddplab_st_) + ")", \
          __FILE__, __LINE__);                                                                                  \
  } while (0)
#endif

#ifdef NCCL_H_
// ncclInProgress is not a failure: non-blocking communicators return it while work is queued.
#define ncclCheck(call)                                                                                          \
  do {                                                                                                           \
    const ncclResult_t ddplab_nr_ = (call);                                                                      \
    if (ddplab_nr_ != ncclSuccess && ddplab_nr_ != ncclInProgress)                                               \
      ::ddplab::cuda_detail::fail(                                                                               \
          #call, std::string(ncclGetErrorString(ddplab_nr_)) + " (" + ncclGetLastError(nullptr) + ")", __FILE__, \
          __LINE__);                                                                                             \
  } while (0)
#endif
