// Pipeline layouts ([parallel] pp > 1) on the simulator: each stage's plan replayed on its ranks, the
// activations between stages and the DP sync inside each stage's group on the wire, and the bubble coming
// from the schedule's dependencies: on a network too fast to matter the step takes pipeline_makespan's time.
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <fstream>
#include <map>
#include <string>

#include "ddplab/simulator/simulator.hpp"
#include "ddplab/strategies/pipeline.hpp"
#include "sim_test_util.hpp"

namespace ddplab {
namespace {

// Four identical layers (forward 1 MFLOP, backward 2 MFLOP, 1000 parameters, 4 KiB of activations per
// sample): every stage and chunk has the same work, as pipeline_makespan assumes.
// Named per process: ctest runs tests two at a time, and another test of this file may be writing it.
std::string uniform_table() {
  const std::string path = testing::TempDir() + "pipeline_uniform-" + std::to_string(getpid()) + ".csv";
  std::ofstream f(path);
  f << "name,params,forward_flops,backward_flops,activation_bytes\n";
  for (int l = 0; l < 4; ++l) f << "block" << l << ",weight:10x100,1000000,2000000,4096\n";
  return path;
}

Scenario pipeline_scenario(int pp, int microbatches, const std::string& schedule, int chunks) {
  Scenario sc = test::small_mlp_scenario("pipeline");
  sc.model.type = ModelType::Table;
  sc.model.table = uniform_table();
  sc.parallel.pp = pp;
  sc.parallel.microbatches = microbatches;
  sc.parallel.pipeline_schedule = schedule;
  sc.parallel.virtual_stages = chunks;
  return sc;
}

StrategyConfig overlap_ring() { return test::strategy_config("overlap", "ring"); }

TEST(SimulatorPipeline, StepTimeIsTheSchedulesMakespan) {
  for (const PipelineInfo& info : pipeline_schedules()) {
    const int chunks = info.interleaved ? 2 : 1;
    Scenario sc = pipeline_scenario(2, 4, info.name, chunks);
    sc.cluster.link_bandwidth = 1e15;  // the network costs nothing next to the compute
    sc.cluster.link_latency = 1e-12;
    const double compute_s = 1.0;  // the whole model's forward and backward of the batch, on one device
    const auto steps = simulate_steps(sc, overlap_ring(), 2, compute_s, 0.0, {3}, test::alpha_beta(), 1);
    // A chunk's forward of one microbatch: its share of the FLOPs (3 per sample and layer of which 1 forward).
    const double layers_per_chunk = 4.0 / (2 * chunks);
    const double tf = compute_s * layers_per_chunk * 1.0 / (4 * 3.0) / 4, tb = 2 * tf;
    const double expected = pipeline_makespan(info, {2, 4, chunks}, tf, tb);
    // To 1e-4: the platform's fixed route latencies (about 5 us in all) remain; a pass is 10 ms.
    EXPECT_NEAR(steps.front().step_s, expected, 1e-4 * expected) << info.name;
    // Each stage computes half the model; the rest of its step is waiting for the other (the bubble).
    EXPECT_NEAR(steps.front().ranks[0].compute_s, compute_s / 2, 1e-6) << info.name;
  }
}

TEST(SimulatorPipeline, ActivationsBetweenStagesAndGradientsInsideEachDpGroup) {
  // PP 2 x DP 2 on 4 ranks, Megatron's placement: stage 0 is ranks 0 and 1, stage 1 ranks 2 and 3; the
  // pipelines are {0, 2} and {1, 3}.
  Scenario sc = pipeline_scenario(2, 4, "1f1b", 1);
  const auto steps = simulate_steps(sc, overlap_ring(), 4, 0.01, 0.0, {3}, test::alpha_beta(), 1);
  const auto& between = steps.front().bytes_between;
  auto bytes = [&](int a, int b) {
    const auto it = between.find({a, b});
    return it == between.end() ? 0u : it->second;
  };
  // 4 microbatches of 8 samples, 4096 B each, forward and (as gradients) backward.
  const std::uint64_t p2p = 4u * 8 * 4096;
  EXPECT_EQ(bytes(0, 2), p2p);
  EXPECT_EQ(bytes(2, 0), p2p);
  EXPECT_EQ(bytes(1, 3), p2p);
  EXPECT_EQ(bytes(3, 1), p2p);
  EXPECT_EQ(bytes(0, 3), 0u) << "no traffic across pipelines of different replicas";
  EXPECT_EQ(bytes(1, 2), 0u);
  // The ring allreduce of a stage's 2 x 1000 parameters over its 2 replicas: each sends the whole once.
  EXPECT_EQ(bytes(0, 1), 2u * 1000 * 4);
  EXPECT_EQ(bytes(1, 0), 2u * 1000 * 4);
  EXPECT_EQ(bytes(2, 3), 2u * 1000 * 4);
  EXPECT_EQ(bytes(3, 2), 2u * 1000 * 4);
}

TEST(SimulatorPipeline, PatternCountsAReplicasSamplesOnceAndChecksMemoryPerStage) {
  Scenario sc = pipeline_scenario(2, 4, "1f1b", 1);
  const SimPatternResult r = simulate_pattern(sc, overlap_ring(), 4, 0.01, 0.0, test::alpha_beta(), 1);
  const auto rows = step_rows(r);
  std::map<int, std::int64_t> samples;
  for (const auto& m : rows) samples[m.rank] += m.samples;
  EXPECT_EQ(samples[0], 0) << "stage 0 finishes no sample";
  EXPECT_GT(samples[2], 0);
  EXPECT_NEAR(r.samples_per_s * r.step_s, 2.0 * sc.train.batch_size, 1e-6) << "2 replicas of a batch per step";
  // Stage 0 of 1F1B with 2 stages holds 2 microbatches of its 2 layers: 2 x 8 samples x 2 x 4096 B.
  const MemoryCheck m = check_memory(sc, overlap_ring(), 4, 1);
  EXPECT_DOUBLE_EQ(m.memory.activations, 2.0 * 8 * 2 * 4096);
  EXPECT_DOUBLE_EQ(m.memory.parameters, 4.0 * 2 * 1000);
}

// TP 2 x DP 2 on 4 ranks (TP groups {0, 1}, {2, 3}; DP groups {0, 2}, {1, 3}): the TP allreduces stay
// inside a TP pair, the gradient sync of each rank's share inside its DP pair, and on a free network the
// step is the rank's share of the compute.
TEST(SimulatorPipeline, TensorParallelAllreducesStayInTheirGroups) {
  Scenario sc = test::small_mlp_scenario("tp");
  sc.model.layers = {784, 256, 128, 10};  // column, row, classifier replicated
  sc.parallel.tp = 2;
  sc.cluster.link_bandwidth = 1e15;
  sc.cluster.link_latency = 1e-12;
  const auto steps = simulate_steps(sc, overlap_ring(), 4, 1.0, 0.0, {3}, test::alpha_beta(), 1);
  const auto& between = steps.front().bytes_between;
  auto bytes = [&](int a, int b) {
    const auto it = between.find({a, b});
    return it == between.end() ? 0u : it->second;
  };
  // Layer 1's output, 32 samples x 128 floats, a ring allreduce of 2 ranks: each sends it once.
  EXPECT_EQ(bytes(0, 1), 32u * 128 * 4);
  EXPECT_EQ(bytes(2, 3), 32u * 128 * 4);
  // A rank's share: 784 x 128 + 128, 256 / 2 x 128 + 128, 128 x 10 + 10, allreduced once with its replica.
  EXPECT_EQ(bytes(0, 2), (784u * 128 + 128 + 128 * 128 + 128 + 128 * 10 + 10) * 4);
  EXPECT_EQ(bytes(0, 3), 0u);
  const ModelSpec m = ModelSpec::mlp(sc.model.layers);
  const double share = (m.layers[0].forward_flops + m.layers[0].backward_flops + m.layers[1].forward_flops +
                        m.layers[1].backward_flops) /
                           2 +
                       m.layers[2].forward_flops + m.layers[2].backward_flops;
  const double expected = share / (m.forward_flops() + m.backward_flops());
  EXPECT_NEAR(steps.front().ranks[1].compute_s, expected, 1e-9);
  // The rest of the step is the DP sync's local work (its averaging, at this slow compute's FLOP rate).
  EXPECT_LT(steps.front().step_s - expected, 0.01 * expected);
}

// The TP allreduces run on the compute stream: the DP sync of the buckets whose gradients are ready runs on
// the comm stream meanwhile, while the pass still waits for the TP allreduce of a lower layer's input
// gradient. Were they in one FIFO, no DP sync could start before the step's last TP allreduce ended.
TEST(SimulatorPipeline, DpSyncOverlapsThePassesTpAllreduces) {
  Scenario sc = test::small_mlp_scenario("tp-overlap");
  sc.model.layers = {784, 512, 512, 512, 512, 10};  // column, row, column, row, classifier
  sc.parallel.tp = 2;
  StrategyConfig c = overlap_ring();
  c.bucket_cap = 300000;  // several buckets: the last layers' are ready early in backward
  c.first_bucket_cap = 300000;
  SimOptions o = test::alpha_beta();
  o.keep_trace = true;
  const auto steps = simulate_steps(sc, c, 4, 0.05, 0.0, {3}, o, 1);
  double first_sync = 1e9, last_tp = 0;
  for (const SimOpRecord& op : steps.front().ranks[0].trace) {
    if (op.name.rfind("sync_grads", 0) == 0) first_sync = std::min(first_sync, op.start_s);
    if (op.name.rfind("tp_sync", 0) == 0) last_tp = std::max(last_tp, op.end_s);
  }
  ASSERT_GT(last_tp, 0) << "no TP allreduce in the trace";
  EXPECT_LT(first_sync, last_tp) << "the DP sync waited for every TP allreduce";
}

}  // namespace
}  // namespace ddplab
