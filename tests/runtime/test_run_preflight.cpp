// preflight_run and require_trainable_model: what `ddplab run` refuses before mpirun starts, each at the
// setting's file:line:col, and what it lets through.
#include <gtest/gtest.h>

#include "ddplab/core/error.hpp"
#include "ddplab/runtime/run_preflight.hpp"

namespace ddplab {
namespace {

const std::string kDdp = "[[strategy]]\nname = \"ddp\"\npolicy = \"overlap\"\n";

// The message preflight_run refuses `toml` with on `np` ranks, or "no error".
std::string refusal(const std::string& toml, int np, FaultInjection fault = {}) {
  const Scenario sc = parse_scenario(toml, "p.toml");
  try {
    preflight_run(sc, np, fault);
  } catch (const InputError& e) {
    return e.what();
  }
  return "no error";
}

TEST(RunPreflight, ARunnableScenarioPasses) {
  EXPECT_EQ(refusal(kDdp, 1), "no error");
  EXPECT_EQ(refusal("[parallel]\npp = 2\n" + kDdp, 4), "no error");
  EXPECT_EQ(refusal("[cluster]\nstragglers = [{rank = 1, factor = 2.0}]\n" + kDdp, 2), "no error");
}

TEST(RunPreflight, TheWorldMustHoldTheJob) {
  EXPECT_EQ(refusal(kDdp, 0), "--np must be at least 1, got 0");
  EXPECT_NE(refusal("[parallel]\npp = 2\n" + kDdp, 3), "no error");  // 3 ranks do not split into 2 stages
  FaultInjection fault;
  fault.kind = FaultKind::Exit;
  fault.rank = 2;
  EXPECT_NE(refusal(kDdp, 2, fault).find("rank 2 is not one of the job's 2 ranks"), std::string::npos);
  EXPECT_EQ(refusal(kDdp, 3, fault), "no error");
}

TEST(RunPreflight, AStrategyThatCannotRunOnTheWorldIsNamed) {
  // A dedicated server needs a worker besides it.
  const std::string ps = "[[strategy]]\nname = \"ps-1\"\npolicy = \"ps\"\nps_servers = 1\n";
  EXPECT_EQ(refusal(ps, 1).rfind("p.toml: strategy \"ps-1\" cannot run on 1 rank: ", 0), 0u) << refusal(ps, 1);
  EXPECT_EQ(refusal(ps, 2), "no error");
  // ZeRO-2 gives memory back, which only the cpu backend can; refused at the strategy's policy.
  const std::string zero2 = "[train]\nbackend = \"cuda\"\n[[strategy]]\nname = \"z\"\npolicy = \"zero2\"\n";
  EXPECT_EQ(refusal(zero2, 2).rfind("p.toml:5:10: strategy \"z\": policy \"zero2\" gives back", 0), 0u)
      << refusal(zero2, 2);
}

TEST(RunPreflight, AStragglerCannotSpeedARankUp) {
  const std::string fast = "[cluster]\nstragglers = [{rank = 1, factor = 0.5}]\n" + kDdp;
  EXPECT_EQ(refusal(fast, 2).rfind("p.toml: cluster.stragglers make rank 1 faster (factor 0.5)", 0), 0u)
      << refusal(fast, 2);
  EXPECT_EQ(refusal(fast, 1), "no error");  // rank 1 is not in a one-rank job
}

TEST(RunPreflight, AModelTableIsForTheSimulator) {
  const Scenario sc = parse_scenario("[model]\ntype = \"table\"\ntable = \"gpt2_xl\"\n" + kDdp, "p.toml");
  try {
    require_trainable_model(sc);
    FAIL() << "a model table was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(
        std::string(e.what()).rfind(
            "p.toml:2:8: ddplab run trains model.type \"mlp\", \"cnn\" and \"gpt\"; a \"table\" model (gpt2_xl)", 0),
        0u)
        << e.what();
  }
  EXPECT_NO_THROW(require_trainable_model(parse_scenario(kDdp, "p.toml")));
}

TEST(RunPreflight, AGptRunsOnTheCpuBackendAndUnsplit) {
  const std::string gpt = "[model]\ntype = \"gpt\"\n[data]\ndataset = \"fortunes\"\n";
  EXPECT_NO_THROW(require_trainable_model(parse_scenario(gpt + kDdp, "p.toml")));
  try {
    require_trainable_model(parse_scenario(gpt + "[train]\nbackend = \"cuda\"\n" + kDdp, "p.toml"));
    FAIL() << "a GPT on the cuda backend was accepted";
  } catch (const InputError& e) {
    EXPECT_EQ(std::string(e.what()),
              "p.toml:6:11: model.type = \"gpt\": the cuda backend has no transformer kernels "
              "yet; train it with train.backend = \"cpu\"");
  }
  EXPECT_NE(refusal(gpt + "[parallel]\ntp = 2\n" + kDdp, 2)
                .find("model.type = \"gpt\": the runtime does not run it "
                      "on a split model (parallel.tp = 2) yet"),
            std::string::npos)
      << refusal(gpt + "[parallel]\ntp = 2\n" + kDdp, 2);
}

}  // namespace
}  // namespace ddplab
