// See layout_search.hpp.
#include "ddplab/simulator/layout_search.hpp"

#include <algorithm>
#include <chrono>
#include <exception>
#include <filesystem>
#include <mutex>
#include <thread>
#include <stdexcept>
#include <string>
#include <system_error>

#include <stdlib.h>

#include "ddplab/core/error.hpp"
#include "ddplab/strategies/layout.hpp"
#include "ddplab/strategies/pipeline.hpp"
#include "ddplab/strategies/strategy.hpp"

namespace ddplab {
namespace {

// A temporary directory, removed with its files at the end of the scope; none unless `make`.
struct MemoDir {
  explicit MemoDir(bool make) {
    if (!make) return;
    std::string tmpl = (std::filesystem::temp_directory_path() / "ddplab-probes-XXXXXX").string();
    if (::mkdtemp(tmpl.data())) path = tmpl;  // without one, every layout probes its own
  }
  ~MemoDir() {
    std::error_code ec;
    if (!path.empty()) std::filesystem::remove_all(path, ec);
  }
  MemoDir(const MemoDir&) = delete;
  MemoDir& operator=(const MemoDir&) = delete;
  std::string path;
};

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

LayoutSearch search_layouts(const Scenario& scenario, const StrategyConfig& strategy, int world,
                            const SweepSetup& setup, const std::function<void(int, int)>& progress, bool zero_stages) {
  if (world < 1) throw InputError("--search: the world size must be >= 1");
  const auto t0 = std::chrono::steady_clock::now();
  LayoutSearch out;
  // Every layout, under each strategy variant (layout-major: a layout's variants share their probes).
  const std::vector<StrategyConfig> variants = zero_stages ? zero_stage_variants(strategy) : std::vector{strategy};
  std::vector<std::pair<ParallelConfig, const StrategyConfig*>> all;
  for (const ParallelConfig& p : layouts(scenario, world))
    for (const StrategyConfig& v : variants) all.emplace_back(p, &v);
  for (const StrategyConfig& v : variants) out.policies.push_back(v.policy);
  out.candidates.resize(all.size());
  // Probed layouts keep their probes' outcomes here: layouts of one TP x PP (microbatches apart) have the
  // same DP collectives, probed once.
  const MemoDir memo(setup.options.probe_memo.empty());
  auto simulate = [&](std::size_t i) {
    LayoutCandidate& c = out.candidates[i];
    c.parallel = all[i].first;
    c.strategy = *all[i].second;
    Scenario sc = scenario;
    sc.parallel = all[i].first;
    sc.strategies = {c.strategy};  // the variant, which validate_parallel checks against the layout
    SweepSetup own = setup;        // pure DP has no replica to fold: it runs as auto has it
    if (own.options.mode == "folded" && !sc.parallel.model_parallel()) own.options.mode = "auto";
    own.options = ranking_options(own.options, world);
    if (own.options.probe_memo.empty()) own.options.probe_memo = memo.path;
    try {
      validate_parallel(sc);
      c.mode = simulation_mode(own.options, world, sc.parallel.model_parallel());
      c.point = simulate_point(sc, c.strategy, world, own);
    } catch (const InputError& e) {  // the model does not split this way, or the strategy refuses it
      c.refused = e.what();
    }
  };
  // Each layout is simulated in a child process of its own (simulate_point): one thread per core waits for
  // one child each. Any other failure (a child that crashed) stops the search.
  // The first layout of each TP x PP first, so that two threads seldom probe the same collectives at once.
  std::vector<std::size_t> order, later;
  for (std::size_t i = 0; i < all.size(); ++i)
    (i > 0 && all[i].first.tp == all[i - 1].first.tp && all[i].first.pp == all[i - 1].first.pp ? later : order)
        .push_back(i);
  order.insert(order.end(), later.begin(), later.end());
  std::mutex mu;
  std::size_t next = 0, done = 0;
  std::exception_ptr failed;
  auto worker = [&] {
    for (;;) {
      std::size_t i = 0;
      {
        std::lock_guard<std::mutex> lock(mu);
        if (next == all.size() || failed) return;
        i = order[next++];
      }
      try {
        simulate(i);
      } catch (...) {
        std::lock_guard<std::mutex> lock(mu);
        if (!failed) failed = std::current_exception();
        return;
      }
      std::lock_guard<std::mutex> lock(mu);
      if (progress) progress(static_cast<int>(++done), static_cast<int>(all.size()));
    }
  };
  const unsigned jobs =
      std::clamp(std::thread::hardware_concurrency(), 1u, static_cast<unsigned>(std::max<std::size_t>(all.size(), 1)));
  std::vector<std::thread> threads;
  for (unsigned t = 1; t < jobs; ++t) threads.emplace_back(worker);
  worker();
  for (auto& t : threads) t.join();
  if (failed) std::rethrow_exception(failed);
  std::stable_sort(out.candidates.begin(), out.candidates.end(),
                   [](const LayoutCandidate& a, const LayoutCandidate& b) {
                     if (a.point.has_value() != b.point.has_value()) return a.point.has_value();
                     return a.point && a.point->result.samples_per_s > b.point->result.samples_per_s;
                   });
  out.wall_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  return out;
}

}  // namespace ddplab
