// The folded replay of model-parallel layouts (mode "folded", plan_replay.hpp): only DP replica 0's ranks
// run, their DP collectives' messages from the other replicas mirrored. Where no two flows of other replicas
// share a link with a replayed rank's (a star of one device per host), it is the exact replay to rounding;
// on a DGX fat-tree it is checked against the exact replay for every layout of a world, ranking included.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "ddplab/simulator/layout_search.hpp"
#include "ddplab/simulator/simulator.hpp"
#include "sim_test_util.hpp"

namespace ddplab {
namespace {

SimOptions mode(const std::string& m, SimOptions o = test::alpha_beta()) {
  o.mode = m;
  return o;
}

Scenario layout(int tp, int pp, int microbatches, const std::string& schedule) {
  Scenario sc = test::small_mlp_scenario("folded");
  sc.model.layers = {784, 256, 256, 128, 10};
  sc.parallel.tp = tp;
  sc.parallel.pp = pp;
  sc.parallel.microbatches = microbatches;
  sc.parallel.pipeline_schedule = schedule;
  return sc;
}

TEST(FoldedReplay, IsTheExactReplayWhereNoOtherReplicasFlowSharesALink) {
  struct Case {
    int tp, pp, dp, micro;
    const char* schedule;
    const char* policy;
    const char* sched;
    bool mirrored;  // lockstep-symmetric: no rank of another replica runs; else they replay it (shadows)
  };
  const Case cases[] = {{1, 2, 4, 4, "1f1b", "overlap", "ring", true},
                        {1, 2, 4, 4, "gpipe", "zero1", "ring", true},
                        {2, 1, 4, 1, "1f1b", "bucketed", "halving_doubling", true},
                        {2, 2, 4, 4, "1f1b", "overlap", "ring", true},
                        {2, 2, 4, 4, "1f1b", "overlap", "double_binary_tree", false},
                        {1, 2, 3, 2, "gpipe", "bucketed", "recursive_doubling", false}};
  for (const Case& c : cases) {
    const Scenario sc = layout(c.tp, c.pp, c.micro, c.schedule);
    const int world = c.tp * c.pp * c.dp;
    const StrategyConfig st = test::strategy_config(c.policy, c.sched);
    const auto exact = simulate_steps(sc, st, world, 0.02, 0.001, {3}, mode("exact"), 1).front();
    const auto folded = simulate_steps(sc, st, world, 0.02, 0.001, {3}, mode("folded"), 1).front();
    const std::string what = fmt::format("TP {} x PP {} x DP {}, {} on {}", c.tp, c.pp, c.dp, c.policy, c.sched);
    // To 1e-6: a ring's chunks differ by an element between ranks, which the other replicas' copies leave out.
    EXPECT_NEAR(folded.step_s, exact.step_s, 1e-6 * exact.step_s) << what;
    ASSERT_EQ(folded.ranks.size(), exact.ranks.size()) << what;
    for (std::size_t r = 0; r < exact.ranks.size(); ++r) {
      // Replica 0 (dp 0 in Megatron's placement: rank = tp + TP x (dp + DP x pp)) runs as in the exact replay;
      // the others report its times, which are theirs where the schedule gives every rank the same part.
      const bool replica0 = (static_cast<int>(r) / c.tp) % c.dp == 0;
      if (!replica0 && !c.mirrored) continue;
      EXPECT_NEAR(folded.ranks[r].step_s, exact.ranks[r].step_s, 1e-6 * exact.step_s) << what << ", rank " << r;
      EXPECT_NEAR(folded.ranks[r].exposed_comm_s, exact.ranks[r].exposed_comm_s, 1e-6 * exact.step_s) << what;
      if (replica0) {
        EXPECT_EQ(folded.bytes_sent[r], exact.bytes_sent[r]) << what << ", rank " << r;
      } else {
        EXPECT_NEAR(folded.bytes_sent[r], exact.bytes_sent[r], 1e-4 * exact.bytes_sent[r]) << what << ", rank " << r;
      }
    }
    // Only replica 0's messages are counted: with a symmetric schedule, a DP-th of the exact mode's.
    if (c.mirrored) {
      EXPECT_EQ(folded.comms * c.dp, exact.comms) << what;
    }
    EXPECT_LT(folded.comms, exact.comms) << what;
  }
}

// With TCP's acks on the reverse path (LV08, crosstraffic), a received message loads the receiver's uplink,
// which its own send uses: without the mirrored receives the replayed ranks' ring steps would be faster.
TEST(FoldedReplay, MirroredReceivesLoadTheReplayedRanksLinks) {
  Scenario sc = layout(1, 2, 2, "gpipe");
  sc.cluster.link_bandwidth = 1e8;  // the DP sync dominates
  SimOptions tcp;
  tcp.network_model = "LV08";
  tcp.crosstraffic = true;
  const StrategyConfig st = test::strategy_config("flat", "ring");
  const auto exact = simulate_steps(sc, st, 8, 0.001, 0.0, {3}, mode("exact", tcp), 1).front();
  const auto folded = simulate_steps(sc, st, 8, 0.001, 0.0, {3}, mode("folded", tcp), 1).front();
  EXPECT_NEAR(folded.step_s, exact.step_s, 1e-9 * exact.step_s);
  EXPECT_GT(exact.comm_s, 0.5 * exact.step_s) << "the DP ring is not what the step waits for";
}

TEST(FoldedReplay, RanksEveryLayoutAsTheExactReplayOnADgxFatTree) {
  // 32 ranks of 4 DGX H100 nodes (8 GPUs and 8 NICs each): TP inside a node, PP and DP across.
  Scenario sc = test::small_mlp_scenario("folded-dgx");
  sc.model.layers = {784, 2048, 2048, 2048, 1024, 10};
  sc.train.batch_size = 16;
  apply_cluster_preset(sc.cluster, "dgx-h100");
  sc.cluster.compute_s = 0.004;
  sc.parallel.pipeline_schedule = "1f1b";
  const StrategyConfig st = test::strategy_config("overlap", "ring");
  auto search = [&](const std::string& m) {
    SweepSetup setup;
    setup.options.mode = m;
    setup.compute.compute_s = 0.004;
    return search_layouts(sc, st, 32, setup);
  };
  const LayoutSearch exact = search("exact"), folded = search("folded");
  ASSERT_EQ(exact.candidates.size(), folded.candidates.size());
  int compared = 0;
  double worst = 0;
  for (std::size_t i = 0; i < exact.candidates.size(); ++i) {
    const LayoutCandidate &e = exact.candidates[i], &f = folded.candidates[i];
    // Same order: the fastest first in both.
    ASSERT_EQ(e.parallel.tp, f.parallel.tp) << "rank " << i;
    ASSERT_EQ(e.parallel.pp, f.parallel.pp) << "rank " << i;
    ASSERT_EQ(e.parallel.microbatches, f.parallel.microbatches) << "rank " << i;
    if (!e.point) continue;
    ++compared;
    const double err = std::abs(f.point->result.step_s / e.point->result.step_s - 1);
    worst = std::max(worst, err);
    EXPECT_LT(err, 0.02) << "TP " << e.parallel.tp << " x PP " << e.parallel.pp << " x DP " << *e.parallel.dp;
    EXPECT_EQ(f.mode, e.parallel.model_parallel() ? "folded" : "exact");
  }
  EXPECT_GE(compared, 10);
  std::printf("folded against exact, %d layouts of 32 ranks: largest step time error %.3f%%\n", compared, 100 * worst);
}

TEST(FoldedReplay, IsForModelParallelLayoutsOnly) {
  const Scenario sc = test::small_mlp_scenario("pure-dp");
  try {
    (void)simulate_steps(sc, test::strategy_config("overlap", "ring"), 4, 0.01, 0.0, {3}, mode("folded"), 1);
    FAIL() << "folded accepted a pure data-parallel world";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("folded mode replays one replica of a model-parallel layout"), std::string::npos)
        << e.what();
  }
  // auto folds a layout above kExactMaxLayoutWorld ranks and replays it rank by rank up to it.
  EXPECT_EQ(simulation_mode(SimOptions{}, kExactMaxLayoutWorld, true), "exact");
  EXPECT_EQ(simulation_mode(SimOptions{}, kExactMaxLayoutWorld + 1, true), "folded");
  EXPECT_EQ(simulation_mode(SimOptions{}, kExactMaxLayoutWorld + 1, false), "exact");
}

}  // namespace
}  // namespace ddplab
