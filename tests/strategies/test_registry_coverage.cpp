// The accuracy contract (tests/mpi/strategy_accuracy.sh) trains every strategy of scenarios/strategies.toml;
// this keeps that list complete: every registered policy and codec must appear in it, so adding one to a
// registry without an accuracy run fails here. (Schedules are checked bit for bit against reference sums
// in their own tests; their accuracy differs only by summation order.)
#include <gtest/gtest.h>

#include <set>

#include "ddplab/strategies/codec.hpp"
#include "ddplab/strategies/strategy.hpp"

namespace ddplab {
namespace {

TEST(RegistryCoverage, AccuracyScenarioUsesEveryPolicyAndCodec) {
  const Scenario sc = load_validated_scenario(std::string(DDPLAB_SOURCE_DIR) + "/scenarios/strategies.toml");
  std::set<std::string> policies_used, codecs_used;
  for (const StrategyConfig& s : sc.strategies) {
    policies_used.insert(s.policy);
    codecs_used.insert(s.codec);
  }
  for (const PolicyInfo& p : policies())
    EXPECT_TRUE(policies_used.count(p.name)) << "policy " << p.name << " has no strategy in scenarios/strategies.toml";
  for (const CodecInfo& c : codecs())
    EXPECT_TRUE(codecs_used.count(c.name)) << "codec " << c.name << " has no strategy in scenarios/strategies.toml";
}

}  // namespace
}  // namespace ddplab
