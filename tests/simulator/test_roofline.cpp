// [cluster] compute_model = "roofline" (compute_source.hpp's simulated_model), by hand on a two-layer table:
// at 100 TFLOP/s x 0.5 and 1 TB/s a byte of traffic costs what 50 FLOPs do. The matrix product (1 MFLOP
// forward, 1024 B out) stays compute-bound; the norm (320 FLOPs) moves its input and output, 1024 + 256 B,
// so it takes as long as 64,000 FLOPs forward and twice that backward, half of both in bf16.
#include <gtest/gtest.h>

#include <fstream>

#include "ddplab/core/store.hpp"
#include "ddplab/simulator/compute_source.hpp"
#include "temp_dir.hpp"

namespace ddplab {
namespace {

Scenario two_layers(const test::TempDir& tmp, const std::string& model) {
  const std::string table = tmp.file("two.csv");
  std::ofstream(table) << "name,params,forward_flops,backward_flops,activation_bytes\n"
                       << "fc,weight:16x16,1048576,2097152,1024\nln,weight:16;bias:16,320,640,256\n";
  return parse_scenario("[model]\ntype = \"table\"\ntable = \"" + table +
                            "\"\n[train]\nbatch_size = 4\n"
                            "[cluster]\ndevice_flops = 100e12\ncompute_efficiency = 0.5\ndevice_mem_bw = \"1TB/s\"\n"
                            "compute_model = \"" +
                            model + "\"\n[[strategy]]\nname = \"ddp\"\npolicy = \"overlap\"\n",
                        tmp.file("r.toml"));
}

TEST(Roofline, MemoryBoundLayersTakeTheirTrafficsTime) {
  const test::TempDir tmp("ddplab-roofline");
  Scenario sc = two_layers(tmp, "roofline");
  ModelSpec m = simulated_model(sc);
  EXPECT_EQ(m.layers[0].forward_flops, 1048576);
  EXPECT_EQ(m.layers[0].backward_flops, 2097152);
  EXPECT_DOUBLE_EQ(m.layers[1].forward_flops, 64000);
  EXPECT_DOUBLE_EQ(m.layers[1].backward_flops, 128000);
  const Store none(":memory:");
  EXPECT_DOUBLE_EQ(compute_source(sc, sc.strategies[0], none, "flops").compute_s,
                   4 * (1048576 + 2097152 + 64000 + 128000) / 50e12);
  sc.train.precision = "bf16";
  m = simulated_model(sc);
  EXPECT_DOUBLE_EQ(m.layers[1].forward_flops, 32000);
  EXPECT_DOUBLE_EQ(m.layers[1].backward_flops, 64000);
  EXPECT_EQ(simulated_model(two_layers(tmp, "flops")).layers[1].forward_flops, 320) << "flops: the table's";
}

TEST(Roofline, NeedsTheDevicesPeakAndMemoryBandwidth) {
  try {
    parse_scenario(
        "[cluster]\ndevice_flops = 1e12\ncompute_model = \"roofline\"\n[[strategy]]\nname = \"a\"\n"
        "policy = \"overlap\"\n",
        "r.toml");
    FAIL() << "no device_mem_bw";
  } catch (const ScenarioError& e) {
    EXPECT_EQ(std::string(e.what()),
              "r.toml:3:17: cluster.compute_model = \"roofline\" needs cluster.device_flops and "
              "cluster.device_mem_bw (or a preset's)");
  }
  EXPECT_NO_THROW(
      parse_scenario("[cluster]\npreset = \"dgx-a100\"\ncompute_model = \"roofline\"\n[[strategy]]\n"
                     "name = \"a\"\npolicy = \"overlap\"\n",
                     "r.toml"));
}

}  // namespace
}  // namespace ddplab
