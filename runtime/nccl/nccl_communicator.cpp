#include "nccl_communicator.hpp"

#include <nccl.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "cuda_check.hpp"
#include "cuda_kernels.hpp"
#include "cuda_ops.hpp"
#include "ddplab/strategies/schedule.hpp"

namespace ddplab {
namespace {

std::string fmt_seconds(double s) {
  char b[32];
  std::snprintf(b, sizeof b, "%g", s);
  return b;
}

struct NcclTimeout : std::runtime_error {
  using std::runtime_error::runtime_error;
};

ncclDataType_t nccl_type(ElemType t) {
  switch (t) {
    case ElemType::F32:
      return ncclFloat32;
    case ElemType::F16:
      return ncclFloat16;
    case ElemType::BF16:
      return ncclBfloat16;
    default:  // IndexValue pairs are gathered, never summed
      throw std::invalid_argument("NCCL allreduce_sum: unsupported element type (index/value pairs cannot be summed)");
  }
}

// A device buffer that only grows (scratch and staging).
class Grow {
 public:
  ~Grow() { cudaFree(p_); }
  void leak() { p_ = nullptr, cap_ = 0; }  // cudaFree would wait for a device that may never finish
  std::size_t capacity() const { return cap_; }
  unsigned char* get(std::size_t bytes) {
    if (bytes > cap_) {
      cudaCheck(cudaFree(p_));  // waits for the device: nothing may still use the old buffer
      p_ = nullptr;
      cudaCheck(cudaMalloc(reinterpret_cast<void**>(&p_), bytes));
      cap_ = bytes;
    }
    return p_;
  }

 private:
  unsigned char* p_ = nullptr;
  std::size_t cap_ = 0;
};

class NcclCommunicator final : public Communicator, public ChunkMemory {
 public:
  explicit NcclCommunicator(const NcclOptions& o)
      : boot_(o.bootstrap), timeout_(o.timeout_s), abort_grace_(o.abort_grace_s), compute_(o.compute_stream) {
    rank_ = boot_ ? boot_->rank() : 0;
    size_ = boot_ ? boot_->size() : 1;
    local_ = boot_ ? boot_->local_rank() : 0;
    device_ = o.device >= 0 ? o.device : local_device();
    cudaCheck(cudaSetDevice(device_));
    cudaCheck(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking));
    cudaCheck(cudaEventCreateWithFlags(&ready_, cudaEventDisableTiming));
    cudaCheck(cudaEventCreate(&began_));
    cudaCheck(cudaEventCreate(&ended_));
    ncclUniqueId id{};
    if (rank_ == 0) ncclCheck(ncclGetUniqueId(&id));
    if (boot_) boot_->broadcast(&id, sizeof id, 0);
    // Non-blocking, so that no NCCL call can hang this thread: every wait below polls and can abort.
    ncclConfig_t config = NCCL_CONFIG_INITIALIZER;
    config.blocking = 0;
    what_ = "ncclCommInitRank";
    // NCCL's own buffers (channels, proxies) are not ours to count: measure what initialisation takes.
    std::size_t free_before = 0, free_after = 0, total = 0;
    cudaCheck(cudaMemGetInfo(&free_before, &total));
    ncclCheck(ncclCommInitRankConfig(&comm_, size_, id, rank_, &config));
    settle();
    cudaCheck(cudaMemGetInfo(&free_after, &total));
    init_bytes_ = free_before > free_after ? free_before - free_after : 0;
  }
  ~NcclCommunicator() override {
    if (abort_done_ && !abort_done_->load()) {  // the abort still waits on the device: touch nothing
      scratch_.leak(), staging_.leak();
      return;
    }
    if (comm_) {
      cudaStreamSynchronize(stream_);
      ncclCommFinalize(comm_);
      ncclResult_t st = ncclInProgress;
      while (st == ncclInProgress && ncclCommGetAsyncError(comm_, &st) == ncclSuccess) std::this_thread::yield();
      ncclCommDestroy(comm_);
    }
    cudaEventDestroy(ready_);
    cudaEventDestroy(began_);
    cudaEventDestroy(ended_);
    cudaStreamDestroy(stream_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  int local_rank() const override { return local_; }

  void barrier() override {
    int* one = reinterpret_cast<int*>(staging_.get(sizeof(int)));
    run("barrier", [&] { return ncclAllReduce(one, one, 1, ncclInt32, ncclSum, comm_, stream_); });
  }
  void broadcast(void* data, std::size_t bytes, int root) override {
    Staged s(*this, data, bytes, true);
    run("broadcast", [&] { return ncclBroadcast(s.dev, s.dev, bytes, ncclUint8, root, comm_, stream_); });
    s.back();
  }
  void allreduce_sum(float* data, std::size_t count) override {
    reduce_all("allreduce", data, count, ncclFloat32, ncclSum);
  }
  void allreduce_sum(double* data, std::size_t count) override {
    reduce_all("allreduce", data, count, ncclFloat64, ncclSum);
  }
  void allreduce_min(int* data, std::size_t count) override {
    reduce_all("allreduce(min)", data, count, ncclInt32, ncclMin);
  }
  void allreduce_sum(void* data, std::size_t count, ElemType type) override {
    reduce_all("allreduce", data, count, nccl_type(type), ncclSum);
  }
  void all_gather(void* data, std::size_t bytes_per_rank) override {
    Staged s(*this, data, bytes_per_rank * size_, true);
    auto* d = static_cast<unsigned char*>(s.dev);
    run("all_gather", [&] {  // in place: rank r's part already sits at r * bytes
      return ncclAllGather(d + rank_ * bytes_per_rank, d, bytes_per_rank, ncclUint8, comm_, stream_);
    });
    s.back();
  }
  // NCCL splits evenly; chunk_of may not, so uneven counts go through a padded buffer of n equal slots.
  void reduce_scatter_sum(float* data, std::size_t count) override {
    Staged s(*this, data, count * sizeof(float), true);
    float* d = static_cast<float*>(s.dev);
    const std::size_t m = (count + size_ - 1) / size_;
    if (m * size_ == count) {
      run("reduce_scatter",
          [&] { return ncclReduceScatter(d, d + rank_ * m, m, ncclFloat32, ncclSum, comm_, stream_); });
    } else {
      float* pad = reinterpret_cast<float*>(scratch_.get(m * size_ * sizeof(float)));
      cudaCheck(cudaMemsetAsync(pad, 0, m * size_ * sizeof(float), stream_));
      for (int r = 0; r < size_; ++r) {
        const Chunk c = chunk_of(count, size_, r);
        cudaCheck(
            cudaMemcpyAsync(pad + r * m, d + c.offset, c.count * sizeof(float), cudaMemcpyDeviceToDevice, stream_));
      }
      run("reduce_scatter",
          [&] { return ncclReduceScatter(pad, pad + rank_ * m, m, ncclFloat32, ncclSum, comm_, stream_); });
      const Chunk mine = chunk_of(count, size_, rank_);
      cudaCheck(cudaMemcpyAsync(d + mine.offset, pad + rank_ * m, mine.count * sizeof(float), cudaMemcpyDeviceToDevice,
                                stream_));
      wait("reduce_scatter");
    }
    s.back();
  }
  void all_gather_shards(float* data, std::size_t count) override {
    Staged s(*this, data, count * sizeof(float), true);
    float* d = static_cast<float*>(s.dev);
    const std::size_t m = (count + size_ - 1) / size_;
    if (m * size_ == count) {
      run("all_gather", [&] { return ncclAllGather(d + rank_ * m, d, m, ncclFloat32, comm_, stream_); });
    } else {
      float* pad = reinterpret_cast<float*>(scratch_.get(m * size_ * sizeof(float)));
      const Chunk mine = chunk_of(count, size_, rank_);
      cudaCheck(cudaMemcpyAsync(pad + rank_ * m, d + mine.offset, mine.count * sizeof(float), cudaMemcpyDeviceToDevice,
                                stream_));
      run("all_gather", [&] { return ncclAllGather(pad + rank_ * m, pad, m, ncclFloat32, comm_, stream_); });
      for (int r = 0; r < size_; ++r) {
        const Chunk c = chunk_of(count, size_, r);
        cudaCheck(
            cudaMemcpyAsync(d + c.offset, pad + r * m, c.count * sizeof(float), cudaMemcpyDeviceToDevice, stream_));
      }
      wait("all_gather");
    }
    s.back();
  }
  // NCCL has no gather: every rank sends to root, root receives from each rank (itself included).
  void gather(const void* send, std::size_t bytes, void* recv, int root) override {
    Staged in(*this, const_cast<void*>(send), bytes, true);
    Staged out(*this, rank_ == root ? recv : nullptr, rank_ == root ? bytes * size_ : 0, false, &scratch_);
    run("gather", [&] {
      ncclCheck(ncclGroupStart());
      ncclCheck(ncclSend(in.dev, bytes, ncclUint8, root, comm_, stream_));
      if (rank_ == root)
        for (int r = 0; r < size_; ++r)
          ncclCheck(ncclRecv(static_cast<unsigned char*>(out.dev) + r * bytes, bytes, ncclUint8, r, comm_, stream_));
      return ncclGroupEnd();
    });
    out.back();
  }

  // Point-to-point for ScheduleExecutor: device buffers only. One NCCL group per schedule step; the tag is
  // not needed, NCCL matches sends and receives between a pair in issue order.
  void isend(const void* data, std::size_t bytes, int peer, int) override {
    open_group();
    ncclCheck(ncclSend(data, bytes, ncclUint8, peer, comm_, stream_));
  }
  void irecv(void* data, std::size_t bytes, int peer, int) override {
    open_group();
    ncclCheck(ncclRecv(data, bytes, ncclUint8, peer, comm_, stream_));
  }
  void wait_all() override {
    if (!group_open_) return;
    group_open_ = false;
    ncclCheck(ncclGroupEnd());
    settle();
  }

  [[noreturn]] void abort(int code) override {
    kill();
    if (boot_) boot_->abort(code);
    std::_Exit(code);
  }

  ChunkMemory* chunk_memory() override { return this; }
  // With ranks sharing a GPU (cuda+mpi never makes one of these; tests may) another process's allocations
  // during our initialisation would be counted too: an upper bound.
  std::size_t device_bytes() const override { return init_bytes_ + scratch_.capacity() + staging_.capacity(); }
  double take_device_seconds() override {
    const double s = device_s_;
    device_s_ = 0;
    return s;
  }
  void begin(const std::string& what) override { what_ = what; }
  unsigned char* scratch(std::size_t bytes) override { return scratch_.get(bytes); }
  void copy(void* dst, const void* src, std::size_t bytes) override {
    cudaCheck(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_));
  }
  void reduce(ElemType type, void* dst, const void* src, std::size_t count) override {
    cuda::sum_into(type, dst, src, count, stream_);
  }
  void end_step() override {
    if (step_timed_) {  // a schedule step: its transfers and the reduce kernels after them
      cudaCheck(cudaEventRecord(ended_, stream_));
      timed_ = true, step_timed_ = false;
    }
    wait(what_);
  }

 private:
  // A buffer as NCCL needs it: device memory as is, host memory copied to a staging buffer and back.
  struct Staged {
    Staged(NcclCommunicator& c, void* p, std::size_t bytes, bool copy_in, Grow* pool = nullptr)
        : comm(c), host(p), n(bytes) {
      cudaPointerAttributes a{};
      const bool on_device = p && cudaPointerGetAttributes(&a, p) == cudaSuccess &&
                             (a.type == cudaMemoryTypeDevice || a.type == cudaMemoryTypeManaged);
      cudaGetLastError();
      if (on_device || !p) {
        dev = p, host = nullptr;
        return;
      }
      dev = (pool ? *pool : c.staging_).get(bytes);
      if (copy_in) cudaCheck(cudaMemcpyAsync(dev, p, bytes, cudaMemcpyHostToDevice, c.stream_));
    }
    void back() {
      if (host) cudaCheck(cudaMemcpyAsync(host, dev, n, cudaMemcpyDeviceToHost, comm.stream_));
      comm.wait(comm.what_);
    }
    NcclCommunicator& comm;
    void* host;
    std::size_t n;
    void* dev = nullptr;
  };

  void reduce_all(const char* name, void* data, std::size_t count, ncclDataType_t t, ncclRedOp_t op) {
    const std::size_t eb = t == ncclFloat64 ? 8 : t == ncclFloat32 || t == ncclInt32 ? 4 : 2;
    Staged s(*this, data, count * eb, true);
    run(name, [&] { return ncclAllReduce(s.dev, s.dev, count, t, op, comm_, stream_); });
    s.back();
  }

  // Orders the comm stream after the compute stream's queued work (gradients written by backward).
  void after_compute() {
    if (!compute_) return;
    cudaCheck(cudaEventRecord(ready_, compute_));
    cudaCheck(cudaStreamWaitEvent(stream_, ready_, 0));
  }
  void open_group() {
    if (group_open_) return;
    live();
    after_compute();
    cudaCheck(cudaEventRecord(began_, stream_));
    step_timed_ = true;
    ncclCheck(ncclGroupStart());
    group_open_ = true;
  }
  template <class F>
  void run(const char* name, F enqueue) {
    live();
    what_ = name;
    after_compute();
    cudaCheck(cudaEventRecord(began_, stream_));  // after the wait for compute: the transfer's own time
    ncclCheck(enqueue());
    cudaCheck(cudaEventRecord(ended_, stream_));
    timed_ = true;
    settle();
    wait(name);
  }
  void live() const {
    if (!comm_) throw std::runtime_error("rank " + std::to_string(rank_) + ": NCCL communicator was aborted");
  }

  // The watchdog: polls NCCL's state and the stream; past the timeout it aborts the communicator, which
  // also releases peers blocked on this rank, and fails naming the rank and the collective.
  template <class Done>
  void poll(const std::string& what, Done done) {
    const auto start = std::chrono::steady_clock::now();
    for (int spins = 0;; ++spins) {
      ncclResult_t st = ncclSuccess;
      ncclCheck(ncclCommGetAsyncError(comm_, &st));
      if (st != ncclSuccess && st != ncclInProgress) {
        const std::string msg = ncclGetErrorString(st);
        kill();
        throw std::runtime_error("rank " + std::to_string(rank_) + ": NCCL " + what + " failed: " + msg);
      }
      if (st == ncclSuccess && done()) return;
      if (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() > timeout_) {
        kill();
        throw NcclTimeout("rank " + std::to_string(rank_) + ": NCCL " + what + " did not complete within " +
                          fmt_seconds(timeout_) + " s; " +
                          (!abort_done_ || abort_done_->load()
                               ? std::string("communicator aborted (ncclCommAbort)")
                               : "ncclCommAbort still waits on the device after " + fmt_seconds(abort_grace_) +
                                     " s; failing without it"));
      }
      if (spins > 1000) std::this_thread::sleep_for(std::chrono::microseconds(50));
    }
  }
  void settle() {
    poll(what_, [] { return true; });
  }  // the last NCCL call is enqueued
  void wait(const std::string& what) {
    poll(what, [&] {
      const cudaError_t e = cudaStreamQuery(stream_);
      if (e == cudaErrorNotReady) return false;
      cudaCheck(e);
      return true;
    });
    if (timed_) {  // the stream is idle: both events have completed
      float ms = 0;
      cudaCheck(cudaEventElapsedTime(&ms, began_, ended_));
      device_s_ += ms * 1e-3;
      timed_ = false;
    }
  }
  // ncclCommAbort can wait for the stream: on the H200 an allreduce queued behind compute that never
  // ended kept it waiting until the compute did. So it runs on a thread of its own, and after
  // abort_grace_s the error is raised anyway; the destructor then leaves the stream and buffers alone.
  void kill() {
    if (!comm_) return;
    auto done = std::make_shared<std::atomic<bool>>(false);
    std::thread([c = comm_, done] {
      ncclCommAbort(c);
      done->store(true);
    }).detach();
    comm_ = nullptr;
    abort_done_ = done;
    const auto until = std::chrono::steady_clock::now() + std::chrono::duration<double>(abort_grace_);
    while (!done->load() && std::chrono::steady_clock::now() < until)
      std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }

  Communicator* boot_;
  double timeout_, abort_grace_;
  std::shared_ptr<std::atomic<bool>> abort_done_;  // set by kill(); true once ncclCommAbort returned
  cudaStream_t compute_;
  int rank_ = 0, size_ = 1, local_ = 0, device_ = 0;
  cudaStream_t stream_ = nullptr;
  cudaEvent_t ready_ = nullptr;
  cudaEvent_t began_ = nullptr, ended_ = nullptr;  // around the last NCCL operation (take_device_seconds)
  bool timed_ = false;                             // began_/ended_ recorded and not yet counted
  bool step_timed_ = false;                        // began_ recorded by a schedule step's group
  double device_s_ = 0;
  ncclComm_t comm_ = nullptr;
  bool group_open_ = false;
  std::string what_;
  Grow scratch_, staging_;
  std::size_t init_bytes_ = 0;
};

}  // namespace

std::unique_ptr<Communicator> make_nccl_communicator(const NcclOptions& options) {
  return std::make_unique<NcclCommunicator>(options);
}

}  // namespace ddplab
