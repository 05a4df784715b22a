// The CUDA backend's CodecCompute (strategies/include/ddplab/strategies/codec_compute.hpp): the codecs'
// local work as kernels on the backend's stream, on device memory. CudaOps::codec_compute() returns one.
//  - casts: the integer rounding of strategies/half.hpp, ported to the device: bit-identical to the host;
//  - divide / add / sub / fill: one correctly rounded IEEE operation per element: bit-identical;
//  - top-k: CUB radix sort of 64-bit keys (|v| descending with NaN first, then the index), then a sort of
//    the k chosen indices: the host's selection exactly;
//  - scatter-add: one launch per group (rank), in order, so each sum runs in rank order: bit-identical;
//  - matmul / matmul_tn / matmul_nt: one thread per output, double accumulation in the host's order
//    without FMA contraction: bit-identical (the host code is built without FMA);
//  - orthogonalize: one block per matrix in double, dot products reduced in a fixed tree order:
//    deterministic, equal to the host to double rounding (not bitwise).
// Memory comes from the stream-ordered allocator (cudaMallocAsync / cudaFreeAsync on the stream; the
// device's default pool keeps freed memory), so it is not in CudaOps::peak_device_bytes(). A collective
// handed a buffer must be complete, or ordered before the stream's later work, when it returns (the NCCL
// communicator waits for it). Not thread-safe: one compute per backend, used by one thread at a time.
#pragma once
#include <memory>

#include <cuda_runtime_api.h>

#include "ddplab/strategies/codec_compute.hpp"

namespace ddplab::cuda {

std::unique_ptr<CodecCompute> make_codec_compute(int device, cudaStream_t stream);

}  // namespace ddplab::cuda
