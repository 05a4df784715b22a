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
#include <map>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ddplab/core/scenario.hpp"
#include "ddplab/core/store.hpp"
#include "ddplab/strategies/codec.hpp"

namespace ddplab {

class Store;
struct SimOptions;

// A calibration that is missing, malformed, or does not fit the scenario it is used with: input (exit 2).
struct CalibrationError : InputError {
  using InputError::InputError;
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

// One kind of codec work, timed at several sizes and fitted: seconds = fixed_s + per_unit_s x units +
// per_extra_s x extra (codec.hpp work_size).
struct WorkFit {
  double fixed_s = 0, per_unit_s = 0, per_extra_s = 0;
  double seconds(const WorkSize& s) const { return fixed_s + per_unit_s * s.units + per_extra_s * s.extra; }
};

struct Calibration {
  std::string name;
  std::string link_class;  // the transport measured: "mpi", "testbed" (MPI between its hosts) or "nccl"
  Transport transport() const { return link_class == "nccl" ? Transport::Nccl : Transport::Mpi; }
  double latency_s = 0;                 // one-way, end to end
  double bandwidth = 0;                 // bytes/s
  std::vector<FactorSegment> segments;  // ascending from_bytes, the first from 0
  std::vector<PingPongSample> samples;  // what was fitted (one-way times)
  // What the samples are: "pingpong" (one message at a time between a pair), "exchange" (every rank sends
  // to its right neighbour and receives from its left at once, in a loop) or "ring" (one step of the
  // runtime's ring allreduce, which is such an exchange, chained as training chains them).
  std::string fitted = "pingpong";
  double crosstraffic_share = 0;  // by which `bandwidth` was raised over the samples' (fit_exchange)
  // Compute, when a scenario was given: the backend that ran it (Ops::name(): "cpu", "cuda" or
  // "cuda-tf32"; "cpu" in calibrations stored before it was recorded), its MLP widths and batch,
  // per-layer times and the optimizer.
  std::string compute_backend = "cpu";
  std::vector<int> layer_widths;
  int batch_size = 0;
  std::vector<LayerTime> layers;
  double optimizer_s = 0;
  // Codecs' local work timed on the compute backend (runtime's measure_codec_work, fitted by
  // fit_codec_work), per work_key ("topk", "to_half.bf16", ...). codec_backend names the CodecCompute that
  // ran it ("host", "cuda"). Empty when not measured.
  std::map<std::string, WorkFit> codec_work;
  std::string codec_backend;
  // Over Open MPI's TCP transport (the test bed: no shared memory), messages of at least this many bytes
  // wait for the receiver's go-ahead, which queues behind its own outgoing data: the simulator makes the
  // two directions of a pairwise exchange in a native collective take turns (replay.hpp). 0: not TCP.
  std::uint64_t tcp_rendezvous_bytes = 0;
  // The links inside a node, when the calibration's job ran on several nodes with several ranks on rank
  // 0's: the ping-pong between rank 0 and the ranks of its node, fitted (fit_pingpong). The fit above then
  // describes the links between nodes. In the simulator it replaces the intra-node fabric's links, and its
  // factors apply to messages between devices of one node.
  std::shared_ptr<const Calibration> intra;

  const FactorSegment& segment_for(double bytes) const;
  // The factors the simulator uses at this size: the interval's own, except between an interval's largest
  // measured size and the next interval's first, where they interpolate the two fits' times linearly (an
  // interval's affine fit says nothing past its last sample; extrapolated, a noisy slope was 11% off there).
  FactorSegment factors_at(double bytes) const;
  double predict(double bytes) const;      // t(s) above, with factors_at
  double fitted_time(double bytes) const;  // the fit of the samples: t(s) at bandwidth / (1 + crosstraffic_share)

  nlohmann::json to_json() const;
  static Calibration from_json(const nlohmann::json& j);  // throws CalibrationError naming the field
};

// One timing of one kind of codec work: its work_size and the seconds it took (a median of repeats).
struct WorkSample {
  std::string key;
  WorkSize size;
  double seconds = 0;
};
// Per key, the weighted least-squares fit of seconds = fixed + a x units + b x extra through its samples,
// each weighted by 1 / seconds^2 (relative error, so that small sizes count as much as large ones), with
// every coefficient >= 0 (the best of the fits on subsets of the three terms that has none negative; a
// term the samples cannot tell apart from another is left out). Throws CalibrationError for a key with
// fewer than 2 distinct sizes or a non-positive time.
std::map<std::string, WorkFit> fit_codec_work(const std::vector<WorkSample>& samples);

// Fits latency, bandwidth and the piecewise factors to ping-pong samples (strictly increasing sizes).
// Consecutive sizes are grouped into the fewest intervals whose affine fit t = a + s * b stays within
// `tolerance` (relative) of every sample; a size that fits with no neighbour gets an interval of its own.
// Throws CalibrationError for fewer than 2 sizes, sizes not strictly increasing, non-positive times, or
// times that do not grow with size.
Calibration fit_pingpong(const std::vector<PingPongSample>& samples, double tolerance = 0.01);

// SimGrid's cross-traffic share (network/crosstraffic, on by default): a flow also loads the reverse
// path with 5% of its rate, as TCP acks do. In an exchange every link carries a flow and the acks of the
// opposite one, so the simulator gives each flow 1 / 1.05 of the link.
inline constexpr double kSimCrosstrafficShare = 0.05;

// fit_pingpong of exchange samples (one-way time of each rank's message while every rank sends and receives
// at once), with the bandwidth raised by the cross-traffic share when the simulation runs with cross-traffic
// on: the simulator then takes that share back, and a simulated exchange reproduces the measured one.
// fitted = "exchange" (`ddplab calibrate` sets "ring" for samples taken from ring allreduce steps).
Calibration fit_exchange(const std::vector<PingPongSample>& samples, double tolerance = 0.01, bool crosstraffic = true);

// Ping-pong rows of rank 0 (src 0), split by the node of the peer: node_of[r] names rank r's node (its host
// name). intra: peers on rank 0's node; inter: the others.
struct RowsByNode {
  std::vector<PingPongRow> intra, inter;
};
RowsByNode rows_by_node(const std::vector<PingPongRow>& rows, const std::vector<std::string>& node_of);

// The medians over peers, per size, of rank 0's ping-pong rows: one link class's samples.
std::vector<PingPongSample> median_samples(const std::vector<PingPongRow>& rows,
                                           const std::vector<std::uint64_t>& sizes);

// What `ddplab calibrate` measured on the links, and how it is to be fitted.
struct LinkMeasurements {
  std::vector<PingPongRow> pingpong;  // rank 0 to every peer, per size
  std::vector<std::string> node_of;   // rank r's node (host name)
  std::vector<std::uint64_t> sizes;
  std::vector<PingPongSample> exchange;  // fit "exchange" or "ring": one-way times under load
  std::string fit = "ring";              // "ring" | "exchange" | "pingpong"
  std::string link_class = "mpi";        // "mpi" | "nccl" | "testbed"
  double tolerance = 0.01;
};
struct LinkFit {
  Calibration fit;         // what the simulator uses (with its intra-node fit, if any)
  Calibration pingpong;    // the ping-pong fit, printed beside it (bandwidth 0 when it failed)
  std::string intra_note;  // why there is no intra-node fit though peers share rank 0's node
};
// The network fit of a calibration: with peers both on rank 0's node and on others, the links between nodes
// (the ring's steps are bound by them) are the main fit and those inside the node the intra-node fit. The
// test bed's links (Open MPI over TCP) get tcp_rendezvous_bytes: above its eager limit (64 KiB with the
// header) the two directions of an exchange take turns in Open MPI's own collectives. Throws
// CalibrationError when the fit asked for cannot be made (the ping-pong fit only when it is the one asked for).
LinkFit fit_links(const LinkMeasurements& m);

// `ddplab calibrate`'s fit_links, named after the calibration: the fit NAME, its intra-node fit
// "NAME (intra-node)" and the ping-pong fit "NAME (ping-pong)".
LinkFit fit_named_links(const LinkMeasurements& m, const std::string& name);

// Sets the calibration's compute: an MLP of `widths` at `batch` timed on `compute_backend` (Ops::name()), per
// layer forward_s and backward_s (input layer first, one per layer of widths), and the optimizer's step.
// Throws InternalError when the layers are not one per layer of widths.
void set_mlp_compute(Calibration& c, const std::string& compute_backend, const std::vector<int>& widths, int batch,
                     const std::vector<double>& forward_s, const std::vector<double>& backward_s, double optimizer_s);

// The job a calibration was measured on, as the results store keeps it beside the fit.
struct CalibrationJob {
  std::string host_info;  // the job's host_info JSON (runtime's job_host_info)
  int world_size = 0;
  Backend backend = Backend::Cpu;
  nlohmann::json testbed;               // the test bed's run tag; null when not on the test bed
  std::vector<std::int64_t> bench_ids;  // the schedule benches measured with it
  std::string scenario;                 // the scenario whose compute it timed; empty: none
};
// The record to store: the fit's JSON (to_json) plus bench_ids, the ping-pong fit's latency and bandwidth
// when the fit is of another kind and the ping-pong fit could be made, and the scenario; the host_info plus
// world_size, backend and testbed. Named after the fit.
CalibrationRecord calibration_record(const LinkFit& fit, const CalibrationJob& job);

// The latest calibration stored under `name` (StoreError / CalibrationError when missing or malformed).
std::shared_ptr<const Calibration> load_calibration(const Store& store, const std::string& name);

// The cluster with its links replaced by the calibration's (latency / 2 per link, the bandwidth; with an
// intra-node fit, the device links of the intra-node fabric likewise); the cluster itself when options
// carry no calibration.
ClusterConfig calibrated_cluster(const ClusterConfig& cluster, const SimOptions& options);

// The compute backend a scenario trains on, as Calibration::compute_backend names it: "cpu", or "cuda" /
// "cuda-tf32" for train.backend cuda and cuda+mpi.
std::string compute_backend_of(const Scenario& scenario);

// Whether the calibration's per-layer times describe this scenario's model, batch and compute backend
// (same MLP widths, batch size and compute_backend_of); only then do they replace the FLOP split.
bool calibration_fits_model(const Calibration& c, const Scenario& scenario);

}  // namespace ddplab
