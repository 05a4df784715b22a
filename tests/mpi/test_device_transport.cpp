// Run under mpirun: the collective bench and the link probes (what `ddplab bench collectives --backend nccl`
// and `ddplab calibrate --backend cuda` run) on a communicator that behaves as NCCL does, over MPI. Its
// buffers must be "device" allocations, wait_all only ends a group (the transfers complete in
// ChunkMemory::end_step, after which queued copies and reduces run, as on a stream), and a collective with
// transfers still pending is an error. The same code then runs on NCCL with one GPU per rank.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "forwarding_ops.hpp"
#include "mpi_test_main.hpp"

#include "ddplab/core/error.hpp"
#include "ddplab/runtime/collective_bench.hpp"
#include "ddplab/runtime/link_probe.hpp"
#include "ddplab/strategies/half.hpp"
#include "ddplab/strategies/schedule.hpp"

namespace ddplab {
namespace {

// The CPU backend, claiming device memory and remembering its allocations.
class DeviceCpuOps final : public ForwardingOps {
 public:
  bool device_memory() const override { return true; }
  float* alloc(std::size_t n) override {
    float* p = in_->alloc(n);
    blocks_[reinterpret_cast<const char*>(p)] = std::max<std::size_t>(n, 1) * sizeof(float);
    return p;
  }
  void free(float* p) override {
    blocks_.erase(reinterpret_cast<const char*>(p));
    in_->free(p);
  }
  bool owns(const void* p, std::size_t bytes) const {
    const char* c = static_cast<const char*>(p);
    auto it = blocks_.upper_bound(c);
    if (it == blocks_.begin()) return false;
    --it;
    return c + bytes <= it->first + it->second;
  }

 private:
  std::map<const char*, std::size_t> blocks_;
};

// MPI underneath, NCCL's contract on top.
class StreamLikeCommunicator final : public Communicator, public ChunkMemory {
 public:
  StreamLikeCommunicator(Communicator& mpi, const DeviceCpuOps& device) : mpi_(mpi), device_(device) {}
  int rank() const override { return mpi_.rank(); }
  int size() const override { return mpi_.size(); }
  int local_rank() const override { return mpi_.local_rank(); }

  void barrier() override { idle("barrier"), mpi_.barrier(); }
  void broadcast(void* d, std::size_t b, int root) override { idle("broadcast"), mpi_.broadcast(d, b, root); }
  void allreduce_sum(float* d, std::size_t n) override { idle("allreduce"), mpi_.allreduce_sum(d, n); }
  void allreduce_sum(double* d, std::size_t n) override { idle("allreduce"), mpi_.allreduce_sum(d, n); }
  void allreduce_min(int* d, std::size_t n) override { idle("allreduce"), mpi_.allreduce_min(d, n); }
  void allreduce_sum(void* d, std::size_t n, ElemType t) override { idle("allreduce"), mpi_.allreduce_sum(d, n, t); }
  void all_gather(void* d, std::size_t b) override { idle("all_gather"), mpi_.all_gather(d, b); }
  void reduce_scatter_sum(float* d, std::size_t n) override { idle("reduce_scatter"), mpi_.reduce_scatter_sum(d, n); }
  void all_gather_shards(float* d, std::size_t n) override { idle("all_gather"), mpi_.all_gather_shards(d, n); }
  void gather(const void* s, std::size_t b, void* r, int root) override { idle("gather"), mpi_.gather(s, b, r, root); }

  void isend(const void* data, std::size_t bytes, int peer, int tag) override {
    on_device(data, bytes, "isend");
    mpi_.isend(data, bytes, peer, tag);
    ++posted_;
  }
  void irecv(void* data, std::size_t bytes, int peer, int tag) override {
    on_device(data, bytes, "irecv");
    mpi_.irecv(data, bytes, peer, tag);
    ++posted_;
  }
  void wait_all() override { grouped_ = posted_; }  // NCCL: ncclGroupEnd enqueues; nothing is complete yet
  [[noreturn]] void abort(int code) override {
    mpi_.abort(code);
    std::abort();  // not reached: MPI's abort ends the job
  }

  ChunkMemory* chunk_memory() override { return this; }
  void begin(const std::string&) override {}
  unsigned char* scratch(std::size_t bytes) override {
    if (scratch_.size() < bytes) scratch_.resize(bytes);
    return reinterpret_cast<unsigned char*>(scratch_.data());
  }
  // Queued behind the transfers, as a kernel on the communicator's stream.
  void copy(void* dst, const void* src, std::size_t bytes) override {
    queue_.push_back([=] { std::memcpy(dst, src, bytes); });
  }
  void reduce(ElemType type, void* dst, const void* src, std::size_t count) override {
    queue_.push_back([=] { sum_into(type, dst, src, count); });
  }
  void end_step() override {
    if (grouped_ != posted_) throw std::logic_error("end_step with transfers posted after the group ended");
    mpi_.wait_all();
    for (auto& f : queue_) f();
    queue_.clear();
    posted_ = grouped_ = 0;
    ++steps_;
  }
  int steps() const { return steps_; }

 private:
  void idle(const char* what) const {
    if (posted_ > 0)
      throw std::logic_error(std::string(what) + " with point-to-point transfers not completed by end_step");
  }
  void on_device(const void* p, std::size_t bytes, const char* what) const {
    // The scratch is the communicator's own device memory.
    const auto* s = reinterpret_cast<const char*>(scratch_.data());
    const auto* c = static_cast<const char*>(p);
    const bool in_scratch = c >= s && c + bytes <= s + scratch_.size() * sizeof(float);
    if (!in_scratch && !device_.owns(p, bytes)) throw std::logic_error(std::string(what) + " of a host buffer");
  }

  Communicator& mpi_;
  const DeviceCpuOps& device_;
  std::vector<float> scratch_;
  std::vector<std::function<void()>> queue_;
  int posted_ = 0, grouped_ = 0, steps_ = 0;
};

TEST(DeviceTransport, CollectiveBenchIsExactOnDeviceBuffers) {
  DeviceCpuOps device;
  StreamLikeCommunicator comm(*g_comm, device);
  CollectiveBenchOptions opt;
  opt.sizes = {4, 4100, 65536};  // one float, an uneven count, a power of two
  opt.schedules = allreduce_schedule_names();
  opt.iters = 2, opt.warmup = 1;
  opt.ranks_per_node = std::max(1, comm.size() / 2);
  opt.device = &device;
  int rows = 0;
  run_collective_bench(comm, opt, [&](const CollectiveBenchRow& r) {
    ++rows;
    ASSERT_TRUE(r.wrong.has_value());
    EXPECT_EQ(*r.wrong, 0) << r.schedule << " at " << r.bytes << " B";
    EXPECT_GT(r.time_us, 0) << r.schedule;
  });
  EXPECT_EQ(rows, static_cast<int>(opt.schedules.size() * opt.sizes.size()));
  if (comm.size() > 1) {
    EXPECT_GT(comm.steps(), 0);
  }
}

TEST(DeviceTransport, CollectiveBenchRefusesHostBuffersOnADeviceCommunicator) {
  DeviceCpuOps device;
  StreamLikeCommunicator comm(*g_comm, device);
  CollectiveBenchOptions opt;
  opt.sizes = {64};
  opt.schedules = {"ring"};
  EXPECT_THROW(run_collective_bench(comm, opt, {}), ddplab::InternalError);
}

TEST(DeviceTransport, PingPongMeasuresEveryPeerAndSize) {
  if (g_comm->size() < 2) GTEST_SKIP() << "ping-pong needs 2 ranks";
  DeviceCpuOps device;
  StreamLikeCommunicator comm(*g_comm, device);
  const std::vector<std::uint64_t> sizes = {8, 4096, 262144};
  const auto rows = measure_pingpong(comm, &device, sizes, 0.01);
  if (comm.rank() != 0) {
    EXPECT_TRUE(rows.empty());
    return;
  }
  ASSERT_EQ(rows.size(), sizes.size() * static_cast<std::size_t>(comm.size() - 1));
  for (std::size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(rows[i].src, 0);
    EXPECT_EQ(rows[i].dst, 1 + static_cast<int>(i / sizes.size()));
    EXPECT_EQ(rows[i].bytes, static_cast<std::int64_t>(sizes[i % sizes.size()]));
    EXPECT_GE(rows[i].iters, 5);
    EXPECT_LE(rows[i].iters, 100);
    EXPECT_GT(rows[i].one_way_s, 0);
  }
  EXPECT_THROW(measure_pingpong(comm, nullptr, sizes, 0.01), ddplab::InternalError);  // refused before any transfer
}

TEST(DeviceTransport, RingAndExchangeStepsGiveOneSamplePerSize) {
  if (g_comm->size() < 2) GTEST_SKIP() << "a ring needs 2 ranks";
  DeviceCpuOps device;
  StreamLikeCommunicator comm(*g_comm, device);
  const std::vector<std::uint64_t> sizes = {1024, 65536};
  const int before = comm.steps();
  const auto ring = measure_ring(comm, &device, sizes, 5);
  // 2 warm-ups + 5 allreduces per size, each 2(n-1) steps.
  EXPECT_EQ(comm.steps() - before, static_cast<int>(sizes.size()) * 7 * 2 * (comm.size() - 1));
  const auto ex = measure_exchange(comm, &device, sizes, 0.01);
  for (const auto* v : {&ring, &ex}) {
    ASSERT_EQ(v->size(), sizes.size());
    for (std::size_t i = 0; i < sizes.size(); ++i) {
      EXPECT_EQ((*v)[i].bytes, sizes[i]);
      EXPECT_GT((*v)[i].one_way_s, 0);
    }
  }
}

}  // namespace
}  // namespace ddplab
