// Cluster platforms: nodes of devices with an intra-node fabric and NICs, joined by a star, a full mesh, a
// fat-tree, dragonfly or torus (SimGrid 3.32 zones). docs/simulation.md documents the model; this file builds it.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>

#include "platform.hpp"
#include "ddplab/core/error.hpp"

namespace sg4 = simgrid::s4u;
using simgrid::kernel::routing::NetPoint;

namespace ddplab::sim {
namespace {

constexpr auto UP = sg4::LinkInRoute::Direction::UP;
constexpr auto DOWN = sg4::LinkInRoute::Direction::DOWN;

const ClusterConfig::NodeOverride* override_of(const ClusterConfig& c, int node) {
  for (const auto& o : c.nodes)
    if (o.node == node) return &o;
  return nullptr;
}

// Links get the effective rate: line rate x the fabric's efficiency (ClusterConfig).
double nic_bandwidth(const ClusterConfig& c, int node) {
  const auto* o = override_of(c, node);
  return (o && o->link_bandwidth ? *o->link_bandwidth : c.link_bandwidth) * c.link_efficiency;
}

double intra_bandwidth(const ClusterConfig& c, int node) {
  const auto* o = override_of(c, node);
  return (o && o->intra_bandwidth ? *o->intra_bandwidth : c.intra_bandwidth) * c.intra_efficiency;
}

sg4::Link* duplex(sg4::NetZone* zone, const std::string& name, double bw, double latency) {
  auto* link = zone->create_split_duplex_link(name, bw)->set_latency(latency);
  link->seal();
  return link;
}

// The ranks of one node and the hosts they get.
struct NodeSpan {
  int node = 0, first = 0, count = 0;
};

class Builder {
 public:
  Builder(const ClusterConfig& c, int world) : c_(c), world_(world), per_node_(c.devices_per_node) {
    nodes_ = (world + per_node_ - 1) / per_node_;
    hosts_.resize(static_cast<std::size_t>(world), nullptr);
  }

  std::vector<sg4::Host*> build() {
    if (c_.topology == "star")
      build_star();
    else if (c_.topology == "full")
      build_full();
    else
      build_cluster_zone();
    return std::move(hosts_);
  }

 private:
  NodeSpan span(int node) const {
    const int first = node * per_node_;
    return {node, first, std::min(per_node_, world_ - first)};
  }

  // Multi-device nodes, and single-device nodes with an override, get a zone of their own; other
  // single-device nodes are one host whose link into the topology is its NIC.
  bool needs_zone(int node) const { return per_node_ > 1 || (c_.topology != "star" && override_of(c_, node)); }

  sg4::Host* make_host(sg4::NetZone* zone, int rank) {
    auto* host = zone->create_host(fmt::format("r{}", rank), host_speed(c_, rank));
    hosts_[static_cast<std::size_t>(rank)] = host;
    return host;
  }

  // One node: its devices, their intra-node fabric and NICs, and a gateway router where the node meets
  // the inter-node network. Returns the zone's netpoint and the gateway.
  std::pair<NetPoint*, NetPoint*> build_node(sg4::NetZone* parent, const NodeSpan& s) {
    const std::string n = fmt::format("n{}", s.node);
    auto* zone = sg4::create_full_zone(n);
    zone->set_parent(parent);
    std::vector<sg4::Host*> dev;
    for (int i = 0; i < s.count; ++i) dev.push_back(make_host(zone, s.first + i));
    NetPoint* gw = zone->create_router(n + "-gw");

    // Each device's path to the node's hub (the NVSwitch, or the PCIe root complex), in UP order.
    const bool pcie = c_.intra == "pcie";
    const double ibw = intra_bandwidth(c_, s.node), ilat = c_.intra_latency;
    std::vector<sg4::Link*> dev_link, pcie_switch;
    for (int i = 0; s.count > 1 && i < s.count; ++i)
      dev_link.push_back(duplex(zone, fmt::format("{}-{}{}", n, pcie ? "pcie-d" : "nvl", i), ibw, ilat));
    for (int j = 0; pcie && s.count > 1 && j < (s.count + 1) / 2; ++j)
      pcie_switch.push_back(duplex(zone, fmt::format("{}-pcie-s{}", n, j), c_.pcie_bandwidth, ilat));
    auto to_hub = [&](int i) {
      std::vector<sg4::LinkInRoute> p;
      if (s.count > 1) p.emplace_back(dev_link[static_cast<std::size_t>(i)], UP);
      if (pcie && s.count > 1) p.emplace_back(pcie_switch[static_cast<std::size_t>(i / 2)], UP);
      return p;
    };

    // Device <-> device: up from i, down to j, through the closest common switch.
    for (int i = 0; i < s.count; ++i)
      for (int j = i + 1; j < s.count; ++j) {
        std::vector<sg4::LinkInRoute> p{{dev_link[static_cast<std::size_t>(i)], UP}};
        if (pcie && i / 2 != j / 2) {
          p.emplace_back(pcie_switch[static_cast<std::size_t>(i / 2)], UP);
          p.emplace_back(pcie_switch[static_cast<std::size_t>(j / 2)], DOWN);
        }
        p.emplace_back(dev_link[static_cast<std::size_t>(j)], DOWN);
        zone->add_route(dev[static_cast<std::size_t>(i)]->get_netpoint(),
                        dev[static_cast<std::size_t>(j)]->get_netpoint(), nullptr, nullptr, p, true);
      }

    // Device <-> gateway: its own NIC (per_device, GPUDirect-style), or the hub then the node's one NIC.
    const double nbw = nic_bandwidth(c_, s.node);
    sg4::Link* shared_nic = c_.nics == "per_node" ? duplex(zone, n + "-nic", nbw, c_.link_latency) : nullptr;
    for (int i = 0; i < s.count; ++i) {
      std::vector<sg4::LinkInRoute> p;
      if (shared_nic) {
        p = to_hub(i);
        p.emplace_back(shared_nic, UP);
      } else {
        p.emplace_back(duplex(zone, fmt::format("{}-nic{}", n, i), nbw, c_.link_latency), UP);
      }
      zone->add_route(dev[static_cast<std::size_t>(i)]->get_netpoint(), gw, nullptr, nullptr, p, true);
    }
    zone->seal();
    return {zone->get_netpoint(), gw};
  }

  // A one-device node without a zone of its own, as a zone whose gateway is its host: a Full zone routes
  // zone to zone or host to host, never a mix, so the full mesh wraps bare hosts once any node needs a zone.
  std::pair<NetPoint*, NetPoint*> build_bare_node(sg4::NetZone* parent, const NodeSpan& s) {
    auto* zone = sg4::create_full_zone(fmt::format("n{}", s.node));
    zone->set_parent(parent);
    auto* host = make_host(zone, s.first);
    zone->seal();
    return {zone->get_netpoint(), host->get_netpoint()};
  }

  // Full mesh (SimGrid's Full zone): every pair of nodes has its own split-duplex link "pair-n<a>-n<b>" of
  // fabric_bandwidth and fabric_latency, and one route. A multi-device node (or one with an override) reaches
  // its pair links through its NICs at its gateway, as on the star; a one-device node is its host, whose
  // pair links are its ports (as a cluster zone's leaf link is its NIC), so it can send to every peer at
  // once at full bandwidth.
  void build_full() {
    check_full_mesh_size(c_, nodes_);
    auto* zone = sg4::create_full_zone("cluster");
    bool any_zone = false;
    for (int node = 0; node < nodes_ && !any_zone; ++node) any_zone = needs_zone(node);
    std::vector<std::pair<NetPoint*, NetPoint*>> end;  // (netpoint, gateway) per node
    end.reserve(static_cast<std::size_t>(nodes_));
    for (int node = 0; node < nodes_; ++node) {
      const NodeSpan s = span(node);
      if (needs_zone(node))
        end.push_back(build_node(zone, s));
      else if (any_zone)
        end.push_back(build_bare_node(zone, s));
      else
        end.emplace_back(make_host(zone, s.first)->get_netpoint(), nullptr);
    }
    const double bw = fabric_bandwidth(c_);
    const double lat = c_.fabric_latency.value_or(c_.link_latency);
    for (int a = 0; a < nodes_; ++a)
      for (int b = a + 1; b < nodes_; ++b) {
        auto* link = duplex(zone, fmt::format("pair-n{}-n{}", a, b), bw, lat);
        const auto& [pa, ga] = end[static_cast<std::size_t>(a)];
        const auto& [pb, gb] = end[static_cast<std::size_t>(b)];
        zone->add_route(pa, pb, ga, gb, {{link, UP}}, true);  // b -> a takes the link's DOWN half
      }
    zone->seal();
  }

  // The star keeps build_star_platform's model for one device per node: host "r<i>" on split-duplex link
  // "link-r<i>" to one switch. A multi-device node joins it through a zero-latency uplink that carries all
  // its NICs, so the NICs alone limit it.
  void build_star() {
    auto* zone = sg4::create_star_zone("cluster");
    for (int node = 0; node < nodes_; ++node) {
      const NodeSpan s = span(node);
      if (!needs_zone(node)) {
        auto* host = make_host(zone, s.first);
        auto* link = duplex(zone, fmt::format("link-r{}", s.first), nic_bandwidth(c_, node), c_.link_latency);
        // UP is host -> switch; the symmetric route switch -> host uses the link's DOWN half.
        zone->add_route(host->get_netpoint(), nullptr, nullptr, nullptr, {{link, UP}}, true);
        continue;
      }
      const auto [np, gw] = build_node(zone, s);
      auto* uplink = duplex(zone, fmt::format("uplink-n{}", node), node_nic_total(c_, node, s.count), 0.0);
      zone->add_route(np, nullptr, gw, nullptr, {{uplink, UP}}, true);
    }
    zone->seal();
  }

  // Fat-tree, dragonfly and torus: SimGrid's cluster zones, whose leaves are the nodes. Leaves beyond the
  // last node are routers (a sized-to-fit tree may have spare ports).
  void build_cluster_zone() {
    const int leaves_needed = nodes_;
    sg4::ClusterCallbacks callbacks([this](sg4::NetZone* zone, const std::vector<unsigned long>&,
                                           unsigned long id) -> std::pair<NetPoint*, NetPoint*> {
      const int node = static_cast<int>(id);
      if (node >= nodes_) return {zone->create_router(fmt::format("spare{}", id)), nullptr};
      if (needs_zone(node)) return build_node(zone, span(node));
      return {make_host(zone, span(node).first)->get_netpoint(), nullptr};
    });
    const double bw = fabric_bandwidth(c_);
    const double lat = c_.fabric_latency.value_or(c_.link_latency);
    const auto policy = sg4::Link::SharingPolicy::SPLITDUPLEX;
    sg4::NetZone* zone = nullptr;
    if (c_.topology == "fat_tree") {
      const FatTreeShape t = fat_tree_shape(c_, leaves_needed);
      zone =
          sg4::create_fatTree_zone("cluster", nullptr, {t.levels, t.down, t.up, t.count}, callbacks, bw, lat, policy);
    } else if (c_.topology == "dragonfly") {
      const auto g = dragonfly_shape(c_, leaves_needed);
      zone = sg4::create_dragonfly_zone("cluster", nullptr, {{g[0], g[1]}, {g[2], g[3]}, {g[4], g[5]}, g[6]}, callbacks,
                                        bw, lat, policy);
    } else {
      std::vector<unsigned long> dims;
      for (unsigned d : torus_shape(c_, leaves_needed)) dims.push_back(d);
      zone = sg4::create_torus_zone("cluster", nullptr, dims, callbacks, bw, lat, policy);
    }
    zone->seal();
  }

  const ClusterConfig& c_;
  int world_, per_node_, nodes_ = 0;
  std::vector<sg4::Host*> hosts_;
};

unsigned product(const std::vector<unsigned>& v) {
  unsigned p = 1;
  for (unsigned x : v) p *= x;
  return p;
}

void check_leaves(const ClusterConfig& c, unsigned leaves, int nodes, const std::string& spec) {
  if (leaves < static_cast<unsigned>(nodes))
    throw InputError(
        fmt::format("simulator: [cluster].{} = \"{}\" has {} leaves, but the world needs {} nodes "
                    "({} devices per node)",
                    c.topology, spec, leaves, nodes, c.devices_per_node));
}

}  // namespace

std::int64_t full_mesh_links(int nodes) {
  const std::int64_t n = std::max(0, nodes);
  return n * (n - 1) / 2;
}

void check_full_mesh_size(const ClusterConfig& c, int nodes) {
  if (nodes <= kMaxFullMeshNodes) return;
  // Measured: 523,776 links (1024 nodes) took 0.84 GB, about 1.6 kB a link.
  auto gigabytes = [](std::int64_t links) { return static_cast<double>(links) * 1.6e3 / 1e9; };
  throw InputError(fmt::format(
      "simulator: [cluster].topology = \"full\" gives every pair of nodes its own link: {} nodes ({} devices per node) "
      "need {} links, about {:.2f} GB of SimGrid platform; the limit is {} nodes ({} links, about {:.2f} GB and 10 s "
      "to build). Use topology = \"fat_tree\" (sized to the world, full bisection) or more devices_per_node",
      nodes, c.devices_per_node, full_mesh_links(nodes), gigabytes(full_mesh_links(nodes)), kMaxFullMeshNodes,
      full_mesh_links(kMaxFullMeshNodes), gigabytes(full_mesh_links(kMaxFullMeshNodes))));
}

double host_speed(const ClusterConfig& c, int rank) { return kHostSpeed / c.compute_factor(rank); }

double node_nic_total(const ClusterConfig& c, int node, int devices) {
  return nic_bandwidth(c, node) * (c.nics == "per_device" ? devices : 1);
}

double fabric_bandwidth(const ClusterConfig& c) {
  return c.fabric_bandwidth.value_or(c.link_bandwidth * (c.nics == "per_device" ? c.devices_per_node : 1));
}

FatTreeShape fat_tree_shape(const ClusterConfig& c, int nodes) {
  FatTreeShape t;
  if (!c.fat_tree.empty()) {
    const auto g = parse_topology_spec(c.fat_tree);
    t = {g.at(0).at(0), g.at(1), g.at(2), g.at(3)};
    check_leaves(c, product(t.down), nodes, c.fat_tree);
    return t;
  }
  // Sized to the world: one switch for up to 8 nodes, else 8 nodes per edge switch, each edge switch
  // with 8 uplinks to 8 spine switches (full bisection).
  constexpr unsigned k = 8;
  const unsigned n = static_cast<unsigned>(std::max(1, nodes));
  if (n <= k) return {1, {n}, {1}, {1}};
  return {2, {k, (n + k - 1) / k}, {1, k}, {1, 1}};
}

std::vector<unsigned> dragonfly_shape(const ClusterConfig& c, int nodes) {
  if (!c.dragonfly.empty()) {
    const auto g = parse_topology_spec(c.dragonfly);
    std::vector<unsigned> out{g[0][0], g[0][1], g[1][0], g[1][1], g[2][0], g[2][1], g[3][0]};
    check_leaves(c, out[0] * out[2] * out[4] * out[6], nodes, c.dragonfly);
    // SimGrid links group j to router j of every group: a group needs at least as many routers as there
    // are groups (3.32 reads past its router table otherwise and crashes).
    if (out[2] * out[4] < out[0])
      throw InputError(
          fmt::format("simulator: [cluster].dragonfly = \"{}\" has {} groups but {} routers per group; "
                      "a group needs at least one router per group",
                      c.dragonfly, out[0], out[2] * out[4]));
    return out;
  }
  // Sized to the world: G groups of one chassis with R >= G routers of 2 nodes, one link between groups.
  const unsigned n = static_cast<unsigned>(std::max(1, nodes));
  unsigned routers = 2;
  while (2 * routers * routers < n) ++routers;  // R = ceil(sqrt(n / 2)), so G = ceil(n / 2R) <= R
  const unsigned groups = std::max(2u, (n + 2 * routers - 1) / (2 * routers));
  return {groups, 1, 1, 1, std::max(routers, groups), 1, 2};
}

std::vector<unsigned> torus_shape(const ClusterConfig& c, int nodes) {
  if (!c.torus.empty()) {
    const auto g = parse_topology_spec(c.torus);
    check_leaves(c, product(g[0]), nodes, c.torus);
    return g[0];
  }
  return {static_cast<unsigned>(std::max(1, nodes))};  // a ring of the nodes
}

std::vector<sg4::Host*> build_platform(const ClusterConfig& cluster, int world_size) {
  return Builder(cluster, world_size).build();
}

std::vector<sg4::Host*> build_star_platform(const ClusterConfig& cluster, int world_size) {
  ClusterConfig star = cluster;
  star.topology = "star";
  star.devices_per_node = 1;
  return build_platform(star, world_size);
}

}  // namespace ddplab::sim
