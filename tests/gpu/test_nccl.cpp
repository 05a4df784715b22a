// The NCCL communicator with one rank (the check machine has one GPU): every registered schedule through
// the shared ScheduleExecutor, the native collectives on device and host buffers, and the device-side
// reduce that multi-rank schedules rely on, against the host sum_into. Also the collective bench on device
// buffers and calibrate's per-layer compute timed by CUDA events (label gpu; skipped without a device).
#include <gtest/gtest.h>

#include <cuda_runtime_api.h>

#include <cstring>
#include <vector>

#include "cuda_kernels.hpp"
#include "cuda_ops.hpp"
#include "ddplab/core/error.hpp"
#include "ddplab/runtime/collective_bench.hpp"
#include "ddplab/runtime/link_probe.hpp"
#include "ddplab/runtime/ops.hpp"
#include "ddplab/runtime/schedule_executor.hpp"
#include "ddplab/strategies/half.hpp"
#include "ddplab/strategies/schedule.hpp"
#include "nccl_communicator.hpp"
#include "op_compare.hpp"

namespace ddplab {
namespace {

class Nccl : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string why = cuda_device_unavailable_reason();
    if (!why.empty()) GTEST_SKIP() << why;
    ops = make_cuda_ops(CudaOpsOptions{});  // the static library's backend: cuda_stream needs its type
    comm = make_nccl_communicator({});
  }
  std::unique_ptr<Ops> ops;
  std::unique_ptr<Communicator> comm;
};

TEST_F(Nccl, WorldOfOne) {
  EXPECT_EQ(comm->rank(), 0);
  EXPECT_EQ(comm->size(), 1);
  comm->barrier();
}

TEST_F(Nccl, EveryScheduleLeavesTheBufferAsTheSumOfOne) {
  const std::size_t count = 100003;
  const auto host = test::random_floats(count, 3);
  for (const ScheduleInfo& info : schedules()) {  // allreduce, reduce_scatter, all_gather: identity at n = 1
    if (info.backend_own) continue;               // no Schedule: NativeCollectives below
    ScheduleParams p;
    p.world_size = 1, p.count = count;
    const Schedule s = info.build(p);
    test::Dev buf(*ops, host);
    ops->synchronize();
    ScheduleExecutor ex(*comm);
    ex.run(s, buf.get(), ElemType::F32);
    EXPECT_EQ(buf.host(), host) << info.name << " " << info.collective;
  }
}

TEST_F(Nccl, NativeCollectivesOnDeviceAndHostBuffers) {
  const std::size_t count = 4099;
  const auto host = test::random_floats(count, 4);
  test::Dev d(*ops, host);
  ops->synchronize();
  comm->allreduce_sum(d.get(), count);
  comm->reduce_scatter_sum(d.get(), count);
  comm->all_gather_shards(d.get(), count);
  comm->all_gather(d.get(), count * sizeof(float));
  comm->broadcast(d.get(), count * sizeof(float), 0);
  EXPECT_EQ(d.host(), host);
  std::vector<double> sums = {1.5, -2.0, 3.25};  // host memory: staged through the device
  comm->allreduce_sum(sums.data(), sums.size());
  EXPECT_EQ(sums, (std::vector<double>{1.5, -2.0, 3.25}));
  std::vector<int> mins = {7, -3};
  comm->allreduce_min(mins.data(), mins.size());
  EXPECT_EQ(mins, (std::vector<int>{7, -3}));
  const int mine = 42;
  int got = 0;
  comm->gather(&mine, sizeof mine, &got, 0);
  EXPECT_EQ(got, 42);
}

TEST_F(Nccl, ComputeStreamOrdersTheCollective) {
  // A scale queued on the compute stream must land before the gather (out of place) reads the buffer.
  NcclOptions o;
  o.compute_stream = cuda_stream(*ops);
  comm.reset();
  comm = make_nccl_communicator(o);
  const std::size_t n = std::size_t(1) << 24;
  const auto host = test::random_floats(n, 5);
  test::Dev src(*ops, host), dst(*ops, std::vector<float>(n));
  ops->synchronize();
  for (int i = 0; i < 4; ++i) ops->scale(src.get(), n, 2.0f);
  comm->gather(src.get(), n * sizeof(float), dst.get(), 0);
  const auto out = dst.host();
  for (std::size_t i = 0; i < n; i += 4093) ASSERT_EQ(out[i], 16.0f * host[i]) << i;
}

// What a multi-rank schedule does on every received chunk: the device reduce must equal the host one
// bit for bit (F32 sums; F16 and BF16 rounded once from the float sum).
TEST_F(Nccl, DeviceReduceMatchesHostSumInto) {
  const std::size_t n = 65537;
  const auto a = test::random_floats(n, 6, -100, 100), b = test::random_floats(n, 7, -100, 100);
  for (ElemType t : {ElemType::F32, ElemType::F16, ElemType::BF16}) {
    const std::size_t eb = elem_bytes(t);
    std::vector<unsigned char> ha(n * eb), hb(n * eb);
    for (std::size_t i = 0; i < n; ++i) {
      if (t == ElemType::F32) {
        std::memcpy(&ha[i * 4], &a[i], 4), std::memcpy(&hb[i * 4], &b[i], 4);
      } else {
        const std::uint16_t x = t == ElemType::F16 ? float_to_f16(a[i]) : float_to_bf16(a[i]);
        const std::uint16_t y = t == ElemType::F16 ? float_to_f16(b[i]) : float_to_bf16(b[i]);
        std::memcpy(&ha[i * 2], &x, 2), std::memcpy(&hb[i * 2], &y, 2);
      }
    }
    void *da = nullptr, *db = nullptr;
    ASSERT_EQ(cudaMalloc(&da, n * eb), cudaSuccess);
    ASSERT_EQ(cudaMalloc(&db, n * eb), cudaSuccess);
    cudaMemcpy(da, ha.data(), n * eb, cudaMemcpyHostToDevice);
    cudaMemcpy(db, hb.data(), n * eb, cudaMemcpyHostToDevice);
    cuda::sum_into(t, da, db, n, nullptr);
    std::vector<unsigned char> got(n * eb);
    cudaMemcpy(got.data(), da, n * eb, cudaMemcpyDeviceToHost);
    cudaFree(da), cudaFree(db);
    sum_into(t, ha.data(), hb.data(), n);
    EXPECT_EQ(got, ha) << elem_name(t);
  }
}

// `ddplab bench collectives --backend nccl` at world 1: every schedule and ncclAllReduce on device buffers,
// each result read back and checked.
TEST_F(Nccl, CollectiveBenchOnDeviceBuffers) {
  CollectiveBenchOptions opt;
  opt.sizes = {4, 4100, std::uint64_t(1) << 22};
  opt.schedules = allreduce_schedule_names();
  opt.iters = 3, opt.warmup = 1;
  opt.device = ops.get();
  opt.backend = "nccl";
  std::size_t rows = 0;
  run_collective_bench(*comm, opt, [&](const CollectiveBenchRow& r) {
    ++rows;
    ASSERT_TRUE(r.wrong.has_value());
    EXPECT_EQ(*r.wrong, 0) << r.schedule << " at " << r.bytes << " B";
    EXPECT_GT(r.time_us, 0) << r.schedule;
  });
  EXPECT_EQ(rows, opt.schedules.size() * opt.sizes.size());
  opt.device = nullptr;  // NCCL needs device buffers: refused, not run on host memory
  EXPECT_THROW(run_collective_bench(*comm, opt, {}), ddplab::InternalError);
}

// `ddplab calibrate --backend cuda`'s compute: per-layer device times (CUDA events). The 4096 x 4096 layer
// at batch 1024 is 34.4 GFLOP forward: its time must put it between 1 TFLOP/s and 100 TFLOP/s (above any
// GPU's fp32 peak), far above the 16-wide input layer's. Its backward is two GEMMs of that size (weight
// and input gradients), the input layer's one (no input gradient).
TEST_F(Nccl, CalibrateComputeIsTimedOnTheDevice) {
  const std::vector<int> widths = {16, 4096, 4096, 10};
  const MlpComputeTimes t = measure_mlp_compute(*comm, *ops, widths, 1024, 1, 5, OptimizerConfig{});
  ASSERT_EQ(t.forward_s.size(), 3u);
  ASSERT_EQ(t.backward_s.size(), 3u);
  const double flops = 2.0 * 1024 * 4096 * 4096;
  EXPECT_GT(flops / t.forward_s[1], 1e12);
  EXPECT_LT(flops / t.forward_s[1], 100e12);
  EXPECT_GT(t.backward_s[1], 1.5 * t.forward_s[1]);
  EXPECT_GT(t.forward_s[1], 10 * t.forward_s[0]);
  for (std::size_t l = 0; l < 3; ++l) EXPECT_GT(t.forward_s[l], 0) << l;
  EXPECT_GT(t.optimizer_s, 0);
}

}  // namespace
}  // namespace ddplab
