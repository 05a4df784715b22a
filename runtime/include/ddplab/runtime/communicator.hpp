// The communication interface the trainer and the plan executor use, implemented on MPI and on NCCL.
// Point-to-point is enough to execute any schedule from strategies/; the collectives are the backend's own
// ("native") implementations, the baseline every schedule is compared against.
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "ddplab/strategies/codec.hpp"

namespace ddplab {

// Where a communicator's buffers live when they are not host memory (NCCL: device memory). The schedule
// executor stages received chunks in its scratch and copies or reduces them with it. Work may be queued
// asynchronously; end_step() returns when the step's transfers, copies and reductions are complete.
class ChunkMemory {
 public:
  virtual ~ChunkMemory() = default;
  virtual void begin(const std::string& what) = 0;        // names the collective (watchdog messages)
  virtual unsigned char* scratch(std::size_t bytes) = 0;  // at least `bytes`, valid until the next call
  virtual void copy(void* dst, const void* src, std::size_t bytes) = 0;
  virtual void reduce(ElemType type, void* dst, const void* src, std::size_t count) = 0;  // dst += src
  virtual void end_step() = 0;
};

class Communicator {
 public:
  virtual ~Communicator() = default;
  virtual int rank() const = 0;
  virtual int size() const = 0;
  virtual int local_rank() const = 0;

  virtual void barrier() = 0;
  virtual void broadcast(void* data, std::size_t bytes, int root) = 0;
  virtual void allreduce_sum(float* data, std::size_t count) = 0;  // native collective, in place
  virtual void allreduce_sum(double* data, std::size_t count) = 0;
  virtual void allreduce_min(int* data, std::size_t count) = 0;
  // The backend's own collectives for the plan's calls ("native" schedule), in place.
  virtual void allreduce_sum(void* data, std::size_t count, ElemType type) = 0;  // F32, F16, BF16 sums
  virtual void all_gather(void* data, std::size_t bytes_per_rank) = 0;           // rank r's part at r * bytes
  virtual void reduce_scatter_sum(float* data,
                                  std::size_t count) = 0;  // rank r ends with the sum of chunk_of(count, n, r)
  virtual void all_gather_shards(float* data, std::size_t count) = 0;  // rank r contributes chunk_of(count, n, r)
  // Root receives size() * bytes, rank-ordered; others may pass nullptr.
  virtual void gather(const void* send, std::size_t bytes, void* recv, int root) = 0;

  // Non-blocking point-to-point; wait_all completes every posted request.
  virtual void isend(const void* data, std::size_t bytes, int peer, int tag) = 0;
  virtual void irecv(void* data, std::size_t bytes, int peer, int tag) = 0;
  virtual void wait_all() = 0;
  // Completes the posted receives only; sends stay in flight until wait_all (a pipeline stage goes on while
  // its sends drain, as with MPI_Isend). Where a backend cannot tell them apart, it completes everything.
  virtual void wait_receives() { wait_all(); }

  // Collective: a communicator of the ranks that pass the same color >= 0, ordered as here; null on ranks
  // that pass a negative color. abort() on it still ends the whole job. MPI splits (MPI_Comm_split); an
  // NCCL communicator over a subset is opened over a split of its bootstrap instead.
  virtual std::unique_ptr<Communicator> split(int color) {
    (void)color;
    throw std::logic_error("this communicator cannot split");
  }

  // nullptr: buffers are host memory (MPI). Otherwise what the schedule executor uses instead of memcpy.
  virtual ChunkMemory* chunk_memory() { return nullptr; }
  // Device time of the transfers since the previous call, then restarts the count (NCCL: CUDA events
  // around each operation on its stream); -1 for host communicators, whose callers time with the clock.
  virtual double take_device_seconds() { return -1; }
  // Device memory this communicator holds (NCCL: what its initialisation took from the device, plus its
  // staging and scratch buffers); 0 for host communicators. Counted in a run's peak_device_bytes.
  virtual std::size_t device_bytes() const { return 0; }

  // What the calls that follow on this thread belong to (a plan op) and the training step, for watchdog
  // reports (WatchedCommunicator, watchdog.hpp); communicators without a watchdog ignore them.
  virtual void annotate(const std::string& what) { (void)what; }
  virtual void set_step(std::int64_t step) { (void)step; }

  // Ends every rank of the job at once: a failed rank must not leave the others waiting forever.
  [[noreturn]] virtual void abort(int code) = 0;
};

// Joins the MPI job this process was started in (mpirun / srun). Owns MPI_Init/Finalize.
std::unique_ptr<Communicator> make_mpi_communicator(int* argc, char*** argv);

// World size 1 in this process, no MPI (the GPU check machine has none). Collectives are the identity.
std::unique_ptr<Communicator> make_single_process_communicator();

class Ops;
// Backend "cuda": an NCCL communicator over bootstrap's ranks (which broadcasts rank 0's unique id), on
// cuda_ops' device and ordered after its stream, made by the CUDA plugin (runtime/cuda/cuda_loader.cpp).
// A collective stuck longer than timeout_s aborts the communicator (ncclCommAbort) and throws, naming the
// rank and the collective. Throws saying why when the plugin, NCCL or the device is missing.
std::unique_ptr<Communicator> open_nccl_communicator(Communicator& bootstrap, Ops& cuda_ops, double timeout_s);

}  // namespace ddplab
