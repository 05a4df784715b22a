// The folded replay of model-parallel layouts (mode "folded", plan_replay.hpp): only DP replica 0's ranks
// run, their DP collectives' messages from the other replicas mirrored. Where no two flows of other replicas
// share a link with a replayed rank's (a star of one device per host), it is the exact replay to rounding;
// on DGX nodes it is checked against the exact replay for every layout of a world, ranking included.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include <fmt/format.h>

#include "ddplab/simulator/layout_search.hpp"
#include "ddplab/simulator/simulator.hpp"
#include "layout_test_util.hpp"
#include "sim_test_util.hpp"

namespace ddplab {
namespace {

using test::mlp_layout;

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
    const Scenario sc = mlp_layout(c.tp, c.pp, c.micro, c.schedule);
    const int world = c.tp * c.pp * c.dp;
    const StrategyConfig st = test::strategy_config(c.policy, c.sched);
    const auto exact = simulate_steps(sc, st, world, 0.02, 0.001, {3}, test::with_mode("exact"), 1).front();
    const auto folded = simulate_steps(sc, st, world, 0.02, 0.001, {3}, test::with_mode("folded"), 1).front();
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
  Scenario sc = mlp_layout(1, 2, 2, "gpipe");
  sc.cluster.link_bandwidth = 1e8;  // the DP sync dominates
  SimOptions tcp;
  tcp.network_model = "LV08";
  tcp.crosstraffic = true;
  const StrategyConfig st = test::strategy_config("flat", "ring");
  const auto exact = simulate_steps(sc, st, 8, 0.001, 0.0, {3}, test::with_mode("exact", tcp), 1).front();
  const auto folded = simulate_steps(sc, st, 8, 0.001, 0.0, {3}, test::with_mode("folded", tcp), 1).front();
  EXPECT_NEAR(folded.step_s, exact.step_s, 1e-9 * exact.step_s);
  EXPECT_GT(exact.comm_s, 0.5 * exact.step_s) << "the DP ring is not what the step waits for";
}

TEST(FoldedReplay, RanksEveryLayoutAsTheExactReplayOnDgxNodes) {
  test::check_dgx_ranking("folded", 0.02,
                          [](const ParallelConfig& p) { return p.model_parallel() ? "folded" : "exact"; });
}

TEST(FoldedReplay, IsForModelParallelLayoutsOnly) {
  const Scenario sc = test::small_mlp_scenario("pure-dp");
  try {
    (void)simulate_steps(sc, test::strategy_config("overlap", "ring"), 4, 0.01, 0.0, {3}, test::with_mode("folded"), 1);
    FAIL() << "folded accepted a pure data-parallel world";
  } catch (const std::exception& e) {
    EXPECT_NE(std::string(e.what()).find("folded mode replays one replica of a model-parallel layout"),
              std::string::npos)
        << e.what();
  }
  // auto never folds: it samples a layout above kExactMaxLayoutWorld ranks (test_probed_replay.cpp).
  EXPECT_EQ(simulation_mode(SimOptions{}, kExactMaxLayoutWorld + 1, false), "exact");
}

}  // namespace
}  // namespace ddplab
