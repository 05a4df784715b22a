// Internal: how long a codec's local work (codec.hpp LocalWork) takes on an idle host. With a calibration
// that timed the kind on the compute backend, its fit (fixed + per unit); otherwise a byte/FLOP model:
// the larger of the bytes it moves over the device's memory bandwidth ([cluster].device_mem_bw, else
// kCoreMemBw for a CPU core) and its FLOPs at the rate the step's compute implies.
#pragma once
#include <map>
#include <string>
#include <vector>

#include "ddplab/simulator/calibration.hpp"
#include "ddplab/strategies/codec.hpp"

namespace ddplab::sim {

// One CPU core streaming through memory (bytes/s): the byte model's bandwidth when the cluster gives none.
inline constexpr double kCoreMemBw = 10e9;

struct WorkModel {
  std::map<std::string, WorkFit> fits;  // a calibration's, by work_key
  double mem_bw = kCoreMemBw;           // bytes/s
  double flop_rate = 0;                 // FLOP/s; 0: FLOPs are not charged
  double seconds(const LocalWork& w) const;
  double seconds(const std::vector<LocalWork>& ws) const;
};

// The model for a simulation: the calibration's codec fits when it has them, the cluster's memory
// bandwidth, and seconds_per_flop (compute_s over the plan's forward and backward FLOPs).
WorkModel work_model(const ClusterConfig& cluster, const Calibration* calibration, double seconds_per_flop);

}  // namespace ddplab::sim
