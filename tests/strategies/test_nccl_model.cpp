// NCCL's choice and the link load of each choice (nccl_model.hpp): against the switch points NCCL was seen
// to use (docs/published-measurements.md 4.5, 2.8), NCCL's own latency formula, and byte counts per link.
#include <gtest/gtest.h>

#include <map>

#include "ddplab/core/error.hpp"
#include "ddplab/strategies/nccl_model.hpp"
#include "ddplab/strategies/plan.hpp"

namespace ddplab {
namespace {

constexpr std::size_t KiB = 1024, MiB = 1024 * KiB, GiB = 1024 * MiB;

// A DGX H100 as the simulator describes it (dgx-h100: 450 GB/s NVLink x 0.8, 8 x 50 GB/s NICs x 0.94).
NcclFabric h100(bool nvls = true) {
  NcclFabric f;
  f.ranks_per_node = 8;
  f.nics_per_node = 8;
  f.arch = "hopper";
  f.nvls = nvls;
  f.intra_bw = 360e9;
  f.nic_bw = 47e9;
  f.intra_wire_s = 0.6e-6;
  f.inter_wire_s = 1e-6;
  return f;
}

std::string choice(const NcclFabric& f, int n, std::size_t bytes) {
  const NcclChoice c = nccl_choose(f, Collective::Allreduce, n, bytes);
  return c.algorithm + "/" + c.protocol;
}

TEST(NcclModel, OneNodeSwitchesFromRingLLToNvlsAtTwoMiB) {
  // 8x H200, NCCL 2.27.7: Ring/LL up to 1 MiB, NVLS/Simple from 2 MiB (4.5).
  for (std::size_t b : {4 * KiB, 32 * KiB, 256 * KiB, 1 * MiB}) EXPECT_EQ(choice(h100(), 8, b), "ring/LL") << b;
  for (std::size_t b : {2 * MiB, 64 * MiB, 1 * GiB}) EXPECT_EQ(choice(h100(), 8, b), "nvls/Simple") << b;
  // NVLS off: the ring, Simple for large buffers.
  EXPECT_EQ(choice(h100(false), 8, 1 * GiB), "ring/Simple");
  EXPECT_EQ(choice(h100(false), 8, 16 * MiB).substr(0, 4), "ring");
}

TEST(NcclModel, ModelTimeIsNcclsLatencyFormulaPlusBusBytes) {
  // Ring/LL on 8 GPUs of one node: 6.6 + 14 x 0.6 = 15.0 us (4.1), plus 2 x 7/8 x bytes at LL's rate
  // min(141 GB/s, 0.5 x 360 GB/s).
  const NcclChoice c = nccl_choose(h100(), Collective::Allreduce, 8, 32 * KiB);
  EXPECT_NEAR(c.model_s, 15.0e-6 + 32 * KiB * 1.75 / 141e9, 1e-9);
  // Tree/LL across 16 nodes: 6.8 + 2 x (7 x 0.6 + log2(16) x 5.0) = 55.2 us, close to the 62 us measured on
  // 128 H100 (2.8).
  const NcclChoice t = nccl_choose(h100(), Collective::Allreduce, 128, 128);
  EXPECT_EQ(t.algorithm + "/" + t.protocol, "tree/LL");
  EXPECT_NEAR(t.model_s, 55.2e-6, 0.1e-6);
}

TEST(NcclModel, OneGpuPerNodePaysTheNetworkOnEveryHop) {
  NcclFabric f = h100(false);
  f.ranks_per_node = f.nics_per_node = 1;
  // Ring/Simple over 4 single-GPU nodes: 8.4 + 6 x 14 us, and the bus bytes over one NIC.
  const NcclChoice c = nccl_choose(f, Collective::Allreduce, 4, 1 * GiB);
  EXPECT_EQ(c.algorithm + "/" + c.protocol, "ring/Simple");
  EXPECT_NEAR(c.model_s, (8.4 + 6 * 14.0) * 1e-6 + 1.5 * GiB / 47e9, 1e-9);
}

TEST(NcclModel, LargeBuffersAcrossNodesRunTheRing) {
  for (int n : {16, 32}) EXPECT_EQ(choice(h100(), n, 4 * GiB), "ring/Simple") << n;
  EXPECT_THROW(nccl_choose(h100(), Collective::Push, 8, 1024), ddplab::InputError);  // no model of it
}

// Elements each rank sends to each peer over the whole schedule.
std::map<std::pair<int, int>, std::size_t> flows(const Schedule& s) {
  std::map<std::pair<int, int>, std::size_t> out;
  for (int r = 0; r < s.world_size; ++r)
    for (const ScheduleStep& st : s.ranks[static_cast<std::size_t>(r)])
      for (const SendOp& op : st.sends) out[{r, op.peer}] += op.chunk.count;
  return out;
}

TEST(NcclModel, StripedRingSendsAnEighthOfEachStepAcrossNodes) {
  const int n = 16;
  const std::size_t count = 256 * MiB;  // 1 GiB of floats
  const Schedule s = nccl_schedule(h100(), Collective::Allreduce, n, count, 4);
  EXPECT_EQ(s.name, "nccl:ring/Simple");
  const Schedule ring = ring_allreduce(n, count);
  for (int r = 0; r < n; ++r) {
    const int node = r / 8, j = r % 8, next = (j + 1) % 8;
    const auto f = flows(s);
    const std::size_t intra = f.at({r, node * 8 + next}), inter = f.at({r, (1 - node) * 8 + next});
    EXPECT_EQ(intra + inter, ring.bytes_sent(r, 1)) << r;  // the ring's bytes, split
    EXPECT_NEAR(static_cast<double>(inter), ring.bytes_sent(r, 1) / 8.0, 2.0 * ring.ranks[0].size()) << r;
  }
  EXPECT_EQ(s.timing.pipeline_depth, 1);
  EXPECT_DOUBLE_EQ(s.timing.start_s, 8.4e-6);  // Ring/Simple's base latency
}

TEST(NcclModel, DoubleTreeCarriesEachPartUpAndDownOnceAndBalancesNics) {
  const int n = 64;  // 8 nodes
  const std::size_t count = 4 * MiB;
  const Schedule s = nccl_schedule(h100(), Collective::Allreduce, n, count, 4);
  ASSERT_EQ(s.name.substr(0, 10), "nccl:tree/");
  std::size_t total = 0;
  std::vector<std::size_t> out_of_node(n, 0), into_node(n, 0);
  for (const auto& [pair, elems] : flows(s)) {
    total += elems;
    if (pair.first / 8 != pair.second / 8) out_of_node[pair.first] += elems, into_node[pair.second] += elems;
  }
  // Every rank but a tree's root has one parent per tree: each part goes up once and comes down once.
  EXPECT_EQ(total, 2 * static_cast<std::size_t>(n - 1) * count);
  // Each GPU's NIC carries its stripe: no NIC more than twice another's.
  const auto [lo, hi] = std::minmax_element(out_of_node.begin(), out_of_node.end());
  EXPECT_GT(*lo, 0u);
  EXPECT_LE(*hi, 2 * *lo);
  EXPECT_EQ(s.timing.pipeline_depth, 8);
}

TEST(NcclModel, NvlsMovesNPlusOneOverNOfTheBufferEachWay) {
  const std::size_t count = 64 * MiB;
  const Schedule s = nccl_schedule(h100(), Collective::Allreduce, 8, count, 4);
  EXPECT_EQ(s.name, "nccl:nvls/Simple");
  for (int r = 0; r < 8; ++r) EXPECT_NEAR(static_cast<double>(s.bytes_sent(r, 1)), count * 9.0 / 8.0, 8.0);
  EXPECT_NEAR(s.timing.wire_factor, 1 / 0.85, 1e-12);
}

TEST(NcclModel, LLPutsTwiceThePayloadOnTheWire) {
  const Schedule s = nccl_schedule(h100(), Collective::Allreduce, 8, 8 * KiB, 4);
  EXPECT_EQ(s.timing.protocol, "LL");
  EXPECT_DOUBLE_EQ(s.timing.wire_factor, 2.0);
  EXPECT_DOUBLE_EQ(s.timing.start_s, 6.6e-6);
}

TEST(NcclModel, NativeOnNcclUsesTheModelOnlyWithAFabric) {
  const CollectiveCall call{Collective::Allreduce, ElemType::F32, 1 << 20, "", {}, {}};
  const NcclFabric f = h100();
  EXPECT_EQ(schedule_for_call(call, "native", ScheduleParams{8, 0, 8, 0, &f}, NativeReplay{Transport::Nccl, ""}).name,
            "nccl:nvls/Simple");
  EXPECT_EQ(schedule_for_call(call, "native", ScheduleParams{8, 0, 8, 0}, NativeReplay{Transport::Nccl, ""}).name,
            "ring");
  EXPECT_EQ(schedule_for_call(call, "ring", ScheduleParams{8, 0, 8, 0, &f}, NativeReplay{Transport::Nccl, ""}).name,
            "ring");  // not native
}

}  // namespace
}  // namespace ddplab
