#include "work_cost.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <optional>

#include <fmt/format.h>

namespace ddplab::sim {

double WorkModel::seconds(const LocalWork& w) const {
  if (auto it = fits.find(work_key(w)); it != fits.end()) return it->second.seconds(work_size(w));
  const double by_bytes = mem_bw > 0 ? work_bytes(w) / mem_bw : 0.0;
  const double by_flops = flop_rate > 0 ? work_flops(w) / flop_rate : 0.0;
  return std::max(by_bytes, by_flops);
}

double WorkModel::seconds(const std::vector<LocalWork>& ws) const {
  double s = 0;
  for (const LocalWork& w : ws) s += seconds(w);
  return s;
}

WorkModel work_model(const ClusterConfig& cluster, const Calibration* calibration, double seconds_per_flop) {
  WorkModel m;
  if (calibration) m.fits = calibration->codec_work;
  if (cluster.device_mem_bw) m.mem_bw = *cluster.device_mem_bw;
  m.flop_rate = seconds_per_flop > 0 ? 1.0 / seconds_per_flop : 0.0;
  return m;
}

}  // namespace ddplab::sim

// The fit of calibrate's codec work timings (calibration.hpp fit_codec_work).
namespace ddplab {
namespace {

using Terms = std::array<double, 3>;  // 1, units, extra
Terms terms(const WorkSample& w) { return {1.0, w.size.units, w.size.extra}; }

struct SubsetFit {
  Terms coef{};
  double sse = 0;
};

// Weighted least squares of seconds on the terms in `mask` (bit i: term i), weights 1 / seconds^2. Columns
// are scaled to a maximum of 1 so that a pivot says how independent they are; nullopt when they are not
// (a zero column, or one the samples cannot tell from another) or a coefficient is negative.
std::optional<SubsetFit> fit_subset(const std::vector<const WorkSample*>& ws, unsigned mask) {
  std::vector<int> cols;
  for (int i = 0; i < 3; ++i)
    if (mask & (1u << i)) cols.push_back(i);
  const std::size_t m = cols.size();
  Terms scale{};
  for (const WorkSample* w : ws)
    for (int i = 0; i < 3; ++i) scale[i] = std::max(scale[i], std::abs(terms(*w)[i]));
  for (int c : cols)
    if (!(scale[c] > 0)) return std::nullopt;
  // Normal equations A x = b, A = X^T W X.
  double a[3][4] = {};
  for (const WorkSample* w : ws) {
    const Terms t = terms(*w);
    const double wt = 1.0 / (w->seconds * w->seconds);
    for (std::size_t r = 0; r < m; ++r) {
      const double xr = t[cols[r]] / scale[cols[r]];
      for (std::size_t c = 0; c < m; ++c) a[r][c] += wt * xr * t[cols[c]] / scale[cols[c]];
      a[r][m] += wt * xr * w->seconds;
    }
  }
  const double norm = std::max({a[0][0], m > 1 ? a[1][1] : 0.0, m > 2 ? a[2][2] : 0.0});
  for (std::size_t p = 0; p < m; ++p) {  // Gauss-Jordan with partial pivoting
    std::size_t best = p;
    for (std::size_t r = p + 1; r < m; ++r)
      if (std::abs(a[r][p]) > std::abs(a[best][p])) best = r;
    if (!(std::abs(a[best][p]) > 1e-9 * norm)) return std::nullopt;
    std::swap(a[p], a[best]);
    for (std::size_t r = 0; r < m; ++r) {
      if (r == p) continue;
      const double f = a[r][p] / a[p][p];
      for (std::size_t c = p; c <= m; ++c) a[r][c] -= f * a[p][c];
    }
  }
  SubsetFit fit;
  for (std::size_t r = 0; r < m; ++r) {
    fit.coef[cols[r]] = a[r][m] / a[r][r] / scale[cols[r]];
    if (fit.coef[cols[r]] < 0) return std::nullopt;
  }
  for (const WorkSample* w : ws) {
    const Terms t = terms(*w);
    const double e = (fit.coef[0] * t[0] + fit.coef[1] * t[1] + fit.coef[2] * t[2] - w->seconds) / w->seconds;
    fit.sse += e * e;
  }
  return fit;
}

}  // namespace

std::map<std::string, WorkFit> fit_codec_work(const std::vector<WorkSample>& samples) {
  std::map<std::string, std::vector<const WorkSample*>> by_key;
  for (const WorkSample& w : samples) {
    if (!(w.seconds > 0) || !(w.size.units > 0))
      throw CalibrationError(
          fmt::format("codec work {}: time and size must be positive, got {} s at {}", w.key, w.seconds, w.size.units));
    by_key[w.key].push_back(&w);
  }
  std::map<std::string, WorkFit> fits;
  for (const auto& [key, ws] : by_key) {
    const auto [lo, hi] = std::minmax_element(
        ws.begin(), ws.end(), [](const WorkSample* a, const WorkSample* b) { return a->size.units < b->size.units; });
    if (!((*hi)->size.units > (*lo)->size.units))
      throw CalibrationError(fmt::format("codec work {}: needs samples at 2 sizes or more", key));
    std::optional<SubsetFit> best;
    for (unsigned mask : {1u, 2u, 4u, 3u, 5u, 6u, 7u})  // fewer terms first: a tie keeps the simpler fit
      if (auto f = fit_subset(ws, mask); f && (!best || f->sse < best->sse * (1 - 1e-9))) best = f;
    if (!best) throw CalibrationError(fmt::format("codec work {}: no fit with non-negative costs", key));
    fits[key] = {best->coef[0], best->coef[1], best->coef[2]};
  }
  return fits;
}

}  // namespace ddplab
