// simulate --search: every layout of a world size, simulated and ranked, refusals kept with their reason.
#include <gtest/gtest.h>

#include <iterator>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include "ddplab/core/store.hpp"
#include "ddplab/simulator/layout_search.hpp"
#include "ddplab/strategies/strategy.hpp"
#include "sim_test_util.hpp"
#include "temp_dir.hpp"

namespace ddplab {
namespace {

Scenario mlp_scenario() {
  Scenario sc = test::small_mlp_scenario("search");
  sc.model.layers = {784, 64, 64, 64, 10};  // 4 layers: column, row, column, row under TP
  sc.train.batch_size = 8;
  sc.cluster.devices_per_node = 4;
  sc.cluster.compute_s = 0.01;
  sc.cluster.optimizer_s = 0.0;
  sc.strategies = {test::strategy_config("overlap", "ring")};
  return sc;
}

TEST(LayoutSearch, EveryLayoutOfTheWorldRankedBySamplesPerSecond) {
  const test::TempDir tmp("ddplab-search");
  Store store(tmp.file("r.db"));
  const Scenario sc = mlp_scenario();
  const SweepSetup setup = sweep_setup(sc, sc.strategies[0], store, test::alpha_beta());
  const LayoutSearch s = search_layouts(sc, sc.strategies[0], 4, setup);
  // TP 1, 2, 4 (inside a node of 4); PP dividing the rest; M = 8 / b >= pp for b = 1, 2, 4, 8: TP 1 x PP 1,
  // TP 1 x PP 2 (M 8, 4, 2), TP 1 x PP 4 (M 8, 4), TP 2 x PP 1, TP 2 x PP 2 (M 8, 4, 2), TP 4 x PP 1.
  ASSERT_EQ(s.candidates.size(), 11u);
  std::set<std::tuple<int, int, int>> seen;
  for (std::size_t i = 0; i < s.candidates.size(); ++i) {
    const LayoutCandidate& c = s.candidates[i];
    ASSERT_TRUE(c.point) << c.refused;
    EXPECT_EQ(c.parallel.tp * c.parallel.pp * *c.parallel.dp, 4);
    EXPECT_TRUE(seen.insert({c.parallel.tp, c.parallel.pp, c.parallel.microbatches}).second) << "a layout twice";
    if (i > 0) {
      EXPECT_LE(c.point->result.samples_per_s, s.candidates[i - 1].point->result.samples_per_s);
    }
  }
  EXPECT_TRUE(seen.count({2, 2, 4}) && seen.count({1, 4, 8}) && seen.count({4, 1, 1}));
}

TEST(LayoutSearch, ALayoutTheModelDoesNotTakeIsRefusedWithItsReason) {
  const test::TempDir tmp("ddplab-search");
  Store store(tmp.file("r.db"));
  Scenario sc = mlp_scenario();
  sc.model.layers = {784, 66, 10};  // 66 outputs do not split 4 ways; 2 layers do not make 4 stages
  const SweepSetup setup = sweep_setup(sc, sc.strategies[0], store, test::alpha_beta());
  const LayoutSearch s = search_layouts(sc, sc.strategies[0], 4, setup);
  int refused = 0;
  for (const LayoutCandidate& c : s.candidates) {
    if (c.point) {
      EXPECT_EQ(refused, 0) << "the refused come last";
      continue;
    }
    ++refused;
    EXPECT_TRUE(c.refused.find("parallel.tp = 4") != std::string::npos ||
                c.refused.find("parallel.pp = 4") != std::string::npos)
        << c.refused;
  }
  EXPECT_EQ(refused, 3) << "TP 4, and PP 4 at M 8 and 4";
}

// The ZeRO stages come from the policy registry: each policy with a stage other than the strategy's own,
// by stage, for a policy that syncs every step; none for a parameter server or one with a timing.
TEST(LayoutSearch, ZeroStageVariantsFollowThePolicyRegistry) {
  for (const PolicyInfo& p : policies()) {
    const StrategyConfig given = test::strategy_config(p.name, "ring");
    const std::vector<StrategyConfig> v = zero_stage_variants(given);
    ASSERT_FALSE(v.empty());
    EXPECT_EQ(v.front().policy, p.name);
    std::vector<std::string> expected;
    if (p.shards != Shards::Servers && !p.timing)
      for (int stage = 1; stage <= 3; ++stage)
        for (const PolicyInfo& q : policies())
          if (q.zero == stage && q.zero != p.zero) expected.push_back(q.name);
    ASSERT_EQ(v.size(), expected.size() + 1) << p.name;
    for (std::size_t i = 0; i < expected.size(); ++i) {
      EXPECT_EQ(v[i + 1].policy, expected[i]) << p.name;
      EXPECT_EQ(v[i + 1].schedule, given.schedule);
    }
  }
}

// With zero_stages every layout runs under each variant, but ZeRO-3 under a split model, which it refuses
// (validate_parallel); a higher stage needs less memory once DP > 1.
TEST(LayoutSearch, ZeroStagesShrinkTheMemoryOfEveryLayoutWithDataParallelism) {
  const test::TempDir tmp("ddplab-search");
  Store store(tmp.file("r.db"));
  Scenario sc = mlp_scenario();
  // Several buckets: ZeRO-3 holds whole only those its passes use at once (one bucket would be the model).
  sc.strategies[0].bucket_cap = 8000, sc.strategies[0].first_bucket_cap = 2000;  // a bucket per layer
  const SweepSetup setup = sweep_setup(sc, sc.strategies[0], store, test::alpha_beta());
  const auto variants = zero_stage_variants(sc.strategies[0]);
  ASSERT_GE(variants.size(), 2u);
  const LayoutSearch s = search_layouts(sc, sc.strategies[0], 4, setup, {}, true);
  ASSERT_EQ(s.candidates.size(), 11u * variants.size());
  std::map<std::tuple<int, int, int>, std::map<int, double>> memory;  // layout -> ZeRO stage -> bytes
  int zero3_refused = 0;
  for (const LayoutCandidate& c : s.candidates) {
    const int stage = find_policy(c.strategy.policy)->zero;
    if (stage >= 3 && c.parallel.tp * c.parallel.pp > 1) {
      EXPECT_FALSE(c.point);
      EXPECT_NE(c.refused.find("ZeRO-3 gathers parameter units around whole-batch passes"), std::string::npos)
          << c.refused;
      ++zero3_refused;
      continue;
    }
    ASSERT_TRUE(c.point) << c.refused;
    memory[{c.parallel.tp, c.parallel.pp, c.parallel.microbatches}][stage] = c.point->memory.memory.total();
  }
  EXPECT_EQ(zero3_refused, 10) << "every layout but pure DP";
  int shrunk = 0;
  for (const auto& [layout, by_stage] : memory) {
    const bool split = std::get<0>(layout) * std::get<1>(layout) > 1;
    ASSERT_EQ(by_stage.size(), variants.size() - (split ? 1 : 0));
    const int dp = 4 / (std::get<0>(layout) * std::get<1>(layout));
    for (auto it = std::next(by_stage.begin()); it != by_stage.end(); ++it) {
      if (dp > 1) {
        EXPECT_LT(it->second, std::prev(it)->second) << "stage " << it->first;
        ++shrunk;
      } else {
        EXPECT_EQ(it->second, std::prev(it)->second) << "one replica: nothing to shard";
      }
    }
  }
  EXPECT_GE(shrunk, 8);
}

}  // namespace
}  // namespace ddplab
