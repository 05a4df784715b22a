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
  std::vector<std::string> schedules;    // allreduce schedules; "native" is the transport's own (native.cpp)
  std::vector<std::uint64_t> sizes;      // bytes of float32 per rank
  Transport transport = Transport::Mpi;  // what native replays as
  SimOptions options;                    // network model, calibration
  int ranks_per_node = 0;  // hierarchical schedules' consecutive ranks per node; 0: cluster.devices_per_node
};

// One row per schedule and size, in that order: time_us = the simulated collective (the last rank's end),
// algbw and busbw as metrics.hpp defines them, #wrong none (nothing is computed). on_row sees each as it
// is done. Each simulation runs in a child process (simulate_schedule). Throws InputError for
// an unknown schedule, a world size below 1 or a size below 4 bytes.
std::vector<CollectiveBenchRow> simulate_collective_bench(
    const CollectiveSimRequest& req, const std::function<void(const CollectiveBenchRow&)>& on_row = {});

// `ddplab bench collectives --simulate`: a simulated bench, stored in the results store as a measured one is
// (backend "simgrid"), on the cluster of a scenario, of a preset or the default one.
struct SimulatedBench {
  CollectiveSimRequest request;  // the cluster and transport; the caller sets world size, schedules and sizes
  std::string where;             // the cluster in words
  std::string scenario, preset;  // where the cluster came from; both empty: the default cluster
  std::string calibration;       // the calibration the scenario's [cluster] names; empty: none
  std::string sizes;             // the sizes as given (stored with the bench)
};

// The cluster of `scenario` (a file, validated as `ddplab simulate` does), else of `preset` (unknown names
// are refused, listing the known ones), else the default 10 Gbit/s star. `transport` ("mpi" or "nccl")
// decides what native replays as; empty: NCCL where the cluster's devices train with it (a scenario with
// train.backend "cuda"; a preset with device FLOPs, except cpu-testbed), else MPI.
SimulatedBench simulated_bench_cluster(const std::string& scenario, const std::string& preset,
                                       const std::string& transport);

// Resolves the network model ("auto": the cluster's), loads the calibration the scenario names from `store`,
// calls `begin` (nothing is stored yet), records the bench and stores each row as it is simulated (on_row
// sees it after). It ends "completed"; a simulation that throws leaves it "failed" with the rows so far, and
// the error goes on. Returns the bench's id.
std::int64_t run_simulated_bench(Store& store, SimulatedBench& bench, const std::function<void()>& begin,
                                 const std::function<void(const CollectiveBenchRow&)>& on_row);

}  // namespace ddplab
