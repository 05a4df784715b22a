// Shared by the folded and probed replay tests: a small MLP cut into a layout, and every layout of 32 ranks
// on 4 DGX H100 nodes (8 GPUs and 8 NICs each: TP inside a node, PP and DP across) searched in a fast mode
// and in "exact".
#pragma once
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <string>

#include "ddplab/simulator/layout_search.hpp"
#include "sim_test_util.hpp"

namespace ddplab::test {

inline SimOptions with_mode(const std::string& m, SimOptions o = alpha_beta()) {
  o.mode = m;
  return o;
}

// A 784-256-256-128-10 MLP in TP x PP (DP: what the world leaves) under a pipeline schedule.
inline Scenario mlp_layout(int tp, int pp, int microbatches, const std::string& schedule) {
  Scenario sc = small_mlp_scenario("layout");
  sc.model.layers = {784, 256, 256, 128, 10};
  sc.parallel.tp = tp;
  sc.parallel.pp = pp;
  sc.parallel.microbatches = microbatches;
  sc.parallel.pipeline_schedule = schedule;
  return sc;
}

// Expects the same ranking as the exact search and each step time within `tolerance`, each candidate
// simulated in expected_mode(its layout); returns the largest error.
inline double check_dgx_ranking(const std::string& mode, double tolerance,
                                const std::function<std::string(const ParallelConfig&)>& expected_mode) {
  Scenario sc = small_mlp_scenario("dgx-" + mode);
  sc.model.layers = {784, 2048, 2048, 2048, 1024, 10};
  sc.train.batch_size = 16;
  apply_cluster_preset(sc.cluster, "dgx-h100");
  sc.cluster.compute_s = 0.004;
  sc.parallel.pipeline_schedule = "1f1b";
  const StrategyConfig st = strategy_config("overlap", "ring");
  auto search = [&](const std::string& m) {
    SweepSetup setup;
    setup.options.mode = m;
    setup.compute.compute_s = 0.004;
    return search_layouts(sc, st, 32, setup);
  };
  const LayoutSearch exact = search("exact"), fast = search(mode);
  EXPECT_EQ(exact.candidates.size(), fast.candidates.size());
  int compared = 0;
  double worst = 0;
  for (std::size_t i = 0; i < std::min(exact.candidates.size(), fast.candidates.size()); ++i) {
    const LayoutCandidate &e = exact.candidates[i], &f = fast.candidates[i];
    // Same order: the fastest first in both.
    EXPECT_EQ(e.parallel.tp, f.parallel.tp) << "rank " << i;
    EXPECT_EQ(e.parallel.pp, f.parallel.pp) << "rank " << i;
    EXPECT_EQ(e.parallel.microbatches, f.parallel.microbatches) << "rank " << i;
    if (!e.point || !f.point) continue;
    ++compared;
    const double err = std::abs(f.point->result.step_s / e.point->result.step_s - 1);
    worst = std::max(worst, err);
    EXPECT_LT(err, tolerance) << "TP " << e.parallel.tp << " x PP " << e.parallel.pp << " x DP " << *e.parallel.dp;
    EXPECT_EQ(f.mode, expected_mode(f.parallel));
  }
  EXPECT_GE(compared, 10);
  std::printf("%s against exact, %d layouts of 32 ranks: largest step time error %.3f%%\n", mode.c_str(), compared,
              100 * worst);
  return worst;
}

}  // namespace ddplab::test
