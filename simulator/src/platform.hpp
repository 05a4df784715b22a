// Internal: SimGrid engine setup and platform construction. Only ever called inside a simulation's child
// process (see isolate.hpp): a process can hold one SimGrid engine in its lifetime.
#pragma once
#include <memory>
#include <vector>

#include <simgrid/s4u.hpp>

#include "ddplab/simulator/simulator.hpp"

namespace ddplab::sim {

// Every host gets this speed; compute is modelled as Exec(duration * speed), so its value is arbitrary.
inline constexpr double kHostSpeed = 1e9;  // flop/s

// Throws std::invalid_argument when the cluster cannot be modelled (topology, bandwidth, latency).
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

// A star through one switch: host "r<i>" per rank, each on its own split-duplex link "link-r<i>" of the
// configured bandwidth and latency. A route host -> host crosses two links (2 x latency).
std::vector<simgrid::s4u::Host*> build_star_platform(const ClusterConfig& cluster, int world_size);

}  // namespace ddplab::sim
