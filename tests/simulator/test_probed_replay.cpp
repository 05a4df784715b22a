// The probed replay (mode "probed", collective_probe.hpp): DP replica 0 runs its plans, each distinct DP
// collective call is simulated once, alone, and its time reused. What it leaves out is the contention
// between a DP collective and the rest of the step's traffic (pipeline messages, TP allreduces, the next
// bucket's collective), so it is checked against the exact replay with a stated tolerance, ranking included.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <unistd.h>

#include <nlohmann/json.hpp>

#include <fmt/format.h>

#include "ddplab/core/error.hpp"
#include "ddplab/simulator/layout_search.hpp"
#include "ddplab/simulator/simulator.hpp"
#include "layout_test_util.hpp"
#include "sim_test_util.hpp"

namespace ddplab {
namespace {

using test::mlp_layout;

struct Case {
  int tp, pp, dp, micro;
  const char* schedule;
  const char* policy;
  const char* sched;
};

double probed_error(const Scenario& sc, const Case& c, const SimOptions& base) {
  const int world = c.tp * c.pp * c.dp;
  const StrategyConfig st = test::strategy_config(c.policy, c.sched);
  const auto exact = simulate_steps(sc, st, world, 0.02, 0.001, {3}, test::with_mode("exact", base), 1).front();
  const auto probed = simulate_steps(sc, st, world, 0.02, 0.001, {3}, test::with_mode("probed", base), 1).front();
  const std::string what = fmt::format("TP {} x PP {} x DP {}, {} on {}", c.tp, c.pp, c.dp, c.policy, c.sched);
  EXPECT_EQ(probed.ranks.size(), exact.ranks.size()) << what;
  // Replica 0 sends what it sends in the exact replay: the probe's tally, taken once per call.
  for (std::size_t r = 0; r < exact.ranks.size(); ++r) {
    const bool replica0 = (static_cast<int>(r) / c.tp) % c.dp == 0;
    if (replica0) {
      EXPECT_EQ(probed.bytes_sent[r], exact.bytes_sent[r]) << what << ", rank " << r;
    }
  }
  EXPECT_LT(probed.comms, exact.comms) << what;
  const double err = std::abs(probed.step_s / exact.step_s - 1);
  std::printf("%-50s exact %.4f ms, probed %.4f ms (%.3f%%)\n", what.c_str(), 1e3 * exact.step_s, 1e3 * probed.step_s,
              100 * err);
  return err;
}

TEST(ProbedReplay, AgreesWithTheExactReplayOnAStar) {
  const Case cases[] = {{1, 2, 4, 4, "1f1b", "overlap", "ring"},
                        {1, 2, 4, 4, "gpipe", "zero1", "ring"},
                        {2, 1, 4, 1, "1f1b", "bucketed", "halving_doubling"},
                        {2, 2, 4, 4, "1f1b", "overlap", "ring"},
                        {2, 2, 4, 4, "1f1b", "overlap", "double_binary_tree"},
                        {1, 2, 3, 2, "gpipe", "bucketed", "recursive_doubling"},
                        {1, 1, 8, 1, "1f1b", "overlap", "ring"},  // pure DP: rank 0 stands for every rank
                        {1, 1, 6, 1, "1f1b", "bucketed", "double_binary_tree"}};
  for (const Case& c : cases) {
    Scenario sc = c.tp * c.pp > 1 ? mlp_layout(c.tp, c.pp, c.micro, c.schedule) : test::small_mlp_scenario("probed-dp");
    EXPECT_LT(probed_error(sc, c, test::alpha_beta()), 0.01);
  }
}

// Where groups share links (one NIC per node, PCIe inside it), every DP group of a stage runs in the probe.
TEST(ProbedReplay, ProbesEveryGroupOfAStageWhereGroupsShareLinks) {
  Scenario sc = mlp_layout(2, 2, 4, "1f1b");
  sc.cluster.devices_per_node = 4;
  sc.cluster.nics = "per_node";
  sc.cluster.intra = "pcie";
  sc.cluster.link_bandwidth = 2e8;  // the shared NIC is what the DP sync waits for
  EXPECT_LT(probed_error(sc, {2, 2, 4, 4, "1f1b", "overlap", "ring"}, test::alpha_beta()), 0.02);
}

TEST(ProbedReplay, RanksEveryLayoutAsTheExactReplayOnDgxNodes) {
  test::check_dgx_ranking("probed", 0.02, [](const ParallelConfig&) { return "probed"; });
}

// search_layouts keeps the probes' outcomes in a memo for the layouts after: what it reads back is what
// the probe measured, and it is what the replay takes (an edited file shows).
TEST(ProbedReplay, AMemoOfProbesGivesTheSameStep) {
  const Scenario sc = mlp_layout(2, 2, 4, "1f1b");
  const StrategyConfig st = test::strategy_config("overlap", "ring");
  const std::filesystem::path dir = std::filesystem::temp_directory_path() / fmt::format("ddplab-memo-{}", ::getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  SimOptions o = test::with_mode("probed");
  const auto plain = simulate_steps(sc, st, 16, 0.002, 0.0, {3}, o, 1).front();
  o.probe_memo = dir.string();
  const auto first = simulate_steps(sc, st, 16, 0.002, 0.0, {3}, o, 1).front();
  const auto again = simulate_steps(sc, st, 16, 0.002, 0.0, {3}, o, 1).front();
  // Read back, the replay starts at 0 instead of after the probes: the same times but for rounding.
  EXPECT_EQ(first.step_s, plain.step_s);
  EXPECT_NEAR(again.step_s, plain.step_s, 1e-12);
  EXPECT_EQ(again.bytes_sent, plain.bytes_sent);
  EXPECT_EQ(again.bytes_between, plain.bytes_between);
  int files = 0;
  for (const auto& f : std::filesystem::directory_iterator(dir)) {
    ++files;
    std::ifstream in(f.path());
    nlohmann::json j = nlohmann::json::parse(in);
    for (auto& [index, m] : j["members"].items()) m["seconds"] = m["seconds"].get<double>() + 0.01;
    std::ofstream(f.path()) << j.dump();
  }
  EXPECT_GE(files, 2) << "one probe per distinct bucket size";
  const auto edited = simulate_steps(sc, st, 16, 0.002, 0.0, {3}, o, 1).front();
  EXPECT_GT(edited.step_s, plain.step_s + 0.0099);  // 10 ms more per DP call: one bucket per stage here
  std::filesystem::remove_all(dir);
}

TEST(ProbedReplay, RefusesRanksThatDifferWithoutALayout) {
  auto refusal = [](Scenario sc, const StrategyConfig& st) -> std::string {
    try {
      (void)simulate_steps(sc, st, 4, 0.01, 0.0, {3}, test::with_mode("probed"), 1);
    } catch (const std::exception& e) {
      return e.what();
    }
    return "";
  };
  Scenario slow = test::small_mlp_scenario("straggler");
  slow.cluster.stragglers.push_back({2, -1, 1.5});
  EXPECT_NE(refusal(slow, test::strategy_config("overlap", "ring")).find("rank 2 is a straggler"), std::string::npos);
  StrategyConfig ps = test::strategy_config("ps", "native");
  EXPECT_NE(refusal(test::small_mlp_scenario("ps"), ps).find("a parameter server's ranks differ"), std::string::npos);
  // auto samples a layout above kExactMaxLayoutWorld ranks; pure DP is aggregated above kExactMaxWorld.
  EXPECT_EQ(simulation_mode(SimOptions{}, kExactMaxLayoutWorld, true), "exact");
  EXPECT_EQ(simulation_mode(SimOptions{}, kExactMaxLayoutWorld + 1, true), "probed");
  EXPECT_EQ(simulation_mode(SimOptions{}, kExactMaxWorld + 1, false), "aggregated");
  SimOptions unknown;
  unknown.mode = "sampled";
  try {
    (void)simulation_mode(unknown, 4);
    ADD_FAILURE() << "an unknown mode accepted";
  } catch (const ddplab::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown mode \"sampled\" (known: auto, exact, aggregated, folded, probed)"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace ddplab
