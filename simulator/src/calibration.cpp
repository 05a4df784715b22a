// Calibration fit (no SimGrid here): ping-pong samples -> latency, bandwidth and piecewise SMPI-style factors.
#include "ddplab/simulator/calibration.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include <fmt/format.h>

#include "ddplab/core/error.hpp"
#include "ddplab/core/stats.hpp"
#include "ddplab/core/store.hpp"
#include "ddplab/simulator/simulator.hpp"

namespace ddplab {
namespace {

// Affine fit t = a + s * b over samples [i, j], weighted by 1 / t^2 so that every size counts by its
// relative error (sizes span 5 decades). a >= 0 and b > 0 are enforced: a negative intercept refits through
// the origin, a non-positive slope (times flat or falling) keeps the slope of the neighbouring fit `b_hint`.
struct Affine {
  double a = 0, b = 0, max_rel = 0, sse = 0;
};

Affine fit_affine(const std::vector<PingPongSample>& x, std::size_t i, std::size_t j, double b_hint) {
  double sw = 0, sws = 0, swt = 0, swss = 0, swst = 0;
  for (std::size_t k = i; k <= j; ++k) {
    const double s = static_cast<double>(x[k].bytes), t = x[k].one_way_s, w = 1 / (t * t);
    sw += w, sws += w * s, swt += w * t, swss += w * s * s, swst += w * s * t;
  }
  Affine f;
  const double det = sw * swss - sws * sws;
  if (j > i && det > 0) {
    f.b = (sw * swst - sws * swt) / det;
    f.a = (swt - f.b * sws) / sw;
  }
  if (j == i || det <= 0 || f.b <= 0) {
    f.b = b_hint;
    f.a = (swt - f.b * sws) / sw;
  }
  if (f.a < 0) {  // through the origin
    f.a = 0;
    f.b = swst / swss;
  }
  for (std::size_t k = i; k <= j; ++k) {
    const double s = static_cast<double>(x[k].bytes), t = x[k].one_way_s;
    const double rel = (f.a + s * f.b - t) / t;
    f.max_rel = std::max(f.max_rel, std::abs(rel));
    f.sse += rel * rel;
  }
  return f;
}

struct Split {
  std::vector<std::size_t> starts;  // first sample index of each segment
  bool ok = false;
};

// Fewest segments whose fits stay within `tol`; among those, the smallest total squared relative error.
// Dynamic programming over prefixes. A size that fits no neighbour's line within `tol` gets an interval of
// its own (exact: the overall slope, or its own rate through the origin), as a size-indexed table of SMPI
// factors would: on a token-bucket shaper, the jump at the eager/rendezvous switch and the burst the bucket
// lets through early fit no affine law.
Split segment(const std::vector<PingPongSample>& x, double tol, double b_hint) {
  const std::size_t n = x.size();
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<int> count(n + 1, std::numeric_limits<int>::max());
  std::vector<double> err(n + 1, inf);
  std::vector<std::size_t> from(n + 1, 0);
  count[0] = 0;
  err[0] = 0;
  for (std::size_t end = 1; end <= n; ++end)
    for (std::size_t start = 0; start < end; ++start) {
      if (count[start] == std::numeric_limits<int>::max()) continue;
      const Affine f = fit_affine(x, start, end - 1, b_hint);
      if (f.max_rel > tol) continue;
      const int c = count[start] + 1;
      const double e = err[start] + f.sse;
      if (c < count[end] || (c == count[end] && e < err[end])) count[end] = c, err[end] = e, from[end] = start;
    }
  Split out;
  if (count[n] == std::numeric_limits<int>::max()) return out;
  for (std::size_t end = n; end > 0; end = from[end]) out.starts.push_back(from[end]);
  std::reverse(out.starts.begin(), out.starts.end());
  out.ok = true;
  return out;
}

double positive(const nlohmann::json& j, const char* key) {
  if (!j.contains(key) || !j.at(key).is_number())
    throw CalibrationError(fmt::format("calibration JSON: field \"{}\" is missing or not a number", key));
  return j.at(key).get<double>();
}

// A codec work fit stored before fits had two terms: its one unit was the FLOPs for the products and
// Gram-Schmidt (now `extra`) and n + k log2 k for top-k (now units + extra); the same times, restated.
WorkFit legacy_work_fit(const std::string& key, const WorkFit& f) {
  for (WorkKind k : {WorkKind::MatMul, WorkKind::MatMulTN, WorkKind::MatMulNT, WorkKind::Orthogonalize})
    if (key == work_name(k)) return {f.fixed_s, 0.0, f.per_unit_s};
  if (key == work_name(WorkKind::TopK)) return {f.fixed_s, f.per_unit_s, f.per_unit_s};
  return f;
}

}  // namespace

const FactorSegment& Calibration::segment_for(double bytes) const {
  if (segments.empty()) throw CalibrationError(fmt::format("calibration \"{}\" has no factor segments", name));
  std::size_t k = 0;
  while (k + 1 < segments.size() && static_cast<double>(segments[k + 1].from_bytes) <= bytes) ++k;
  return segments[k];
}

FactorSegment Calibration::factors_at(double bytes) const {
  const FactorSegment& f = segment_for(bytes);
  std::size_t k = static_cast<std::size_t>(&f - segments.data());
  if (k + 1 >= segments.size()) return f;
  const FactorSegment& g = segments[k + 1];
  // The interval's largest measured size below the next interval.
  double last = -1;
  for (const auto& s : samples)
    if (static_cast<double>(s.bytes) >= static_cast<double>(f.from_bytes) && s.bytes < g.from_bytes)
      last = std::max(last, static_cast<double>(s.bytes));
  if (last < 0 || bytes <= last) return f;
  const double next = static_cast<double>(g.from_bytes);
  const double w = (bytes - last) / (next - last);
  // Latency and transfer parts, each linear between the two fits at the two sizes.
  const double lat = (1 - w) * f.lat_factor + w * g.lat_factor;
  const double xfer = (1 - w) * last / (f.bw_factor * bandwidth) + w * next / (g.bw_factor * bandwidth);
  FactorSegment out = f;
  out.lat_factor = lat;
  out.bw_factor = bytes / (xfer * bandwidth);
  return out;
}

double Calibration::predict(double bytes) const {
  const FactorSegment f = factors_at(bytes);
  return f.lat_factor * latency_s + bytes / (f.bw_factor * bandwidth);
}

double Calibration::fitted_time(double bytes) const {
  const FactorSegment f = factors_at(bytes);
  return f.lat_factor * latency_s + bytes * (1 + crosstraffic_share) / (f.bw_factor * bandwidth);
}

Calibration fit_pingpong(const std::vector<PingPongSample>& x, double tolerance) {
  if (x.size() < 2)
    throw CalibrationError(
        fmt::format("calibration fit: needs ping-pong times at 2 or more message sizes, got {}", x.size()));
  for (std::size_t k = 0; k < x.size(); ++k) {
    if (!(x[k].one_way_s > 0) || !std::isfinite(x[k].one_way_s))
      throw CalibrationError(fmt::format("calibration fit: time at {} B must be a positive number of seconds, got {}",
                                         x[k].bytes, x[k].one_way_s));
    if (k > 0 && x[k].bytes <= x[k - 1].bytes)
      throw CalibrationError(
          fmt::format("calibration fit: message sizes must be strictly increasing, got {} B after {} B", x[k].bytes,
                      x[k - 1].bytes));
  }
  if (x.back().one_way_s <= x.front().one_way_s)
    throw CalibrationError(fmt::format(
        "calibration fit: times do not grow with size ({} B takes {:.3g} s, {} B takes {:.3g} s): not a ping-pong "
        "over a network",
        x.front().bytes, x.front().one_way_s, x.back().bytes, x.back().one_way_s));
  // A slope for segments too flat to have one: the overall rate between the extreme sizes.
  const double b_hint =
      (x.back().one_way_s - x.front().one_way_s) / static_cast<double>(x.back().bytes - x.front().bytes);
  Split split;
  double tol = tolerance;
  for (int k = 0; !split.ok; ++k) {
    split = segment(x, tol, b_hint);
    tol *= (k % 2 == 0) ? 2.0 : 2.5;  // 1%, 2%, 5%, 10%, 20%, ...
  }
  std::vector<Affine> fits;
  for (std::size_t k = 0; k < split.starts.size(); ++k) {
    const std::size_t end = k + 1 < split.starts.size() ? split.starts[k + 1] - 1 : x.size() - 1;
    fits.push_back(fit_affine(x, split.starts[k], end, b_hint));
  }
  Calibration c;
  c.samples = x;
  // The first interval's latency and the last interval's bandwidth are the base; the rest are factors.
  c.latency_s = fits.front().a > 0 ? fits.front().a : x.front().one_way_s;
  c.bandwidth = 1 / fits.back().b;
  for (std::size_t k = 0; k < fits.size(); ++k)
    c.segments.push_back(
        {k == 0 ? 0 : x[split.starts[k]].bytes, fits[k].a / c.latency_s, 1 / (fits[k].b * c.bandwidth)});
  return c;
}

Calibration fit_exchange(const std::vector<PingPongSample>& samples, double tolerance, bool crosstraffic) {
  Calibration c = fit_pingpong(samples, tolerance);
  c.fitted = "exchange";
  if (crosstraffic) {
    c.crosstraffic_share = kSimCrosstrafficShare;
    c.bandwidth *= 1 + kSimCrosstrafficShare;
  }
  return c;
}

nlohmann::json Calibration::to_json() const {
  nlohmann::json segs = nlohmann::json::array(), samp = nlohmann::json::array(), lay = nlohmann::json::array();
  for (const auto& s : segments)
    segs.push_back({{"from_bytes", s.from_bytes}, {"lat_factor", s.lat_factor}, {"bw_factor", s.bw_factor}});
  for (const auto& s : samples) samp.push_back({{"bytes", s.bytes}, {"one_way_s", s.one_way_s}});
  for (const auto& l : layers) lay.push_back({{"forward_s", l.forward_s}, {"backward_s", l.backward_s}});
  return {{"name", name},
          {"link_class", link_class},
          {"fitted", fitted},
          {"crosstraffic_share", crosstraffic_share},
          {"latency_s", latency_s},
          {"bandwidth", bandwidth},
          {"segments", segs},
          {"samples", samp},
          {"compute_backend", compute_backend},
          {"layer_widths", layer_widths},
          {"batch_size", batch_size},
          {"layers", lay},
          {"optimizer_s", optimizer_s},
          {"codec_backend", codec_backend},
          {"tcp_rendezvous_bytes", tcp_rendezvous_bytes},
          {"codec_work",
           [&] {
             nlohmann::json w = nlohmann::json::object();
             for (const auto& [key, f] : codec_work)
               w[key] = {{"fixed_s", f.fixed_s}, {"per_unit_s", f.per_unit_s}, {"per_extra_s", f.per_extra_s}};
             return w;
           }()},
          {"intra", intra ? intra->to_json() : nlohmann::json()}};
}

Calibration Calibration::from_json(const nlohmann::json& j) {
  if (!j.is_object()) throw CalibrationError("calibration JSON: not an object");
  Calibration c;
  c.name = j.value("name", "");
  c.link_class = j.value("link_class", "");
  c.fitted = j.value("fitted", "pingpong");
  c.crosstraffic_share = j.value("crosstraffic_share", 0.0);
  c.latency_s = positive(j, "latency_s");
  c.bandwidth = positive(j, "bandwidth");
  if (!(c.bandwidth > 0)) throw CalibrationError("calibration JSON: bandwidth must be > 0");
  for (const auto& s : j.value("segments", nlohmann::json::array()))
    c.segments.push_back(
        {s.at("from_bytes").get<std::uint64_t>(), s.at("lat_factor").get<double>(), s.at("bw_factor").get<double>()});
  if (c.segments.empty() || c.segments.front().from_bytes != 0)
    throw CalibrationError("calibration JSON: segments must be non-empty and start at 0 bytes");
  for (const auto& s : j.value("samples", nlohmann::json::array()))
    c.samples.push_back({s.at("bytes").get<std::uint64_t>(), s.at("one_way_s").get<double>()});
  c.compute_backend = j.value("compute_backend", "cpu");
  c.layer_widths = j.value("layer_widths", std::vector<int>{});
  c.batch_size = j.value("batch_size", 0);
  for (const auto& l : j.value("layers", nlohmann::json::array()))
    c.layers.push_back({l.at("forward_s").get<double>(), l.at("backward_s").get<double>()});
  c.optimizer_s = j.value("optimizer_s", 0.0);
  c.codec_backend = j.value("codec_backend", "");
  c.tcp_rendezvous_bytes = j.value("tcp_rendezvous_bytes", std::uint64_t{0});
  if (j.contains("codec_work") && j.at("codec_work").is_object())
    for (const auto& [key, f] : j.at("codec_work").items()) {
      WorkFit fit{f.value("fixed_s", -1.0), f.value("per_unit_s", -1.0), f.value("per_extra_s", 0.0)};
      if (!(fit.fixed_s >= 0) || !(fit.per_unit_s >= 0) || !(fit.per_extra_s >= 0))
        throw CalibrationError("calibration JSON: codec_work." + key +
                               " needs fixed_s, per_unit_s and per_extra_s >= 0");
      if (!f.contains("per_extra_s")) fit = legacy_work_fit(key, fit);
      c.codec_work[key] = fit;
    }
  if (j.contains("intra") && !j.at("intra").is_null()) {
    try {
      c.intra = std::make_shared<Calibration>(from_json(j.at("intra")));
    } catch (const CalibrationError& e) {
      throw CalibrationError(std::string("calibration JSON: intra: ") + e.what());
    }
  }
  return c;
}

RowsByNode rows_by_node(const std::vector<PingPongRow>& rows, const std::vector<std::string>& node_of) {
  RowsByNode out;
  for (const PingPongRow& r : rows) {
    if (r.dst < 0 || static_cast<std::size_t>(r.dst) >= node_of.size() || node_of.empty())
      throw InputError(fmt::format("rows_by_node: no node for rank {} ({} known)", r.dst, node_of.size()));
    (node_of[static_cast<std::size_t>(r.dst)] == node_of[static_cast<std::size_t>(r.src)] ? out.intra : out.inter)
        .push_back(r);
  }
  return out;
}

std::shared_ptr<const Calibration> load_calibration(const Store& store, const std::string& name) {
  const auto rec = store.calibration(name);
  if (!rec) {
    std::string known;
    for (const auto& r : store.calibrations()) known += (known.empty() ? "" : ", ") + fmt::format("\"{}\"", r.name);
    throw CalibrationError(
        fmt::format("no calibration named \"{}\" in the results store {} (stored: {}); make one with "
                    "`ddplab calibrate --name {}`",
                    name, store.path(), known.empty() ? "none" : known, name));
  }
  try {
    auto c = std::make_shared<Calibration>(Calibration::from_json(nlohmann::json::parse(rec->fit_json)));
    c->name = rec->name;
    return c;
  } catch (const nlohmann::json::exception& e) {
    throw CalibrationError(
        fmt::format("calibration \"{}\" (id {}) in {}: malformed fit JSON: {}", name, rec->id, store.path(), e.what()));
  }
}

ClusterConfig calibrated_cluster(const ClusterConfig& cluster, const SimOptions& options) {
  ClusterConfig c = cluster;
  if (!options.calibration) return c;
  c.link_latency = options.calibration->latency_s / 2;  // a star route crosses two links
  c.link_bandwidth = options.calibration->bandwidth;
  if (const auto& in = options.calibration->intra) {  // device -> node switch -> device: two links too
    c.intra_latency = in->latency_s / 2;
    c.intra_bandwidth = in->bandwidth;
  }
  return c;
}

std::string compute_backend_of(const Scenario& scenario) {
  if (!on_gpu(scenario.train.backend)) return "cpu";
  return scenario.train.tf32 ? "cuda-tf32" : "cuda";
}

bool calibration_fits_model(const Calibration& c, const Scenario& scenario) {
  return !c.layers.empty() && scenario.model.type == ModelType::Mlp && c.layer_widths == scenario.model.layers &&
         c.batch_size == scenario.train.batch_size && c.layers.size() + 1 == scenario.model.layers.size() &&
         c.compute_backend == compute_backend_of(scenario);
}

std::vector<PingPongSample> median_samples(const std::vector<PingPongRow>& rows,
                                           const std::vector<std::uint64_t>& sizes) {
  std::vector<PingPongSample> out;
  for (std::uint64_t size : sizes) {
    std::vector<double> t;
    for (const auto& r : rows)
      if (static_cast<std::uint64_t>(r.bytes) == size) t.push_back(r.one_way_s);
    if (!t.empty()) out.push_back({size, median(t)});
  }
  return out;
}

LinkFit fit_links(const LinkMeasurements& m) {
  LinkFit out;
  const RowsByNode by = rows_by_node(m.pingpong, m.node_of);
  const bool two_classes = !by.intra.empty() && !by.inter.empty();
  try {
    out.pingpong = fit_pingpong(median_samples(two_classes ? by.inter : m.pingpong, m.sizes), m.tolerance);
  } catch (const CalibrationError&) {
    if (m.fit == "pingpong") throw;  // otherwise it is only printed: a shaper's burst can defeat it
  }
  out.fit = m.fit == "pingpong" ? out.pingpong : fit_exchange(m.exchange, m.tolerance, true);
  out.fit.fitted = m.fit;
  out.fit.link_class = out.pingpong.link_class = m.link_class;
  if (m.link_class == "testbed") out.fit.tcp_rendezvous_bytes = 64 * 1024;
  if (two_classes) {
    try {
      auto intra = std::make_shared<Calibration>(fit_pingpong(median_samples(by.intra, m.sizes), m.tolerance));
      intra->link_class = m.link_class + "-intra";
      out.fit.intra = intra;
    } catch (const CalibrationError& e) {
      out.intra_note = fmt::format("no intra-node fit ({} peers on rank 0's node): {}", by.intra.size(), e.what());
    }
  }
  return out;
}

}  // namespace ddplab
