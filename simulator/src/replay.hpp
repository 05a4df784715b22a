// Internal: replay of a Schedule (and of a baseline DDP step around it) as SimGrid activities.
#pragma once
#include <cstddef>

#include "ddplab/simulator/simulator.hpp"

namespace ddplab::sim {

// What one simulation runs: per rank, Exec(compute_s), the schedule, Exec(optimizer_s).
struct SimJob {
  ClusterConfig cluster;
  const Schedule* schedule = nullptr;  // world size = schedule->world_size
  std::size_t elem_bytes = kGradientElemBytes;
  double compute_s = 0, optimizer_s = 0;
  SimOptions options;
};

// Throws std::invalid_argument when the schedule cannot run: peers out of range, a rank sending to
// itself, or sends and receives between a pair that do not match in number (it would deadlock).
void validate_schedule(const Schedule& schedule);

// Builds the engine and platform, runs the job and collects the result (wall_s left 0).
// Creates SimGrid's engine: call it at most once per process, i.e. inside run_in_child.
SimStepResult run_simulation(const SimJob& job);

}  // namespace ddplab::sim
