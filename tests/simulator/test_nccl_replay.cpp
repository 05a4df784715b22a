// `native` on NCCL in the simulator: a model schedule's timing in the replay (against alpha-beta), NVLS and the
// striped ring against their analytic times, the aggregated mode against the exact one, and the network
// model the presets choose.
#include <gtest/gtest.h>

#include <fmt/format.h>

#include "ddplab/core/metrics.hpp"
#include "ddplab/simulator/collective_sim.hpp"
#include "ddplab/strategies/model_library.hpp"
#include "ddplab/strategies/nccl_model.hpp"
#include "platform.hpp"
#include "sim_test_util.hpp"

namespace ddplab {
namespace {

void expect_within(double got, double expected, double rel) { EXPECT_NEAR(got, expected, rel * expected) << got; }

TEST(NcclReplay, TimingAddsStartStepDelaysAndWireBytes) {
  // Two ranks on the default star, one step each way; CM02 without cross-traffic: a message takes
  // 2 x latency + wire bytes / bandwidth.
  const ClusterConfig c;
  Schedule s = make_schedule("ring", ScheduleParams{2, 1 << 20, 1, 0}, Collective::Allreduce);  // 2 steps of 2 MiB
  const double plain = simulate_schedule(c, s, 4, test::alpha_beta()).step_s;
  expect_within(plain, 2 * (2 * c.link_latency + (2u << 20) / c.link_bandwidth), 1e-3);
  s.timing.start_s = 50e-6;
  s.timing.intra_hop_s = s.timing.inter_hop_s = 7e-6;
  s.timing.wire_factor = 2;
  const SimStepResult r = simulate_schedule(c, s, 4, test::alpha_beta());
  expect_within(r.step_s, 50e-6 + 2 * (7e-6 + 2 * c.link_latency + 2 * (2u << 20) / c.link_bandwidth), 1e-3);
  EXPECT_EQ(r.bytes_sent[0], 4u << 20);  // payload, not wire bytes
}

CollectiveBenchRow native_row(const std::string& preset, int world, std::uint64_t bytes, const std::string& mode) {
  CollectiveSimRequest req;
  apply_cluster_preset(req.cluster, preset);
  req.world_size = world;
  req.schedules = {"native"};
  req.sizes = {bytes};
  req.transport = Transport::Nccl;
  req.options.mode = mode;
  return simulate_collective_bench(req).front();
}

TEST(NcclReplay, NvlsOnOneH100NodeTakesItsAnalyticTime) {
  ClusterConfig c;
  apply_cluster_preset(c, "dgx-h100");
  // 25 us (NVLS's latency: 0.6 us of wire, the rest a delay) + 9/8 of the buffer, plus the 2 steps that fill
  // NVLS's pipeline, each way at the NVLink's effective rate times NVLS's efficiency. A step is a chunk per
  // channel (16) and GPU (8): 64 KiB chunks at 256 MiB, 32 KiB at 16 MiB (NCCL's chunking for NVLS).
  for (const auto& [bytes, chunk] : {std::pair<std::uint64_t, double>{256u << 20, 64 << 10}, {16u << 20, 32 << 10}}) {
    const CollectiveBenchRow row = native_row("dgx-h100", 8, bytes, "exact");
    const double fill = 2 * 16 * 8 * chunk;
    const double t = 25e-6 + (bytes + fill) * 9.0 / 8.0 / (c.intra_bandwidth * c.intra_efficiency * 0.85);
    expect_within(row.time_us * 1e-6, t, 0.01);
  }
}

TEST(NcclReplay, StripedRingIsLimitedByTheNodesNics) {
  // 2 DGX H100, 1 GiB: the ring's bus bytes over 8 NICs of 47 GB/s, not over one.
  ClusterConfig c;
  apply_cluster_preset(c, "dgx-h100");
  const CollectiveBenchRow row = native_row("dgx-h100", 16, 1u << 30, "exact");
  const double nics = 8 * c.link_bandwidth * c.link_efficiency;
  EXPECT_GT(row.busbw_gbs * 1e9, 0.9 * nics);
  EXPECT_LE(row.busbw_gbs * 1e9, nics);
}

TEST(NcclReplay, AggregatedAgreesWithExact) {
  // The striped ring (built directly in the aggregated mode) and the double tree, 4 nodes.
  for (const std::uint64_t bytes : {std::uint64_t{64} << 10, std::uint64_t{4} << 20, std::uint64_t{256} << 20}) {
    const double exact = native_row("dgx-a100", 32, bytes, "exact").time_us;
    const double agg = native_row("dgx-a100", 32, bytes, "aggregated").time_us;
    expect_within(agg, exact, 0.02);
  }
}

TEST(NcclReplay, AddingNodesNeverLowersBusBandwidthAtLargeSizes) {
  double before = 0;
  for (int world : {16, 32, 64}) {
    const double busbw = native_row("dgx-h100", world, 1u << 30, "auto").busbw_gbs;
    EXPECT_GT(busbw, 0.9 * before) << world;
    before = busbw;
  }
}

TEST(NcclReplay, PresetsChooseTheirNetworkModel) {
  ClusterConfig dgx, eth, plain;
  apply_cluster_preset(dgx, "dgx-a100");
  apply_cluster_preset(eth, "eth-25g");
  SimOptions o;  // "auto"
  EXPECT_EQ(network_model_for(dgx, o), "CM02");
  EXPECT_EQ(network_model_for(eth, o), "LV08");
  EXPECT_EQ(network_model_for(plain, o), "LV08");
  o.network_model = "CM02";
  EXPECT_EQ(network_model_for(eth, o), "CM02");
  // What NCCL's tuner is told about the node: NIC stripes and NVLS follow the preset.
  const NcclFabric f = sim::nccl_fabric(dgx);
  EXPECT_EQ(f.nics_per_node, 8);
  EXPECT_FALSE(f.nvls);
  EXPECT_DOUBLE_EQ(f.intra_bw, 300e9 * 0.77);
}

TEST(NcclReplay, SimulateSaysWhatNcclRanPerCollective) {
  const Scenario sc = parse_scenario(
      "[model]\ntype = \"table\"\ntable = \"resnet50\"\n[train]\nbackend = \"cuda\"\nbatch_size = 32\n"
      "[cluster]\npreset = \"dgx-h100\"\n[[strategy]]\nname = \"ddp\"\npolicy = \"overlap\"\n"
      "[[strategy]]\nname = \"ring\"\npolicy = \"overlap\"\nschedule = \"ring\"\n",
      "ddp.toml");
  // ResNet-50's 97.5 MiB in 25 MiB buckets (the first of 1 MiB): 5 allreduces, NVLS on one node.
  EXPECT_EQ(describe_nccl_choices(sc, sc.strategies[0], 8, {}), "nvls/Simple x5");
  EXPECT_EQ(describe_nccl_choices(sc, sc.strategies[1], 8, {}), "");  // not native
  SimOptions mpi;
  mpi.native = NativeReplay{Transport::Mpi, ""};
  EXPECT_EQ(describe_nccl_choices(sc, sc.strategies[0], 8, mpi), "");
}

// PyTorch DDP (overlap, 25 MiB buckets, NCCL's allreduce) on the DGX presets: a second and a third node only
// add throughput. The suite checks two models; the study every shipped one (a minute and a half).
void adding_a_node_never_lowers_ddp_throughput(const std::vector<std::string_view>& tables) {
  for (const char* preset : {"dgx-h100", "dgx-a100"})
    for (std::string_view table : tables) {
      const std::string text = fmt::format(
          "[model]\ntype = \"table\"\ntable = \"{}\"\n[train]\nbackend = \"cuda\"\nbatch_size = 8\n"
          "[cluster]\npreset = \"{}\"\ncompute_efficiency = 0.4\n[[strategy]]\nname = \"ddp\"\npolicy = \"overlap\"\n",
          table, preset);
      const Scenario sc = parse_scenario(text, "ddp.toml");
      const ModelSpec spec = model_spec_for(sc.model);
      const double compute_s = 8 * (spec.forward_flops() + spec.backward_flops()) / (*sc.cluster.device_flops * 0.4);
      double before = 0;
      for (int world : {8, 16, 24}) {
        const SimPatternResult r =
            simulate_pattern(sc, sc.strategies.front(), world, compute_s, 0.0, {}, sc.cluster.devices_per_node);
        EXPECT_GT(r.samples_per_s, before) << preset << " " << table << " at " << world;
        before = r.samples_per_s;
      }
    }
}

TEST(NcclReplay, AddingANodeNeverLowersDdpThroughputOnDgxPresets) {
  adding_a_node_never_lowers_ddp_throughput({"resnet50", "bert_large"});
}

TEST(NcclReplay, AddingANodeNeverLowersDdpThroughputForEveryShippedModel) {
  adding_a_node_never_lowers_ddp_throughput({kBuiltinModelTables.begin(), kBuiltinModelTables.end()});
}

}  // namespace
}  // namespace ddplab
