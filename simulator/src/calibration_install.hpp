// Internal: puts a Calibration (calibration.hpp) into a simulation's child process: SimGrid network-model
// factor callbacks, and per-layer compute times into the plan replay's op costs.
#pragma once
#include <simgrid/s4u.hpp>

#include "ddplab/simulator/simulator.hpp"
#include "plan_replay.hpp"

namespace ddplab::sim {

// Called by make_engine once the engine exists, with the already calibrated cluster. Without a calibration
// it does nothing. Otherwise it widens TCP-gamma so that the largest latency factor cannot make the window
// bind, and installs the latency and bandwidth factor callbacks. SimGrid's network model exists only once
// the platform's first zone does, so they are installed when the simulation starts (Engine::run). The
// model's own constant factors (LV08: 13.01 and 0.97) are replaced by the calibration's.
void install_calibration(simgrid::s4u::Engine* engine, const ClusterConfig& cluster, const SimOptions& options);

// Replaces the FLOP split of compute_s by the calibration's measured per-layer times (forward: their sum,
// backward of layer i: layer i's) when the job's calibration carries them. Throws InputError when
// they do not cover the plan's layers.
void apply_calibrated_compute(OpCosts& costs, const StepPlan& plan, const SimOptions& options);

}  // namespace ddplab::sim
