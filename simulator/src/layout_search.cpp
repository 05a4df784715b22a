// See layout_search.hpp.
#include "ddplab/simulator/layout_search.hpp"

#include <algorithm>
#include <chrono>
#include <stdexcept>

#include "ddplab/strategies/layout.hpp"
#include "ddplab/strategies/pipeline.hpp"
#include "ddplab/strategies/strategy.hpp"

namespace ddplab {
namespace {

std::vector<ParallelConfig> layouts(const Scenario& sc, int world) {
  std::vector<ParallelConfig> out;
  const int batch = sc.train.batch_size;
  const PipelineInfo* schedule = find_pipeline_schedule(sc.parallel.pipeline_schedule);
  for (int tp = 1; tp <= std::min(world, sc.cluster.devices_per_node); ++tp) {
    if (sc.cluster.devices_per_node % tp != 0 || world % tp != 0) continue;
    for (int pp = 1; pp <= world / tp; ++pp) {
      if ((world / tp) % pp != 0) continue;
      ParallelConfig p = sc.parallel;
      p.tp = tp, p.pp = pp, p.dp = world / (tp * pp);
      if (pp == 1) {
        p.microbatches = 1, p.pipeline_schedule = "1f1b", p.virtual_stages = 1;
        out.push_back(p);
        continue;
      }
      for (int b = 1; b <= batch; b *= 2) {
        if (batch % b != 0 || batch / b < pp) continue;
        p.microbatches = batch / b;
        if (schedule && schedule->interleaved && p.microbatches % pp != 0) continue;
        out.push_back(p);
      }
    }
  }
  return out;
}

}  // namespace

LayoutSearch search_layouts(const Scenario& scenario, const StrategyConfig& strategy, int world, const SweepSetup& setup,
                            const std::function<void(int, int)>& progress) {
  if (world < 1) throw std::invalid_argument("--search: the world size must be >= 1");
  const auto t0 = std::chrono::steady_clock::now();
  LayoutSearch out;
  const auto all = layouts(scenario, world);
  for (std::size_t i = 0; i < all.size(); ++i) {
    LayoutCandidate c;
    c.parallel = all[i];
    Scenario sc = scenario;
    sc.parallel = all[i];
    SweepSetup own = setup;  // pure DP has no replica to fold: it runs as auto has it
    if (own.options.mode == "folded" && !sc.parallel.model_parallel()) own.options.mode = "auto";
    try {
      validate_parallel(sc);
      c.mode = simulation_mode(own.options, world, sc.parallel.model_parallel());
      c.point = simulate_point(sc, strategy, world, own);
    } catch (const ScenarioError& e) {  // the model does not split this way, or the strategy refuses it
      c.refused = e.what();
    } catch (const std::invalid_argument& e) {
      c.refused = e.what();
    }
    out.candidates.push_back(std::move(c));
    if (progress) progress(static_cast<int>(i) + 1, static_cast<int>(all.size()));
  }
  std::stable_sort(out.candidates.begin(), out.candidates.end(), [](const LayoutCandidate& a, const LayoutCandidate& b) {
    if (a.point.has_value() != b.point.has_value()) return a.point.has_value();
    return a.point && a.point->result.samples_per_s > b.point->result.samples_per_s;
  });
  out.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace ddplab
