#include "ddplab/simulator/goodput.hpp"

#include "ddplab/core/error.hpp"
#include "ddplab/core/step_totals.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ddplab/simulator/compute_source.hpp"

namespace ddplab {
namespace {

std::string join_ids(const std::vector<std::int64_t>& ids) {
  std::string out;
  for (std::int64_t id : ids) out += fmt::format("{}#{}", out.empty() ? "" : ", ", id);
  return out;
}

// Why the fit could not be made, with what the store held and what would make it possible.
std::string missing_fit(const Scenario& sc, const StrategyConfig& st, const GoodputOptions& options,
                        const std::vector<BatchPoint>& points, const std::vector<std::int64_t>& missed,
                        const std::string& reason) {
  std::string held;
  for (const BatchPoint& p : points)
    held += fmt::format("{}#{} ({} x {} = {:g})", held.empty() ? "" : ", ", p.run, p.world_size, p.batch_per_rank,
                        p.global_batch);
  return fmt::format(
      "scenario \"{}\", strategy \"{}\": cannot fit the statistical efficiency to {:g}: {}. Runs that reached it{}: "
      "{}{}. "
      "Measure it at 3 or more global batches, e.g. `ddplab run SCENARIO --np 2 --batch-size B` for B = 8, 16, 32",
      sc.name, st.name, options.target, reason,
      options.fit_below > 0 ? fmt::format(" below global batch {:g}", options.fit_below) : "",
      held.empty() ? "none" : held, missed.empty() ? "" : fmt::format("; never reached it: {}", join_ids(missed)));
}

}  // namespace

double training_time(const SimPatternResult& r, double micro_steps) {
  const double warmup = static_cast<double>(r.warmup_steps);
  if (micro_steps <= warmup) return warmup > 0 ? r.warmup_s * micro_steps / warmup : 0.0;
  return r.warmup_s + (micro_steps - warmup) * r.step_s;
}

std::optional<double> measured_training_time(const Store& store, std::int64_t run, double target) {
  const std::optional<double> steps = steps_to_accuracy(store.evaluations(run), target);
  if (!steps) return std::nullopt;
  return training_time_through(step_totals(store.steps(run)), *steps);
}

GoodputPrediction predict_goodput(const Scenario& sc, const StrategyConfig& st, Store& store,
                                  const GoodputOptions& options) {
  if (sc.data.uneven == "join")
    throw InputError(fmt::format(
        "scenario \"{}\": data.uneven = \"join\" changes the global batch within an epoch as ranks run out; a "
        "time-to-accuracy prediction needs one global batch per world size (use \"pad\" or \"drop_last\")",
        sc.name));
  GoodputPrediction out;
  out.strategy = st.name;
  const std::vector<BatchPoint> all = measured_batch_points(store, sc, st, options.target, &out.missed);
  for (const BatchPoint& p : all)
    if (!(options.fit_below > 0) || p.global_batch < options.fit_below) out.points.push_back(p);
  try {
    out.fit = fit_noise_scale(out.points);
  } catch (const InputError& e) {
    throw InputError(missing_fit(sc, st, options, out.points, out.missed, e.what()));
  }
  out.compute_origin = compute_source(sc, st, store, options.sim.compute, options.sim.allow_oversubscribed).origin;

  std::set<std::int64_t> fitted;
  for (const BatchPoint& p : out.points) fitted.insert(p.run);
  for (const SweepPoint& sp : simulate_sweep(sc, st, options.worlds, store, options.sim)) {
    const SimPatternResult& r = sp.result;
    GoodputWorld w;
    w.world_size = sp.world_size;
    w.global_batch = static_cast<double>(r.batch_per_rank) * r.layout.workers() * st.accumulate_steps;
    w.updates = out.fit.updates(w.global_batch);
    w.micro_steps = w.updates * st.accumulate_steps;
    w.step_s = r.step_s;
    w.warmup_steps = r.warmup_steps;
    w.warmup_s = r.warmup_s;
    w.time_s = training_time(r, w.micro_steps);
    w.sim_run = sp.run_id;
    double sum = 0;
    for (const BatchPoint& p : all) {
      if (p.world_size != w.world_size || p.batch_per_rank != sc.train.batch_size) continue;
      if (fitted.count(p.run)) {
        w.in_fit.push_back(p.run);
      } else if (const auto t = measured_training_time(store, p.run, options.target)) {
        w.measured_runs.push_back(p.run);
        sum += *t;
      }
    }
    if (!w.measured_runs.empty()) w.measured_s = sum / static_cast<double>(w.measured_runs.size());
    out.worlds.push_back(std::move(w));
  }
  return out;
}

std::vector<WorldRanking> rank_by_world(const std::vector<GoodputPrediction>& predictions) {
  std::vector<WorldRanking> out;
  if (predictions.empty()) return out;
  for (std::size_t i = 0; i < predictions.front().worlds.size(); ++i) {
    WorldRanking r;
    r.world_size = predictions.front().worlds[i].world_size;
    for (const GoodputPrediction& p : predictions) {
      if (i >= p.worlds.size() || p.worlds[i].world_size != r.world_size)
        throw InternalError(
            fmt::format("rank_by_world: strategy \"{}\" was not predicted at world size {}", p.strategy, r.world_size));
      r.by_time.emplace_back(p.strategy, p.worlds[i].time_s);
    }
    std::stable_sort(r.by_time.begin(), r.by_time.end(),
                     [](const auto& a, const auto& b) { return a.second < b.second; });
    out.push_back(std::move(r));
  }
  return out;
}

std::vector<PredictionRow> prediction_rows(const Scenario& sc, const GoodputPrediction& p, double target) {
  nlohmann::json points = nlohmann::json::array();
  for (const BatchPoint& b : p.points)
    points.push_back({{"run", b.run},
                      {"world_size", b.world_size},
                      {"batch_per_rank", b.batch_per_rank},
                      {"global_batch", b.global_batch},
                      {"updates", b.updates}});
  const nlohmann::json fit = {{"model", "S(B) = S_min (1 + B_noise / B)"},
                              {"s_min", p.fit.s_min},
                              {"b_noise", p.fit.b_noise},
                              {"rms_rel_error", p.fit.rms_rel_error},
                              {"max_rel_error", p.fit.max_rel_error},
                              {"points", points},
                              {"missed", p.missed},
                              {"compute_origin", p.compute_origin}};
  std::vector<PredictionRow> rows;
  for (const GoodputWorld& w : p.worlds) {
    PredictionRow r;
    r.scenario = sc.name;
    r.strategy = p.strategy;
    r.target_accuracy = target;
    r.world_size = w.world_size;
    r.global_batch = w.global_batch;
    r.updates = w.updates;
    r.step_s = w.step_s;
    r.time_s = w.time_s;
    r.sim_run_id = w.sim_run;
    r.fit_json = fit.dump();
    r.measured_s = w.measured_s;
    r.measured_runs_json = nlohmann::json(w.measured_runs).dump();
    rows.push_back(std::move(r));
  }
  return rows;
}

}  // namespace ddplab
