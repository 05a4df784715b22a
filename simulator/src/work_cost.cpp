#include "work_cost.hpp"

#include <algorithm>

namespace ddplab::sim {

double WorkModel::seconds(const LocalWork& w) const {
  if (auto it = fits.find(work_key(w)); it != fits.end()) return it->second.seconds(work_units(w));
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
