#include "platform.hpp"

#include <algorithm>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "calibration_install.hpp"
#include "ddplab/core/error.hpp"

namespace sg4 = simgrid::s4u;

namespace ddplab::sim {

void validate_cluster(const ClusterConfig& c) {
  const auto one_of = [](const std::string& v, std::initializer_list<const char*> known) {
    return std::any_of(known.begin(), known.end(), [&](const char* k) { return v == k; });
  };
  if (!one_of(c.topology, {"star", "full", "fat_tree", "dragonfly", "torus"}))
    throw InputError(fmt::format(
        "simulator: topology \"{}\" is not supported (known: star, full, fat_tree, dragonfly, torus)", c.topology));
  if (!(c.link_bandwidth > 0)) throw InputError("simulator: [cluster].link_bandwidth must be > 0 bytes/s");
  if (!(c.link_latency >= 0)) throw InputError("simulator: [cluster].link_latency must be >= 0 s");
  if (c.devices_per_node < 1) throw InputError("simulator: [cluster].devices_per_node must be >= 1");
  if (!one_of(c.intra, {"nvswitch", "pcie"}))
    throw InputError(fmt::format("simulator: [cluster].intra \"{}\" is not nvswitch or pcie", c.intra));
  if (!one_of(c.nics, {"per_device", "per_node"}))
    throw InputError(fmt::format("simulator: [cluster].nics \"{}\" is not per_device or per_node", c.nics));
  if (!(c.intra_bandwidth > 0) || !(c.pcie_bandwidth > 0) || !(c.intra_latency >= 0) ||
      !(c.fabric_bandwidth.value_or(1) > 0) || !(c.fabric_latency.value_or(0) >= 0))
    throw InputError("simulator: [cluster] intra, pcie and fabric bandwidths must be > 0, latencies >= 0");
  for (const auto& s : c.stragglers)
    if (!(s.factor > 0)) throw InputError("simulator: [cluster].stragglers factors must be > 0");
  for (const auto& o : c.nodes)
    if (o.node < 0 || !(o.link_bandwidth.value_or(1) > 0) || !(o.intra_bandwidth.value_or(1) > 0))
      throw InputError("simulator: [cluster].nodes entries need node >= 0 and bandwidths > 0");
  try {  // shapes; leaf counts are checked per world size when the platform is built
    fat_tree_shape(c, 0);
    dragonfly_shape(c, 0);
    torus_shape(c, 0);
  } catch (const std::exception& e) {
    throw InputError(fmt::format("simulator: [cluster] topology parameters: {}", e.what()));
  }
}

namespace {

// Shapes sized to the world are bounded at this many nodes (the largest sweep ddplab targets).
constexpr int kMaxNodes = 16384;

// The longest route's latency, before model factors, bounded from above: both ends' paths to their
// node's gateway plus the most fabric hops a route takes.
double max_route_latency(const ClusterConfig& c) {
  const double fabric_lat = c.fabric_latency.value_or(c.link_latency);
  const bool multi = c.devices_per_node > 1;
  const double hub = !multi ? 0.0 : (c.intra == "pcie" ? 2 : 1) * c.intra_latency;  // device -> hub
  const double to_gateway = (c.nics == "per_node" ? hub : 0.0) + c.link_latency;
  double fabric = 0;
  if (c.topology == "star") {
    fabric = 0;  // uplinks have no latency; a one-device host's link is its NIC
  } else if (c.topology == "full") {
    fabric = fabric_lat;  // one pair link
  } else if (c.topology == "fat_tree") {
    fabric = 2.0 * fat_tree_shape(c, c.fat_tree.empty() ? kMaxNodes : 0).levels * fabric_lat;
  } else if (c.topology == "dragonfly") {
    fabric = 8 * fabric_lat;  // node, blade, chassis and group links, at most on both sides
  } else {
    for (unsigned d : torus_shape(c, c.torus.empty() ? kMaxNodes : 0))
      fabric += d * fabric_lat;  // at most one lap per dimension
  }
  // The leaf link is the NIC, counted in fabric; a node with an override gets a zone with a NIC of its own.
  const bool one_host_leaves = !multi && c.topology != "star" && c.nodes.empty();
  return std::max(2 * hub, (one_host_leaves ? 0.0 : 2 * to_gateway) + fabric);
}

}  // namespace

double tcp_gamma_for(const ClusterConfig& c) {
  // SimGrid bounds every flow at gamma / (2 * route latency), where route latency is the sum of the link
  // latencies before any model factor (2 * link_latency on the star). The 4 MiB default binds for fast or
  // long links (300 GB/s at 10 us, or 10 Gbit/s at 1 ms), which would silently turn the simulator into a
  // window model. Size the window so the cap is 16x the fastest link on the slowest route: links, not TCP
  // windows, decide.
  double fastest = std::max(c.link_bandwidth, c.fabric_bandwidth.value_or(fabric_bandwidth(c)));
  if (c.devices_per_node > 1)
    fastest = std::max({fastest, c.intra_bandwidth, c.intra == "pcie" ? c.pcie_bandwidth : 0.0});
  for (const auto& o : c.nodes)
    fastest = std::max({fastest, o.link_bandwidth.value_or(0), o.intra_bandwidth.value_or(0)});
  const double needed = 16.0 * fastest * 2 * max_route_latency(c);
  return std::max(4.0 * 1024 * 1024, needed);
}

double time_precision_for(const ClusterConfig& c, const SimOptions& options) {
  if (options.time_precision_s > 0) return options.time_precision_s;
  // Chunks of a schedule differ by one element when the count does not divide evenly, so with SimGrid's
  // 1 ns default their flows end a few ns apart (4 B at 10 Gbit/s is 3.2 ns). The ranks then drift apart,
  // every completion becomes its own event, and with cross-traffic the ring's flows form one coupled
  // max-min system re-solved at each event: 1024 ranks took 322 s instead of 17 s. Merging events closer
  // than 1% of a link latency bounds the error per step by that 1%: a step lasts at least one route
  // latency (2 x link latency), so the collective time is off by at most 0.5%.
  return std::max(1e-9, 0.01 * c.link_latency);
}

NcclFabric nccl_fabric(const ClusterConfig& c) {
  NcclFabric f;
  f.ranks_per_node = c.devices_per_node;
  f.nics_per_node = c.nics == "per_device" ? c.devices_per_node : 1;
  f.arch = c.device_arch;
  f.nvls = c.nvls && c.intra == "nvswitch" && c.devices_per_node > 2;
  f.intra_bw = c.intra_bandwidth * c.intra_efficiency;
  f.nic_bw = c.link_bandwidth * c.link_efficiency;
  f.intra_wire_s = (c.intra == "pcie" ? 4 : 2) * c.intra_latency;
  // A star's switch adds no latency; other fabrics at least a hop up and one down.
  f.inter_wire_s = 2 * c.link_latency + (c.topology == "star" ? 0.0 : 2 * c.fabric_latency.value_or(c.link_latency));
  return f;
}

sg4::Engine* make_engine(const ClusterConfig& cluster, const SimOptions& options) {
  // SimGrid parses --log from argv; logging is silenced unless verbose (critical errors still print).
  static std::vector<std::string> args;
  static std::vector<char*> argv;
  args = {"ddplab-simulator"};
  if (!options.verbose) args.push_back("--log=root.thres:critical");
  for (auto& a : args) argv.push_back(a.data());
  argv.push_back(nullptr);
  int argc = static_cast<int>(args.size());
  auto* engine = new sg4::Engine(&argc, argv.data());

  engine->set_config(fmt::format("network/model:{}", network_model_for(cluster, options)));
  engine->set_config(fmt::format("network/crosstraffic:{}", crosstraffic_for(cluster, options) ? 1 : 0));
  engine->set_config(fmt::format("network/TCP-gamma:{}", tcp_gamma_for(cluster)));
  engine->set_config(fmt::format("surf/precision:{}", time_precision_for(cluster, options)));
  // Two actors per rank: with SimGrid's default 8 MiB stacks, 1024 ranks map 16 GiB and page-faulting them
  // in dominated the run (malloc and page faults were half the profile). Our actors walk a plan with
  // shallow calls; 256 KiB leaves ample room.
  engine->set_config("contexts/stack-size:256");
  install_calibration(engine, cluster, options);  // calibration_install.hpp; no-op without one
  return engine;
}

}  // namespace ddplab::sim
