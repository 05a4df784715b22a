// A model table on the simulator: compute time from its FLOPs and the device, and a DDP step of ResNet-50.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "ddplab/core/store.hpp"
#include "ddplab/simulator/simulator.hpp"
#include "ddplab/strategies/model_library.hpp"
#include "temp_dir.hpp"
#include "sim_test_util.hpp"

namespace ddplab {
namespace {

Scenario resnet50(double device_flops, double efficiency) {
  Scenario s;
  s.name = "resnet-table";
  s.model.type = ModelType::Table;
  s.model.table = "resnet50";
  s.train.batch_size = 32;
  s.cluster.link_bandwidth = 100e9 / 8;
  s.cluster.device_flops = device_flops;
  s.cluster.compute_efficiency = efficiency;
  StrategyConfig st;
  st.name = "overlap-ring";
  st.policy = "overlap";
  st.schedule = "ring";
  s.strategies = {st};
  return s;
}

TEST(SimulatorModelTable, ComputeFromModelFlops) {
  const test::TempDir tmp("ddplab-simtable");
  Store store(tmp.file("results.db"));
  Scenario sc = resnet50(312e12, 0.5);
  const ModelSpec m = load_model_table("resnet50");
  auto src = compute_source(sc, sc.strategies[0], store);
  EXPECT_EQ(src.origin, "model FLOPs / (device_flops x efficiency)");
  EXPECT_DOUBLE_EQ(src.compute_s, 32 * 3 * m.forward_flops() / (312e12 * 0.5));
  EXPECT_NEAR(src.compute_s, 32 * 3 * 8.2e9 / 156e12, 0.02 * src.compute_s);  // about 5 ms
  EXPECT_DOUBLE_EQ(src.optimizer_s, 0.0);

  sc.cluster.device_mem_bw = 1.5e12;  // optimizer: 20 bytes per parameter at memory bandwidth
  src = compute_source(sc, sc.strategies[0], store);
  EXPECT_DOUBLE_EQ(src.optimizer_s, 20.0 * 25'557'032 / 1.5e12);
  EXPECT_EQ(src.origin,
            "model FLOPs / (device_flops x efficiency); optimizer 20 B per parameter (sgd) / device_mem_bw");
  sc.train.optimizer = "adam";  // the optimizer's own traffic: Adam reads and writes two moments
  EXPECT_DOUBLE_EQ(compute_source(sc, sc.strategies[0], store).optimizer_s, 28.0 * 25'557'032 / 1.5e12);
  sc.train.optimizer = "sgd";

  sc.cluster.optimizer_s = 0.001;  // an explicit optimizer time wins
  EXPECT_DOUBLE_EQ(compute_source(sc, sc.strategies[0], store).optimizer_s, 0.001);
  sc.cluster.compute_s = 0.02;  // and so does an explicit compute time
  EXPECT_EQ(compute_source(sc, sc.strategies[0], store).origin, "scenario [cluster].compute_s");

  // The MLP gets the same third source.
  Scenario mlp;
  mlp.cluster.device_flops = 1e12;
  mlp.strategies = {StrategyConfig{}};
  src = compute_source(mlp, mlp.strategies[0], store);
  EXPECT_DOUBLE_EQ(
      src.compute_s,
      64 * (ModelSpec::mlp(mlp.model.layers).forward_flops() + ModelSpec::mlp(mlp.model.layers).backward_flops()) /
          0.5e12);
}

TEST(SimulatorModelTable, ResNet50StepOnFourRanks) {
  const Scenario sc = resnet50(312e12, 0.5);
  const SimOptions o = test::alpha_beta();
  const int n = 4;
  const double compute_s = 0.005;
  const auto r = simulate_step(sc, sc.strategies[0], n, compute_s, 0.0, o, {1, 1});
  // The codec's average of each bucket (8 bytes per element at a core's 10 GB/s: no device_mem_bw here)
  // shares the core with backward.
  EXPECT_GE(r.compute_s, compute_s - 1e-9);
  EXPECT_LE(r.compute_s, compute_s + 8.0 * 25'557'032.0 / 10e9);
  EXPECT_GE(r.step_s, r.compute_s);
  // Every rank sends the ring's 2(n-1)/n of the 102 MB of gradients (within chunk rounding).
  const double grads = 25'557'032.0 * kGradientElemBytes;
  for (std::uint64_t b : r.bytes_sent) EXPECT_NEAR(static_cast<double>(b), 2.0 * (n - 1) / n * grads, 1e4);
  // At 100 Gbit/s the ring takes ~12 ms, more than compute: overlap hides at most compute_s of it.
  const double ring = 2.0 * (n - 1) / n * grads / sc.cluster.link_bandwidth;
  EXPECT_GT(r.comm_s, 0.9 * ring);
  EXPECT_GT(r.step_s, ring);
  EXPECT_LT(r.step_s, compute_s + r.comm_s + 1e-6);
  // One backward op per table row in the trace of rank 0.
  std::size_t backward = 0;
  for (const auto& op : r.ranks.at(0).trace) backward += op.name.rfind("backward", 0) == 0;
  EXPECT_EQ(backward, load_model_table("resnet50").layers.size());
}

// train.recompute = "full": each transformer layer's forward runs again before its backward, at the rate
// compute_s implies for the model's forward and backward; on one rank nothing else takes time.
TEST(SimulatorModelTable, RecomputationRunsTheBlocksForwardAgain) {
  Scenario sc = resnet50(312e12, 0.5);
  sc.model.table = "gpt2_xl";
  sc.train.batch_size = 2;
  sc.cluster.device_mem_bw = 1e18;  // the codec's averaging, which would share the device with backward: free
  const ModelSpec m = load_model_table("gpt2_xl");
  const double share = m.block_forward_flops() / (m.forward_flops() + m.backward_flops());
  EXPECT_NEAR(share, 1.0 / 3, 0.03) << "all but the embeddings and the head are in blocks";
  const double plain = simulate_step(sc, sc.strategies[0], 1, 0.1, 0.0).compute_s;
  sc.train.recompute = "full";
  const auto r = simulate_step(sc, sc.strategies[0], 1, 0.1, 0.0);
  EXPECT_NEAR(plain, 0.1, 1e-5);  // and the codec's few microseconds
  EXPECT_NEAR(r.compute_s - plain, 0.1 * share, 1e-9);
  EXPECT_NEAR(r.step_s, r.compute_s, 1e-6);
}

TEST(SimulatorModelTable, OwnTableAndErrors) {
  const test::TempDir tmp("ddplab-simtable");
  Scenario sc = resnet50(1e12, 0.5);
  sc.model.table = tmp.file("two.csv");
  std::ofstream(sc.model.table) << kModelTableHeader << "\nfc1,weight:256x1024;bias:256,524544,1049088,1024\n"
                                << "fc2,weight:10x256;bias:10,5130,10260,40\n";
  const auto r = simulate_step(sc, sc.strategies[0], 2, 0.001, 0.0);
  EXPECT_GT(r.step_s, 0.001);
  EXPECT_NEAR(static_cast<double>(r.bytes_sent.at(0)), (256 * 1025 + 10 * 257) * 4.0, 16);

  std::ofstream(sc.model.table) << kModelTableHeader << "\nfc1,weight:256x1024,lots,1,1\n";
  try {
    simulate_step(sc, sc.strategies[0], 2, 0.001, 0.0);
    FAIL() << "expected an error";
  } catch (const ModelTableError& e) {
    EXPECT_EQ(std::string(e.what()),
              sc.model.table + ":2:21: forward_flops must be a non-negative number (per sample), got \"lots\"");
  }
}

}  // namespace
}  // namespace ddplab
