// ZeRO-3 on the simulator: each unit's gathers and reduce-scatter take their alpha-beta time, the comm
// stream runs them back to back, prefetch hides the next unit's gather behind the current one's compute,
// and where communication dominates ZeRO-3 is slower than ZeRO-1 by the bytes of its second gathers.
#include <gtest/gtest.h>

#include "ddplab/strategies/schedule.hpp"
#include "ddplab/strategies/strategy.hpp"
#include "sim_test_util.hpp"

namespace ddplab {
namespace {

constexpr int kRanks = 4;

Scenario zero3_scenario() {
  Scenario sc = test::small_mlp_scenario("zero3");
  sc.model.layers = {784, 512, 512, 512, 10};
  return sc;
}

StrategyConfig config(const std::string& policy, bool prefetch = true) {
  StrategyConfig c = test::strategy_config(policy, "ring");
  c.bucket_cap = 1 << 20, c.first_bucket_cap = 1 << 18;  // about a bucket per layer
  if (!prefetch) c.policy_options.emplace("zero3_prefetch", "0");
  return c;
}

// A ring collective on the alpha-beta star: each step ends when its largest message has crossed two links.
double ring_seconds(const CollectiveCall& call, const ClusterConfig& cluster) {
  const Schedule s = schedule_for_call(call, "ring", kRanks, 1);
  double t = 0;
  for (std::size_t step = 0; step < s.ranks.front().size(); ++step) {
    std::size_t most = 0;
    for (const auto& rank : s.ranks)
      for (const auto& send : rank[step].sends) most = std::max(most, send.chunk.count * elem_bytes(call.type));
    t += static_cast<double>(most) / cluster.link_bandwidth + 2 * cluster.link_latency;
  }
  return t;
}

TEST(Zero3Replay, WithoutComputeTheStepIsItsCollectivesBackToBack) {
  const Scenario sc = zero3_scenario();
  const StrategyConfig c = config("zero3", false);
  const SimStepResult r = simulate_step(sc, c, kRanks, 1e-7, 0.0, test::alpha_beta(), {1, 1});
  Strategy s(c, ModelSpec::mlp(sc.model.layers), strategy_context(sc, kRanks, 1));
  s.observe_ready_order(s.model().expected_ready_order());
  const StepPlan plan = s.plan(1);
  double expected = 0;
  int collectives = 0;
  for (const PlanOp& op : plan.ops) {
    if (!is_comm(op.kind)) continue;
    ASSERT_EQ(op.calls.size(), 1u);
    const double want = ring_seconds(op.calls[0], sc.cluster);
    const SimOpRecord& got = r.ranks[0].trace.at(static_cast<std::size_t>(op.id));
    EXPECT_NEAR(got.end_s - got.start_s, want, 0.01 * want) << got.name;
    expected += want;
    ++collectives;
  }
  EXPECT_GT(collectives, 2 * static_cast<int>(s.bucketing().buckets.size()));  // two gathers of most units
  EXPECT_NEAR(r.step_s, expected, 0.01 * expected);
  EXPECT_NEAR(r.comm_s, expected, 0.01 * expected);
}

TEST(Zero3Replay, PrefetchHidesTheNextUnitsGatherBehindCompute) {
  const Scenario sc = zero3_scenario();
  const SimStepResult comm_only =
      simulate_step(sc, config("zero3", false), kRanks, 1e-7, 0.0, test::alpha_beta(), {1, 1});
  // Compute as long as the communication: without prefetch every gather waits for the chunk before it.
  const double compute = comm_only.comm_s;
  const SimStepResult ahead =
      simulate_step(sc, config("zero3", true), kRanks, compute, 0.0, test::alpha_beta(), {1, 1});
  const SimStepResult behind =
      simulate_step(sc, config("zero3", false), kRanks, compute, 0.0, test::alpha_beta(), {1, 1});
  EXPECT_NEAR(ahead.comm_s, behind.comm_s, 0.01 * behind.comm_s) << "the same collectives";
  EXPECT_LT(ahead.exposed_comm_s, 0.8 * behind.exposed_comm_s);
  EXPECT_LT(ahead.step_s, behind.step_s);
  // Neither can beat the compute, nor take longer than compute and comm back to back.
  for (const SimStepResult* r : {&ahead, &behind}) {
    EXPECT_GE(r->step_s, compute);
    EXPECT_LE(r->step_s, compute + r->comm_s + 1e-9);
  }
}

TEST(Zero3Replay, WhereCommunicationDominatesItIsSlowerThanZeroOneByItsBytes) {
  const Scenario sc = zero3_scenario();
  const SimStepResult one = simulate_step(sc, config("zero1"), kRanks, 1e-7, 0.0, test::alpha_beta(), {1, 1});
  const SimStepResult three = simulate_step(sc, config("zero3"), kRanks, 1e-7, 0.0, test::alpha_beta(), {1, 1});
  std::uint64_t bytes_one = 0, bytes_three = 0;
  for (std::uint64_t b : one.bytes_sent) bytes_one += b;
  for (std::uint64_t b : three.bytes_sent) bytes_three += b;
  // Two gathers of every unit but those the forward ends with, against one: between 1 and 1.5 times.
  const double ratio = static_cast<double>(bytes_three) / static_cast<double>(bytes_one);
  EXPECT_GT(ratio, 1.05);
  EXPECT_LE(ratio, 1.5);
  EXPECT_NEAR(three.step_s / one.step_s, ratio, 0.05 * ratio);
}

}  // namespace
}  // namespace ddplab
