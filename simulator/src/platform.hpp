// Internal: SimGrid engine setup and platform construction. Only ever called inside a simulation's child
// process (see isolate.hpp): a process can hold one SimGrid engine in its lifetime.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include <simgrid/s4u.hpp>

#include "ddplab/simulator/simulator.hpp"
#include "ddplab/strategies/nccl_model.hpp"

namespace ddplab::sim {

// Every host gets this speed; compute is modelled as Exec(duration * speed), so its value is arbitrary.
inline constexpr double kHostSpeed = 1e9;  // flop/s

// Throws InputError when the cluster cannot be modelled (topology, bandwidth, latency).
void validate_cluster(const ClusterConfig& cluster);

// The TCP-gamma window (bytes) that keeps SimGrid's per-flow cap gamma / (2 * route latency) far above
// the link bandwidth, so the configured links alone decide throughput.
double tcp_gamma_for(const ClusterConfig& cluster);

// The surf/precision to use (options.time_precision_s, or the automatic value).
double time_precision_for(const ClusterConfig& cluster, const SimOptions& options);

// Creates the process's engine with the network model, cross-traffic, TCP-gamma, time precision and log
// level set.
// The engine is deliberately leaked: the child exits right after the simulation.
simgrid::s4u::Engine* make_engine(const ClusterConfig& cluster, const SimOptions& options);

// The cluster's platform (topology.cpp; docs/simulation.md, Clusters): host "r<i>" per rank, in rank order. Rank r is
// device r % devices_per_node of node r / devices_per_node; a straggler's host runs at kHostSpeed / factor.
// Star with one device per node: each host on its own split-duplex link "link-r<i>" of link_bandwidth and
// link_latency to one switch, so host -> host crosses two links (2 x latency). Full with one device per
// node: one link per pair of hosts (1 x fabric latency). Throws InputError when the world does
// not fit the topology (a shape with too few leaves, a full mesh of more than kMaxFullMeshNodes nodes).
std::vector<simgrid::s4u::Host*> build_platform(const ClusterConfig& cluster, int world_size);

// build_platform of the cluster as a star of one host per rank (topology and devices_per_node ignored).
std::vector<simgrid::s4u::Host*> build_star_platform(const ClusterConfig& cluster, int world_size);

// Full mesh ("full"): n (n - 1) / 2 pair links, about 1.6 kB each in SimGrid 3.32 (measured: 1024 nodes,
// 523,776 links, 0.84 GB and 9.6 s to build). check_full_mesh_size throws InputError, naming
// the counts and the alternatives, above kMaxFullMeshNodes nodes.
inline constexpr int kMaxFullMeshNodes = 1024;
std::int64_t full_mesh_links(int nodes);
void check_full_mesh_size(const ClusterConfig& cluster, int nodes);

// What NCCL's tuner sees of this cluster (nccl_model.hpp): effective bandwidths, NICs, and the platform's
// route latencies inside a node and across nodes (one switch level), which its hop latencies include.
NcclFabric nccl_fabric(const ClusterConfig& cluster);

// Pieces of the model, exposed for validation, TCP-gamma and tests.
double host_speed(const ClusterConfig& cluster, int rank);                   // kHostSpeed / straggler factors
double node_nic_total(const ClusterConfig& cluster, int node, int devices);  // bytes/s of all a node's NICs
double fabric_bandwidth(const ClusterConfig& cluster);                       // full/fat-tree/dragonfly/torus links
struct FatTreeShape {
  unsigned levels = 1;
  std::vector<unsigned> down, up, count;
};
// The topology actually built for `nodes` nodes: the scenario's string, or one sized to fit. Throws
// InputError when the scenario's shape has fewer leaves than nodes.
FatTreeShape fat_tree_shape(const ClusterConfig& cluster, int nodes);
std::vector<unsigned> dragonfly_shape(const ClusterConfig& cluster,
                                      int nodes);  // groups, links, chassis, links, routers, links, nodes
std::vector<unsigned> torus_shape(const ClusterConfig& cluster, int nodes);

}  // namespace ddplab::sim
