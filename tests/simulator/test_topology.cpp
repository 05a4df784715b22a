// Cluster topologies on SimGrid: intra-node fabrics, NICs, the full mesh, fat-tree bisection and
// oversubscription, dragonfly and torus, stragglers, presets. Analytic checks run under CM02 without cross-traffic.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdio>
#include <string>

#include "ddplab/core/error.hpp"
#include "ddplab/simulator/simulator.hpp"
#include "ddplab/strategies/strategy.hpp"
#include "platform.hpp"
#include "sim_test_util.hpp"

namespace ddplab {
namespace {

constexpr double kNicB = 10e9 / 8;  // NIC bytes/s per direction
constexpr double kNicL = 2e-6;      // s per NIC link
constexpr double kIB = 100e9;       // intra-node bytes/s per direction
constexpr double kIL = 0.5e-6;      // s per intra-node link
constexpr std::size_t kBytes = 64u << 20;

using test::alpha_beta;

ClusterConfig nodes_of(int devices, std::string intra = "nvswitch", std::string nics = "per_device") {
  ClusterConfig c;
  c.link_bandwidth = kNicB;
  c.link_latency = kNicL;
  c.devices_per_node = devices;
  c.intra = std::move(intra);
  c.intra_bandwidth = kIB;
  c.intra_latency = kIL;
  c.nics = std::move(nics);
  return c;
}

// One step in which each (src, dst) pair moves `bytes`; the other ranks idle.
Schedule transfers(int n, const std::vector<std::pair<int, int>>& pairs, std::size_t bytes = kBytes) {
  Schedule s;
  s.name = "p2p";
  s.collective = Collective::Allreduce;  // a pattern of sends, not a collective: the replay does not look
  s.world_size = n;
  s.count = bytes;
  s.ranks.assign(static_cast<std::size_t>(n), std::vector<ScheduleStep>(1));
  for (auto [src, dst] : pairs) {
    s.ranks[static_cast<std::size_t>(src)][0].sends.push_back({dst, {0, bytes}});
    s.ranks[static_cast<std::size_t>(dst)][0].recvs.push_back({src, {0, bytes}, RecvMode::Copy});
  }
  return s;
}

double p2p_time(const ClusterConfig& c, int n, int src, int dst) {
  return simulate_schedule(c, transfers(n, {{src, dst}}), 1, alpha_beta()).step_s;
}

void expect_close(double got, double expected, double rel = 1e-3) { EXPECT_NEAR(got, expected, rel * expected); }

TEST(SimulatorTopology, NvswitchNodesPointToPoint) {
  const ClusterConfig c = nodes_of(4);  // 2 nodes x 4 devices, star between nodes
  const double S = kBytes;
  expect_close(p2p_time(c, 8, 0, 1), S / kIB + 2 * kIL);  // device -> NVSwitch -> device
  expect_close(p2p_time(c, 8, 2, 3), S / kIB + 2 * kIL);
  expect_close(p2p_time(c, 8, 0, 5), S / kNicB + 2 * kNicL);  // own NIC out, zero-latency uplinks, peer's NIC in
  // One NIC per node, behind the NVSwitch: the route adds the two devices' NVLink hops.
  expect_close(p2p_time(nodes_of(4, "nvswitch", "per_node"), 8, 0, 5), S / kNicB + 2 * kNicL + 2 * kIL);
}

TEST(SimulatorTopology, PerDeviceNicsCarryParallelFlowsPerNodeNicShares) {
  const std::vector<std::pair<int, int>> all{{0, 4}, {1, 5}, {2, 6}, {3, 7}};  // every device to its peer
  const double S = kBytes;
  const auto own = simulate_schedule(nodes_of(4), transfers(8, all), 1, alpha_beta());
  expect_close(own.step_s, S / kNicB + 2 * kNicL);
  const auto shared = simulate_schedule(nodes_of(4, "nvswitch", "per_node"), transfers(8, all), 1, alpha_beta());
  expect_close(shared.step_s, 4 * S / kNicB + 2 * kNicL + 2 * kIL);
}

TEST(SimulatorTopology, PcieTree) {
  ClusterConfig c = nodes_of(4, "pcie");
  c.pcie_bandwidth = 20e9;  // below the device links: crossing the root complex is slower
  const double S = kBytes;
  expect_close(p2p_time(c, 4, 0, 1), S / kIB + 2 * kIL);               // under one PCIe switch
  expect_close(p2p_time(c, 4, 1, 2), S / c.pcie_bandwidth + 4 * kIL);  // through the root complex
}

TEST(SimulatorTopology, NodeOverrideSlowsThatNodesNics) {
  ClusterConfig c = nodes_of(2);
  c.nodes.push_back({1, kNicB / 2, std::nullopt});
  expect_close(p2p_time(c, 4, 0, 2), kBytes / (kNicB / 2) + 2 * kNicL);
  expect_close(p2p_time(c, 4, 0, 1), kBytes / kIB + 2 * kIL);  // intra-node untouched
}

// Ring allreduce with the largest chunk pacing every step; `route_latency` per step.
double ring_time(int n, double bw, double route_latency, std::size_t count = kBytes / 4) {
  return 2.0 * (n - 1) * (static_cast<double>(chunk_of(count, n, 0).count * 4) / bw + route_latency);
}

TEST(SimulatorTopology, FullBisectionFatTreeMatchesTheStar) {
  for (int n : {8, 16, 32}) {
    ClusterConfig star;
    star.link_bandwidth = kNicB;
    star.link_latency = kNicL;
    ClusterConfig tree = star;
    tree.topology = "fat_tree";  // sized to the world: full bisection
    const auto s = simulate_schedule(star, ring_allreduce(n, kBytes / 4), 4, alpha_beta());
    const auto t = simulate_schedule(tree, ring_allreduce(n, kBytes / 4), 4, alpha_beta());
    expect_close(s.step_s, ring_time(n, kNicB, 2 * kNicL));
    EXPECT_NEAR(t.step_s, s.step_s, 0.02 * s.step_s) << "n=" << n;
  }
}

TEST(SimulatorTopology, OversubscribedFatTreeSlowsCrossSwitchTraffic) {
  // 2 edge switches of 4 nodes; each node sends to its counterpart under the other edge switch.
  const std::vector<std::pair<int, int>> cross{{0, 4}, {1, 5}, {2, 6}, {3, 7}};
  ClusterConfig full;
  full.link_bandwidth = kNicB;
  full.link_latency = kNicL;
  full.topology = "fat_tree";
  full.fat_tree = "2;4,2;1,4;1,1";  // 4 uplinks per edge switch: 1:1
  ClusterConfig over = full;
  over.fat_tree = "2;4,2;1,2;1,1";  // 2 uplinks for 4 nodes: 2:1
  const double S = kBytes;
  const double t_full = simulate_schedule(full, transfers(8, cross), 1, alpha_beta()).step_s;
  const double t_over = simulate_schedule(over, transfers(8, cross), 1, alpha_beta()).step_s;
  expect_close(t_full, S / kNicB + 4 * kNicL);      // 4 links: up, up, down, down
  expect_close(t_over, 2 * S / kNicB + 4 * kNicL);  // two flows per uplink
  // Under one edge switch nothing changes.
  expect_close(simulate_schedule(over, transfers(8, {{0, 1}, {2, 3}}), 1, alpha_beta()).step_s, S / kNicB + 2 * kNicL);
}

TEST(SimulatorTopology, FatTreeOfMultiDeviceNodes) {
  ClusterConfig c = nodes_of(4);
  c.topology = "fat_tree";
  c.fat_tree = "1;2;1;1";  // one switch, two nodes; fabric links carry a node's 4 NICs
  const double S = kBytes;
  expect_close(p2p_time(c, 8, 0, 1), S / kIB + 2 * kIL);
  expect_close(p2p_time(c, 8, 1, 6), S / kNicB + 2 * kNicL + 2 * kNicL);  // NICs + leaf up + leaf down
  EXPECT_DOUBLE_EQ(sim::fabric_bandwidth(c), 4 * kNicB);
}

TEST(SimulatorTopology, DragonflyAndTorusRunARing) {
  for (const char* topo : {"dragonfly", "torus"}) {
    for (int devices : {1, 2}) {
      ClusterConfig c = nodes_of(devices);
      c.topology = topo;
      const int n = 16;
      const auto r = simulate_schedule(c, ring_allreduce(n, kBytes / 4), 4, alpha_beta());
      // No faster than the NICs' bandwidth allows; within 3x of the star (longer routes add latency only).
      const double floor = ring_time(n, kNicB, 0) * (devices == 1 ? 1.0 : 0.5);
      EXPECT_GT(r.step_s, floor) << topo << " devices " << devices;
      EXPECT_LT(r.step_s, 3 * ring_time(n, kNicB, 2 * kNicL)) << topo << " devices " << devices;
    }
  }
  ClusterConfig torus;
  torus.topology = "torus";
  torus.torus = "2,2";
  torus.link_bandwidth = kNicB;
  torus.link_latency = kNicL;
  expect_close(p2p_time(torus, 4, 0, 1), kBytes / kNicB + kNicL);  // neighbours: one torus link
  torus.torus = "2,1";
  EXPECT_THROW(p2p_time(torus, 4, 0, 1), std::exception);  // 2 leaves for 4 nodes
}

// ---- full mesh: a private link per pair of nodes ----

ClusterConfig full_of(int devices, std::string nics = "per_device") {
  ClusterConfig c = nodes_of(devices, "nvswitch", std::move(nics));
  c.topology = "full";
  return c;
}

TEST(SimulatorTopology, FullMeshOfHostsGivesEachPeerItsOwnLink) {
  const double S = kBytes;
  ClusterConfig full = full_of(1);
  ClusterConfig star = nodes_of(1);
  expect_close(p2p_time(full, 4, 0, 3), S / kNicB + kNicL);  // one pair link, not NIC + NIC
  // Rank 0 sends to its 3 peers at once: private links on the mesh, one shared NIC on the star.
  const std::vector<std::pair<int, int>> fan_out{{0, 1}, {0, 2}, {0, 3}};
  expect_close(simulate_schedule(full, transfers(4, fan_out), 1, alpha_beta()).step_s, S / kNicB + kNicL);
  expect_close(simulate_schedule(star, transfers(4, fan_out), 1, alpha_beta()).step_s, 3 * S / kNicB + 2 * kNicL);
  // Every rank to every other at once (an all-to-all): still one link's time each.
  std::vector<std::pair<int, int>> all_to_all;
  for (int a = 0; a < 4; ++a)
    for (int b = 0; b < 4; ++b)
      if (a != b) all_to_all.emplace_back(a, b);
  expect_close(simulate_schedule(full, transfers(4, all_to_all), 1, alpha_beta()).step_s, S / kNicB + kNicL);
  expect_close(simulate_schedule(star, transfers(4, all_to_all), 1, alpha_beta()).step_s, 3 * S / kNicB + 2 * kNicL);
  // fabric_bandwidth and fabric_latency set the pair links.
  full.fabric_bandwidth = kNicB / 4;
  full.fabric_latency = 5 * kNicL;
  expect_close(p2p_time(full, 4, 1, 2), S / (kNicB / 4) + 5 * kNicL);
}

TEST(SimulatorTopology, FullMeshRingMatchesAlphaBeta) {
  for (int n : {2, 8, 16}) {
    const auto r = simulate_schedule(full_of(1), ring_allreduce(n, kBytes / 4), 4, alpha_beta());
    expect_close(r.step_s, ring_time(n, kNicB, kNicL));  // every ring step crosses one pair link
  }
}

TEST(SimulatorTopology, FullMeshOfNodesKeepsTheirNics) {
  const double S = kBytes;
  // 3 nodes of 2 devices, a NIC per device; pair links carry one NIC's bandwidth, not the node's two.
  ClusterConfig c = full_of(2);
  c.fabric_bandwidth = kNicB;
  expect_close(p2p_time(c, 6, 0, 1), S / kIB + 2 * kIL);      // inside a node: NVSwitch
  expect_close(p2p_time(c, 6, 0, 2), S / kNicB + 3 * kNicL);  // NIC, pair link, NIC
  // Node 0's devices to nodes 1 and 2: two private pair links, each flow at full speed...
  const std::vector<std::pair<int, int>> to_two{{0, 2}, {1, 4}};
  expect_close(simulate_schedule(c, transfers(6, to_two), 1, alpha_beta()).step_s, S / kNicB + 3 * kNicL);
  // ...while both to node 1 share the pair link n0-n1.
  const std::vector<std::pair<int, int>> to_one{{0, 2}, {1, 3}};
  expect_close(simulate_schedule(c, transfers(6, to_one), 1, alpha_beta()).step_s, 2 * S / kNicB + 3 * kNicL);
  // On the star the node's uplink carries both NICs: no difference.
  expect_close(simulate_schedule(nodes_of(2), transfers(6, to_one), 1, alpha_beta()).step_s, S / kNicB + 2 * kNicL);
  // One NIC per node still binds on the mesh: flows to two nodes share it, behind the NVSwitch hop.
  const ClusterConfig shared = full_of(2, "per_node");
  expect_close(simulate_schedule(shared, transfers(6, to_two), 1, alpha_beta()).step_s,
               2 * S / kNicB + 3 * kNicL + 2 * kIL);
  // A node override gives that node a NIC of its own (the others stay bare hosts on their pair links).
  ClusterConfig over = full_of(1);
  over.nodes.push_back({1, kNicB / 2, std::nullopt});
  expect_close(p2p_time(over, 3, 0, 1), S / (kNicB / 2) + 2 * kNicL);  // pair link, then node 1's NIC
  expect_close(p2p_time(over, 3, 0, 2), S / kNicB + kNicL);
  EXPECT_GE(sim::tcp_gamma_for(over), 16.0 * kNicB * 2 * 3 * kNicL);  // the route through a NIC is covered
}

TEST(SimulatorTopology, FullMeshAggregatedAgreesWithExact) {
  SimOptions agg = alpha_beta();
  agg.mode = "aggregated";
  SimOptions exact = alpha_beta();
  exact.mode = "exact";
  for (int devices : {1, 4}) {
    const ClusterConfig c = full_of(devices);
    const int n = 32;
    const double e = simulate_schedule(c, ring_allreduce(n, kBytes / 4), 4, exact).step_s;
    const double a = simulate_schedule(c, ring_allreduce(n, kBytes / 4), 4, agg).step_s;
    EXPECT_NEAR(a, e, 0.02 * e) << "devices " << devices;
  }
}

TEST(SimulatorTopology, FullMeshRefusesMoreNodesThanItCanHold) {
  EXPECT_EQ(sim::full_mesh_links(4), 6);
  EXPECT_EQ(sim::full_mesh_links(sim::kMaxFullMeshNodes), 523776);
  ClusterConfig c = full_of(2);
  EXPECT_NO_THROW(sim::check_full_mesh_size(c, sim::kMaxFullMeshNodes));
  try {
    sim::check_full_mesh_size(c, 2048);
    ADD_FAILURE() << "2048 nodes accepted";
  } catch (const ddplab::InputError& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("2048 nodes (2 devices per node) need 2096128 links"), std::string::npos) << m;
    EXPECT_NE(m.find("the limit is 1024 nodes"), std::string::npos) << m;
    EXPECT_NE(m.find("fat_tree"), std::string::npos) << m;
  }
  // Through the simulator: refused before any link is built, naming the world size.
  const int world = 2 * (sim::kMaxFullMeshNodes + 1);
  try {
    simulate_schedule(c, transfers(world, {{0, 2}}), 1, alpha_beta());
    ADD_FAILURE() << "world " << world << " accepted";
  } catch (const std::exception& e) {
    const std::string m = e.what();
    EXPECT_NE(m.find("world size 2050"), std::string::npos) << m;
    EXPECT_NE(m.find("\"full\" gives every pair of nodes its own link"), std::string::npos) << m;
  }
}

Scenario small_scenario() { return test::small_mlp_scenario("topotest"); }

StrategyConfig flat_ring() {
  StrategyConfig c;
  c.name = "ring";
  c.policy = "flat";
  c.schedule = "ring";
  return c;
}

TEST(SimulatorTopology, StragglerSlowsItsComputeByTheFactor) {
  Scenario sc = small_scenario();
  sc.cluster = nodes_of(2);
  const double compute = 0.01;
  const auto even = simulate_step(sc, flat_ring(), 4, compute, 0.0, alpha_beta(), {1, 2});
  sc.cluster.stragglers.push_back({1, -1, 2.0});
  const auto slow = simulate_step(sc, flat_ring(), 4, compute, 0.0, alpha_beta(), {1, 2});
  expect_close(even.ranks[1].compute_s, compute);
  expect_close(slow.ranks[1].compute_s, 2 * compute);
  expect_close(slow.ranks[0].compute_s, compute);
  expect_close(slow.step_s - even.step_s, compute, 0.05);  // everyone waits for rank 1 in the allreduce
  // A node straggler slows all of that node's devices.
  sc.cluster.stragglers = {{-1, 1, 1.5}};
  const auto node = simulate_step(sc, flat_ring(), 4, compute, 0.0, alpha_beta(), {1, 2});
  expect_close(node.ranks[1].compute_s, compute);
  expect_close(node.ranks[2].compute_s, 1.5 * compute);
  expect_close(node.ranks[3].compute_s, 1.5 * compute);
}

TEST(SimulatorTopology, PresetsBuildAndSimulate) {
  for (std::string_view preset : kClusterPresets) {
    Scenario sc = small_scenario();
    apply_cluster_preset(sc.cluster, preset);
    const int n = 2 * sc.cluster.devices_per_node;
    for (const char* schedule : {"ring", "hierarchical"}) {
      StrategyConfig st = flat_ring();
      st.schedule = schedule;
      const auto r = simulate_step(sc, st, n, 0.01, 0.001, {}, {1, sc.cluster.devices_per_node});
      EXPECT_GT(r.step_s, 0.011) << preset;
      EXPECT_LT(r.step_s, 1.0) << preset;
      EXPECT_EQ(r.world_size, n);
      std::printf("[ preset ] %-12s %-12s world %3d: step %.3f ms (comm %.3f ms), sim wall %.2f s\n",
                  std::string(preset).c_str(), schedule, n, r.step_s * 1e3, r.comm_s * 1e3, r.wall_s);
    }
  }
}

TEST(SimulatorTopology, TcpGammaCoversTheFastestLinkOnTheLongestRoute) {
  ClusterConfig star;  // unchanged for the plain star: 16 x B x 2 x (2 L), at least 4 MiB
  EXPECT_DOUBLE_EQ(sim::tcp_gamma_for(star),
                   std::max(4.0 * 1024 * 1024, 16.0 * star.link_bandwidth * 2 * 2 * star.link_latency));
  ClusterConfig h100;
  apply_cluster_preset(h100, "dgx-h100");
  // NVLink at 450 GB/s over the longest route (NIC, star switch, NIC): the window must not cap it.
  const double gamma = sim::tcp_gamma_for(h100);
  EXPECT_GT(gamma / (2 * (2 * h100.link_latency)), 10 * h100.intra_bandwidth);
  // A NVLink transfer on that preset runs at the link's effective bandwidth, not at a window's.
  const auto r = simulate_schedule(h100, transfers(16, {{0, 1}}), 1, alpha_beta());
  expect_close(r.step_s, kBytes / (h100.intra_bandwidth * h100.intra_efficiency) + 2 * h100.intra_latency);
}

}  // namespace
}  // namespace ddplab
