#include "ddplab/simulator/failures.hpp"

#include "ddplab/simulator/goodput.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <random>
#include <vector>

namespace ddplab {

double young_interval(const FailureModel& f) { return std::sqrt(2 * f.checkpoint_s * f.mtbf_s()); }

double daly_interval(const FailureModel& f) {
  const double c = f.checkpoint_s, m = f.mtbf_s();
  if (c >= 2 * m) return m;
  const double x = c / (2 * m);
  return std::sqrt(2 * c * m) * (1 + std::sqrt(x) / 3 + x / 9) - c;
}

double expected_wall_time(double work_s, double interval_s, const FailureModel& f) {
  const double m = f.mtbf_s();
  // One segment of `work` and its checkpoint, failures and restarts included (expm1 keeps the small exponents
  // of rare failures exact). Whole intervals, then what is left: Daly's T / tau counts the last as a whole one.
  auto segment = [&](double work) {
    return std::isfinite(m) ? m * std::exp(f.restart_s / m) * std::expm1((work + f.checkpoint_s) / m)
                            : work + f.checkpoint_s;
  };
  const double whole = std::floor(work_s / interval_s), left = work_s - whole * interval_s;
  return whole * segment(interval_s) + (left > 0 ? segment(left) : 0);
}

double sampled_wall_time(double work_s, double interval_s, const FailureModel& f, int trials, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::exponential_distribution<double> next_failure(1.0 / f.mtbf_s());
  double total = 0;
  for (int t = 0; t < trials; ++t) {
    double wall = 0;
    for (double done = 0; done < work_s;) {
      const double segment = std::min(interval_s, work_s - done) + f.checkpoint_s;
      // Until the segment runs failure-free: a failure loses it, then a restart (itself exposed) comes first.
      for (bool restarting = false;;) {
        const double need = segment + (restarting ? f.restart_s : 0);
        const double fail = next_failure(rng);
        if (fail >= need) {
          wall += need;
          break;
        }
        wall += fail;
        restarting = true;
      }
      done += std::min(interval_s, work_s - done);
    }
    total += wall;
  }
  return total / trials;
}

std::optional<MeasuredCheckpoint> measured_checkpoint(const Store& store, const std::string& scenario,
                                                      const std::string& strategy) {
  std::vector<double> writes;
  MeasuredCheckpoint out;
  for (const RunRow& r : store.runs()) {
    if (r.info.source != RunSource::Measured || r.info.scenario != scenario || r.info.strategy != strategy) continue;
    for (const CheckpointRow& c : store.checkpoints(r.id)) {
      writes.push_back(c.write_s);
      out.bytes = c.bytes;
    }
  }
  if (writes.empty()) return std::nullopt;
  std::sort(writes.begin(), writes.end());
  const std::size_t n = writes.size();
  out.write_s = n % 2 ? writes[n / 2] : (writes[n / 2 - 1] + writes[n / 2]) / 2;
  out.checkpoints = static_cast<std::int64_t>(n);
  return out;
}

std::vector<FailureWorld> with_failures(const GoodputPrediction& p, const FailureOptions& o, int devices_per_node) {
  std::vector<FailureWorld> out;
  for (const GoodputWorld& w : p.worlds) {
    FailureWorld f;
    f.world_size = w.world_size;
    f.nodes = (w.world_size + std::max(1, devices_per_node) - 1) / std::max(1, devices_per_node);
    const FailureModel m{o.node_mtbf_s, f.nodes, o.checkpoint_s, o.restart_s};
    f.mtbf_s = m.mtbf_s();
    f.young_s = young_interval(m);
    f.interval_s = o.interval_s > 0 ? o.interval_s : daly_interval(m);
    f.work_s = w.time_s;
    f.expected_s = expected_wall_time(w.time_s, f.interval_s, m);
    out.push_back(f);
  }
  return out;
}

}  // namespace ddplab
