// Collectives at any scale, as nccl-tests would print them: every schedule's allreduce at each size,
// simulated on a cluster (`ddplab bench collectives --simulate`), row for row comparable with a measured
// bench or an imported nccl-tests log.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ddplab/core/scenario.hpp"
#include "ddplab/core/store.hpp"
#include "ddplab/simulator/simulator.hpp"

namespace ddplab {

struct CollectiveSimRequest {
  ClusterConfig cluster;
  int world_size = 2;
  std::vector<std::string> schedules;  // allreduce schedules; "native" is the transport's own (native.cpp)
  std::vector<std::uint64_t> sizes;    // bytes of float32 per rank
  Transport transport = Transport::Mpi;  // what native replays as
  SimOptions options;                  // network model, calibration
  int ranks_per_node = 0;              // hierarchical schedules' consecutive ranks per node; 0: cluster.devices_per_node
};

// One row per schedule and size, in that order: time_us = the simulated collective (the last rank's end),
// algbw and busbw as metrics.hpp defines them, #wrong none (nothing is computed). on_row sees each as it
// is done. Each simulation runs in a child process (simulate_schedule). Throws InputError for
// an unknown schedule, a world size below 1 or a size below 4 bytes.
std::vector<CollectiveBenchRow> simulate_collective_bench(const CollectiveSimRequest& req,
                                                          const std::function<void(const CollectiveBenchRow&)>& on_row = {});

}  // namespace ddplab
