// Calibration: a fit of measured ping-pong times to the simulator's network model, plus measured per-layer
// compute times, stored by name (`ddplab calibrate`) and used by scenarios ([cluster] calibration = "NAME").
//
// Network model, per link class (one class: the transport the measurement ran on). The one-way time of a
// message of s bytes is
//     t(s) = lat_factor(s) * latency + s / (bw_factor(s) * bandwidth)
// with lat_factor and bw_factor piecewise constant over size intervals, as SMPI's network factors are.
// `latency` is the smallest messages' latency (lat_factor 1 in the first interval) and `bandwidth` the
// largest messages' rate (bw_factor 1 in the last interval). On the simulator's star a route crosses two
// links, so each link gets latency / 2 and the full bandwidth; the factors go to SimGrid's network model
// callbacks.
#pragma once
#include <cstdint>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ddplab/core/scenario.hpp"

namespace ddplab {

class Store;
struct SimOptions;

struct CalibrationError : std::invalid_argument {
  using std::invalid_argument::invalid_argument;
};

// One measured message size: one-way time = half the fastest round trip.
struct PingPongSample {
  std::uint64_t bytes = 0;
  double one_way_s = 0;
};

// Factors for messages of at least from_bytes (up to the next segment's from_bytes).
struct FactorSegment {
  std::uint64_t from_bytes = 0;
  double lat_factor = 1, bw_factor = 1;
};

// Measured compute of one layer at the calibration's batch size.
struct LayerTime {
  double forward_s = 0, backward_s = 0;
};

struct Calibration {
  std::string name;
  std::string link_class;                // "mpi" (the job's transport) or "testbed"
  double latency_s = 0;                  // one-way, end to end
  double bandwidth = 0;                  // bytes/s
  std::vector<FactorSegment> segments;   // ascending from_bytes, the first from 0
  std::vector<PingPongSample> samples;   // what was fitted
  // Compute, when a scenario was given: its MLP widths and batch, per-layer times and the optimizer.
  std::vector<int> layer_widths;
  int batch_size = 0;
  std::vector<LayerTime> layers;
  double optimizer_s = 0;

  const FactorSegment& segment_for(double bytes) const;
  double predict(double bytes) const;  // t(s) above

  nlohmann::json to_json() const;
  static Calibration from_json(const nlohmann::json& j);  // throws CalibrationError naming the field
};

// Fits latency, bandwidth and the piecewise factors to ping-pong samples (strictly increasing sizes).
// Consecutive sizes are grouped into the fewest intervals whose affine fit t = a + s * b stays within
// `tolerance` (relative) of every sample; the tolerance widens (x2, x5, ...) when no grouping meets it.
// Throws CalibrationError for fewer than 2 sizes, sizes not strictly increasing, non-positive times, or
// times that do not grow with size.
Calibration fit_pingpong(const std::vector<PingPongSample>& samples, double tolerance = 0.01);

// The latest calibration stored under `name` (StoreError / CalibrationError when missing or malformed).
std::shared_ptr<const Calibration> load_calibration(const Store& store, const std::string& name);

// The cluster with its links replaced by the calibration's (latency / 2 per link, the bandwidth); the
// cluster itself when options carry no calibration.
ClusterConfig calibrated_cluster(const ClusterConfig& cluster, const SimOptions& options);

// Whether the calibration's per-layer times describe this scenario's model and batch (same MLP widths,
// same batch size); only then do they replace the FLOP split.
bool calibration_fits_model(const Calibration& c, const Scenario& scenario);

}  // namespace ddplab
