#include "ddplab/simulator/statistical_efficiency.hpp"

#include <algorithm>
#include <cmath>
#include <set>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ddplab/core/error.hpp"
#include "ddplab/simulator/compute_source.hpp"
#include "ddplab/strategies/model_library.hpp"
#include "ddplab/strategies/strategy.hpp"

namespace ddplab {
namespace {

std::string describe(const std::vector<BatchPoint>& points) {
  std::string out;
  for (const BatchPoint& p : points)
    out += fmt::format("{}batch {:g}: {:.1f} updates", out.empty() ? "" : ", ", p.global_batch, p.updates);
  return out;
}

}  // namespace

NoiseScaleFit fit_noise_scale(const std::vector<BatchPoint>& points) {
  std::set<double> batches;
  for (const BatchPoint& p : points) {
    if (!(p.global_batch > 0) || !(p.updates > 0))
      throw InputError(fmt::format("a batch point needs a positive batch and updates, got batch {:g}, {:g} updates",
                                   p.global_batch, p.updates));
    batches.insert(p.global_batch);
  }
  if (batches.size() < 3)
    throw InputError(
        fmt::format("fitting S(B) = S_min (1 + B_noise / B) needs runs at 3 or more global batch "
                    "sizes, got {} ({})",
                    batches.size(), describe(points)));
  // Weighted least squares of y = a + b x, x = 1 / B, weights 1 / y^2 (relative residuals).
  double sw = 0, sx = 0, sy = 0, sxx = 0, sxy = 0;
  for (const BatchPoint& p : points) {
    const double w = 1.0 / (p.updates * p.updates), x = 1.0 / p.global_batch, y = p.updates;
    sw += w, sx += w * x, sy += w * y, sxx += w * x * x, sxy += w * x * y;
  }
  const double b = (sw * sxy - sx * sy) / (sw * sxx - sx * sx), a = (sy - b * sx) / sw;
  if (!(a > 0) || b < 0)
    throw InputError(
        fmt::format("the runs do not follow S(B) = S_min (1 + B_noise / B): the fit gives S_min = {:.3g} and S_min "
                    "B_noise = {:.3g} "
                    "({}); updates should fall as the batch grows, towards a positive floor",
                    a, b, describe(points)));
  NoiseScaleFit f;
  f.s_min = a;
  f.b_noise = b / a;
  f.points = points.size();
  double sq = 0;
  for (const BatchPoint& p : points) {
    const double rel = std::abs(f.updates(p.global_batch) - p.updates) / p.updates;
    sq += rel * rel;
    f.max_rel_error = std::max(f.max_rel_error, rel);
  }
  f.rms_rel_error = std::sqrt(sq / static_cast<double>(points.size()));
  return f;
}

std::optional<double> steps_to_accuracy(const std::vector<Evaluation>& evaluations, double target) {
  const Evaluation* before = nullptr;
  for (const Evaluation& e : evaluations) {
    if (!std::isfinite(e.test_accuracy)) continue;
    if (e.test_accuracy >= target) {
      if (!before || e.test_accuracy == before->test_accuracy) return static_cast<double>(e.step);
      const double share = (target - before->test_accuracy) / (e.test_accuracy - before->test_accuracy);
      return static_cast<double>(before->step) + share * static_cast<double>(e.step - before->step);
    }
    before = &e;
  }
  return std::nullopt;
}

std::vector<BatchPoint> measured_batch_points(const Store& store, const Scenario& scenario,
                                              const StrategyConfig& strategy, double target,
                                              std::vector<std::int64_t>* missed) {
  std::vector<BatchPoint> points;
  for (const RunRow& run : store.runs()) {
    if (run.info.scenario != scenario.name || run.info.strategy != strategy.name ||
        run.info.source != RunSource::Measured || run.status != RunStatus::Completed)
      continue;
    const Scenario ran = measured_scenario(run);  // its batch, world and strategy as it ran
    if (ran.model.to_json() != scenario.model.to_json()) continue;
    const StrategyConfig& st = ran.strategies.front();
    const Strategy s(st, model_spec_for(ran.model), {run.info.world_size, 1, ran.train.batch_size, ran.train.seed});
    const std::optional<double> steps = steps_to_accuracy(store.evaluations(run.id), target);
    if (!steps) {
      if (missed) missed->push_back(run.id);
      continue;
    }
    points.push_back({static_cast<double>(ran.train.batch_size) * s.workers() * st.accumulate_steps,
                      *steps / st.accumulate_steps, run.id, run.info.world_size, ran.train.batch_size});
  }
  return points;
}

}  // namespace ddplab
