// What NCCL does for an allreduce (or reduce-scatter, all-gather), for the simulator to replay `native` on
// GPU clusters: the algorithm and protocol NCCL's tuner picks by size and scale, and the messages and costs
// that choice puts on the links.
//
// The choice follows NCCL's own cost model (src/graph/tuning.cc, v2.30.7; constants in
// docs/published-measurements.md, section 4): time = base latency + hops x per-hop latency + bus bytes /
// bandwidth, minimised over {Ring, Tree, NVLS} x {LL, LL128, Simple}. The replay then moves the chosen
// algorithm's bytes on the modelled links, with the protocol's latencies and wire overhead (ScheduleTiming):
//   - Ring uses one channel per NIC: channel c's ring enters and leaves each node through NIC c, so a rank
//     sends (d-1)/d of each ring step to its node neighbour and 1/d to the next node (d devices per node);
//   - Tree is a chain inside each node and a binary tree of nodes, one per NIC stripe, pipelined in chunks;
//   - NVLS (NVLink SHARP, one node of Hopper GPUs on NVSwitch) reduces in the switch: each GPU sends and
//     receives (n+1)/n of the buffer over its NVLink, at NCCL's NVLS efficiency.
// These schedules are models of link load, not programs: their chunk offsets do not describe data, and the
// runtime never runs them (it calls NCCL).
#pragma once
#include <cstddef>
#include <string>

#include "ddplab/strategies/schedule.hpp"

namespace ddplab {

// What NCCL's tuner sees of a cluster. Bandwidths are effective bytes/s per direction.
struct NcclFabric {
  int ranks_per_node = 1;
  int nics_per_node = 1;    // NIC stripes a ring or tree spreads over (one channel per NIC)
  std::string arch;         // "ampere" | "hopper" | "" (unknown: Ampere's constants)
  bool nvls = false;        // NVLink SHARP in the node's switch
  double intra_bw = 0;      // one device's link to its node's switch
  double nic_bw = 0;        // one NIC
  double intra_wire_s = 0;  // the platform's route latency device -> device in a node
  double inter_wire_s = 0;  // and device -> device across nodes (the hop latencies below include it)
};

struct NcclChoice {
  std::string algorithm;  // "ring" | "tree" | "nvls"
  std::string protocol;   // "LL" | "LL128" | "Simple"
  double model_s = 0;     // NCCL's own estimate of the time, for the record
};

// NCCL's choice for `bytes` of `collective` ("allreduce", "reduce_scatter", "all_gather") over `world` ranks.
NcclChoice nccl_choose(const NcclFabric& f, Collective collective, int world, std::size_t bytes);

// The protocol costs of that choice for the replay (ScheduleTiming) of a schedule of `steps` steps moving
// `bytes` per rank.
ScheduleTiming nccl_timing(const NcclFabric& f, const NcclChoice& c, Collective collective, int world, int steps,
                           std::size_t bytes);

// Where NCCL's ring with one channel per NIC sends rank r's ring step: all but 1/stripes of it (rounded down)
// to `intra`, its node neighbour r/d*d + (r+1)%d, and the rest to `inter`, the next node's device of local
// index (r+1)%d. stripes == 1: a plain ring to r+1 (intra == inter).
struct NcclRingPeers {
  int intra = 0, inter = 0, stripes = 1;
  std::size_t across(std::size_t elems) const { return elems / static_cast<std::size_t>(stripes); }
};
NcclRingPeers nccl_ring_peers(const NcclFabric& f, int world, int rank);

// The schedule the simulator replays for that choice (name "nccl:<algorithm>/<protocol>"), with its timing.
Schedule nccl_schedule(const NcclFabric& f, Collective collective, int world, std::size_t count,
                       std::size_t elem_bytes);

}  // namespace ddplab
