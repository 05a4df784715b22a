// The runtime's PlanExecutor on the CUDA backend (label gpu; skipped with the reason without a device), the
// path `ddplab run --backend cuda` takes on every rank: for each policy, codec and optimizer, a few steps
// with NCCL on device buffers (codecs on the device, no per-op synchronize, CUDA-event timing) and with
// host staging (the cuda+mpi path, here over the single-process communicator) against the same steps on
// the reference backend. World size 1: the check machine has one GPU.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>

#include "ddplab/runtime/communicator.hpp"
#include "ddplab/runtime/input_pipeline.hpp"
#include "ddplab/runtime/mlp.hpp"
#include "ddplab/runtime/ops.hpp"
#include "ddplab/runtime/plan_executor.hpp"
#include "optimizer_runs.hpp"
#include "ddplab/strategies/strategy.hpp"
#include "numbered_dataset.hpp"

namespace ddplab {
namespace {

const std::vector<int> kLayers = {64, 48, 32, 10};
constexpr int kBatch = 16, kSteps = 6;

struct Outcome {
  std::vector<float> params;
  double compute_s = 0, step_s = 0;
};

Outcome train(Ops& ops, Communicator& comm, const StrategyConfig& config, const OptimizerConfig& oc) {
  Mlp model(ops, kLayers, kBatch);
  model.init(3);
  StrategyContext ctx;
  ctx.batch_size = kBatch;
  ctx.clip_grad_norm = oc.clip_grad_norm > 0;
  Strategy strategy(config, ModelSpec::mlp(kLayers), ctx);
  Outcome out;
  {
    PlanExecutor exec(comm, ops, model, strategy, oc);
    std::mt19937 rng(11);
    std::normal_distribution<float> x01;
    std::vector<float> x(static_cast<std::size_t>(kBatch * kLayers.front()));
    std::vector<std::int32_t> y(kBatch);
    DeviceBuffer dx(ops, x.size());
    std::int32_t* dy = ops.alloc_labels(y.size());
    for (int s = 0; s < kSteps; ++s) {
      for (float& v : x) v = x01(rng);
      for (auto& l : y) l = static_cast<std::int32_t>(rng() % 10);
      ops.to_device(dx.data(), x.data(), x.size());
      ops.labels_to_device(dy, y.data(), y.size());
      const StepRecord rec = exec.run_step(s, dx.data(), dy, kBatch);
      out.compute_s += rec.compute_s, out.step_s += rec.step_s;
    }
    ops.free_labels(dy);
  }
  out.params.resize(model.num_params());
  ops.to_host(out.params.data(), model.params(), out.params.size());
  return out;
}

StrategyConfig config(const std::string& policy, const std::string& codec) {
  StrategyConfig c;
  c.name = policy + "/" + codec;
  c.policy = policy;
  c.codec = codec;
  c.bucket_cap = 4096, c.first_bucket_cap = 1024;  // several buckets
  if (codec == "powersgd") c.codec_options = {{"rank", "2"}, {"start_iter", "2"}};
  return c;
}

class GpuPlanExecutor : public ::testing::Test {
 protected:
  void SetUp() override {
    const std::string why = cuda_unavailable_reason();
    if (!why.empty()) GTEST_SKIP() << why;
  }
};

TEST_F(GpuPlanExecutor, NcclAndStagedMatchTheReference) {
  auto single = make_single_process_communicator();
  auto ref = make_reference_ops();
  // Every optimizer (the per-tensor ones where the policy keeps tensors whole), and clipping.
  for (const OptimizerConfig& oc : test::optimizer_runs({"sgd"}))
    for (const StrategyConfig& c :
         {config("flat", "none"), config("overlap", "none"), config("overlap", "fp16"), config("bucketed", "bf16"),
          config("overlap", "topk"), config("zero1", "none"), config("overlap", "powersgd")}) {
      if (!optimizer_runs_with(*find_optimizer(oc.name), *find_policy(c.policy))) continue;
      const std::string what = " " + oc.name + (oc.clip_grad_norm > 0 ? " clipped " : " ");
      const Outcome want = train(*ref, *single, c, oc);
      auto cuda = make_cuda_ops();
      auto nccl = open_nccl_communicator(*single, *cuda, 60);
      const Outcome device = train(*cuda, *nccl, c, oc), staged = train(*cuda, *single, c, oc);
      for (const Outcome* got : {&device, &staged}) {
        ASSERT_EQ(got->params.size(), want.params.size());
        double worst = 0;
        for (std::size_t i = 0; i < want.params.size(); ++i)
          worst = std::max(worst, std::abs(got->params[i] - want.params[i]) / (1e-4 + 1e-3 * std::abs(want.params[i])));
        EXPECT_LE(worst, 1.0) << c.name << what << (got == &device ? "nccl" : "staged");
      }
      // CUDA-event times: positive, and inside the host-timed steps.
      EXPECT_GT(device.compute_s, 0.0) << c.name;
      EXPECT_LE(device.compute_s, device.step_s) << c.name;
      EXPECT_GT(cuda->peak_device_bytes(), 0u);
    }
}

// Double-buffered input: what the pipeline uploads is what gather_batch gives, slot by slot.
TEST_F(GpuPlanExecutor, InputPipelineUploadsBothSlots) {
  auto cuda = make_cuda_ops();
  const Dataset d = test::numbered_dataset(40, 5);
  std::vector<std::size_t> idx(40);
  for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = (i * 7) % 40;
  InputPipeline in(*cuda, d, 8);
  in.load(0, idx, 0, 8);
  in.load(1, idx, 8, 5);
  in.ready();
  for (std::size_t slot : {0u, 1u}) {
    const int n = slot == 0 ? 8 : 5;
    std::vector<float> want(static_cast<std::size_t>(n * d.features)), got(want.size());
    std::vector<std::int32_t> want_y(static_cast<std::size_t>(n));
    gather_batch(d, idx, slot * 8, n, want.data(), want_y.data());
    cuda->to_host(got.data(), in.x(slot), got.size());
    EXPECT_EQ(got, want) << "slot " << slot;
  }
}

// The loader thread (bound to the device) gathers and uploads every step of two epochs; each step reads
// exactly gather_batch's samples.
TEST_F(GpuPlanExecutor, InputPipelineLoaderThreadUploadsEveryStep) {
  auto cuda = make_cuda_ops();
  const Dataset d = test::numbered_dataset(44, 7);
  DistributedSampler sampler(d.size(), 0, 1, 4);
  InputPipeline in(*cuda, d, 8);
  in.plan(sampler, 2, 0);
  int b = in.load_step(0);
  for (std::size_t s = 0; s < in.steps(); ++s) {
    in.ready();
    const int this_b = b;
    if (s + 1 < in.steps()) b = in.load_step(s + 1);
    std::vector<float> want(static_cast<std::size_t>(this_b * d.features)), got(want.size());
    std::vector<std::int32_t> want_y(static_cast<std::size_t>(this_b));
    gather_batch(d, sampler.indices(static_cast<int>(s / 6)), (s % 6) * 8, this_b, want.data(), want_y.data());
    cuda->to_host(got.data(), in.x(s % 2), got.size());  // on the compute stream, behind ready()
    EXPECT_EQ(got, want) << "step " << s;
  }
}

// The copy into a slot waits for the compute queued before it, which may still read that slot (a bare
// training loop does not synchronize between steps). Twenty products C = A * I read A for several
// milliseconds; a copy of zeros into A queued right behind them must not change what they read.
TEST_F(GpuPlanExecutor, PrefetchWaitsForComputeThatReadsItsSlot) {
  auto cuda = make_cuda_ops();
  const int n = 2048;
  const std::size_t nn = static_cast<std::size_t>(n) * n;
  std::vector<float> a(nn), eye(nn, 0.0f), got(nn);
  std::mt19937 rng(5);
  std::uniform_real_distribution<float> u(-1.0f, 1.0f);
  for (float& v : a) v = u(rng);
  for (int i = 0; i < n; ++i) eye[static_cast<std::size_t>(i) * n + i] = 1.0f;
  DeviceBuffer da(*cuda, nn), di(*cuda, nn), dc(*cuda, nn);
  cuda->to_device(da.data(), a.data(), nn);
  cuda->to_device(di.data(), eye.data(), nn);
  auto* zeros = static_cast<float*>(cuda->alloc_host(nn * sizeof(float)));
  std::fill(zeros, zeros + nn, 0.0f);
  for (int r = 0; r < 20; ++r)  // exact in fp32: one product by 1, the rest by 0
    cuda->gemm(false, false, n, n, n, 1.0f, da.data(), n, di.data(), n, 0.0f, dc.data(), n);
  cuda->prefetch(da.data(), zeros, nn * sizeof(float));
  cuda->wait_prefetch();
  cuda->synchronize();
  cuda->to_host(got.data(), dc.data(), nn);
  std::size_t differ = 0;
  for (std::size_t i = 0; i < nn; ++i) differ += got[i] != a[i];
  EXPECT_EQ(differ, 0u) << "the upload overwrote A while products still read it";
  cuda->to_host(got.data(), da.data(), nn);
  EXPECT_EQ(std::count(got.begin(), got.end(), 0.0f), static_cast<std::ptrdiff_t>(nn)) << "the upload did not land";
  cuda->free_host(zeros);
}

}  // namespace
}  // namespace ddplab
