// The error hierarchy (core/error.hpp): three kinds under ddplab::Error with their exit codes, the fields an
// input error and a run fault carry besides their message, and the readers that fill them: a scenario's
// field is found from the error, never from its text.
#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <type_traits>

#include "ddplab/core/checkpoint.hpp"
#include "ddplab/core/error.hpp"
#include "ddplab/core/nccl_tests.hpp"
#include "ddplab/core/scenario.hpp"
#include "ddplab/core/store.hpp"
#include "ddplab/core/units.hpp"
#include "ddplab/strategies/model_library.hpp"
#include "ddplab/strategies/strategy.hpp"

using namespace ddplab;

namespace {

// The error that loading and validating `text` (as file "s.toml") throws; fails the test when none does.
ScenarioError scenario_error(const std::string& text) {
  try {
    validate_strategies(parse_scenario(text, "s.toml"));
  } catch (const ScenarioError& e) {
    return e;
  }
  ADD_FAILURE() << "no error for:\n" << text;
  return ScenarioError("none");
}

}  // namespace

TEST(Errors, EachKindHasItsExitCode) {
  EXPECT_EQ(InputError("x").exit_code(), 2);
  EXPECT_EQ(RunFault("x").exit_code(), 1);
  EXPECT_EQ(InternalError("x").exit_code(), 70);
  // Caught as ddplab::Error (main) and as std::runtime_error (code that predates the hierarchy).
  try {
    throw RunFault("rank 1 died");
  } catch (const Error& e) {
    EXPECT_EQ(e.exit_code(), RunFault::kExitCode);
    EXPECT_STREQ(e.what(), "rank 1 died");
  }
  EXPECT_THROW(throw InternalError("bug"), std::runtime_error);
  EXPECT_FALSE((std::is_base_of_v<std::invalid_argument, InputError>));
}

TEST(Errors, TheLibrariesErrorTypesAreInputErrors) {
  EXPECT_TRUE((std::is_base_of_v<InputError, ScenarioError>));
  EXPECT_TRUE((std::is_base_of_v<InputError, StoreError>));
  EXPECT_TRUE((std::is_base_of_v<InputError, CheckpointError>));
  EXPECT_TRUE((std::is_base_of_v<InputError, NcclTestsError>));
  EXPECT_TRUE((std::is_base_of_v<InputError, ModelTableError>));
  EXPECT_TRUE((std::is_base_of_v<InputError, UnitError>));
}

TEST(Errors, PositionsReadBackIntoFields) {
  const InputLocation a = InputLocation::at("runs/a.toml:12:5", "train.lr");
  EXPECT_EQ(a.file, "runs/a.toml");
  EXPECT_EQ(a.line, 12);
  EXPECT_EQ(a.column, 5);
  EXPECT_EQ(a.field, "train.lr");
  EXPECT_EQ(a.position(), "runs/a.toml:12:5");
  const InputLocation b = InputLocation::at("points.toml:7");
  EXPECT_EQ(b.file, "points.toml");
  EXPECT_EQ(b.line, 7);
  EXPECT_FALSE(b.column);
  const InputLocation c = InputLocation::at("s.toml");
  EXPECT_EQ(c.file, "s.toml");
  EXPECT_FALSE(c.line);
  // A scenario made from a published point is named "FILE:LINE"; its positions add their own line and column.
  const InputLocation d = InputLocation::at("points.toml:7:3:12");
  EXPECT_EQ(d.file, "points.toml:7");
  EXPECT_EQ(d.line, 3);
  EXPECT_EQ(d.column, 12);
  EXPECT_EQ(d.position(), "points.toml:7:3:12");
}

TEST(Errors, AnInputErrorKeepsItsMessageAndCarriesWhere) {
  const InputError e(InputLocation::at("s.toml:3:9", "train.lr"), "train.lr must be > 0, got -1");
  EXPECT_STREQ(e.what(), "s.toml:3:9: train.lr must be > 0, got -1");
  EXPECT_EQ(e.file(), "s.toml");
  EXPECT_EQ(e.line(), 3);
  EXPECT_EQ(e.column(), 9);
  EXPECT_EQ(e.field(), "train.lr");
  EXPECT_EQ(e.detail(), "train.lr must be > 0, got -1");
  // A command-line option: a field without a file, the message as given.
  const InputError option("--np must be at least 1, got 0", "--np");
  EXPECT_STREQ(option.what(), "--np must be at least 1, got 0");
  EXPECT_EQ(option.field(), "--np");
  EXPECT_TRUE(option.file().empty());
  // Context added in front keeps the kind and the fields.
  const InputError wider = e.prefixed("strategy \"a\" cannot run on 2 ranks: ");
  EXPECT_STREQ(wider.what(), "strategy \"a\" cannot run on 2 ranks: s.toml:3:9: train.lr must be > 0, got -1");
  EXPECT_EQ(wider.field(), "train.lr");
  EXPECT_EQ(wider.line(), 3);
  EXPECT_EQ(wider.exit_code(), 2);
}

TEST(Errors, ARunFaultCarriesRankStepAndOp) {
  const RunFault f("rank 2 step 40: loss is nan", {.rank = 2, .step = 40, .op = "loss"});
  EXPECT_EQ(f.rank(), 2);
  EXPECT_EQ(f.step(), 40);
  EXPECT_EQ(f.op(), "loss");
  const RunFault g("MPI_Allreduce failed");
  EXPECT_FALSE(g.rank());
  EXPECT_FALSE(g.step());
  const RunFault h = f.prefixed("strategy a: ");
  EXPECT_STREQ(h.what(), "strategy a: rank 2 step 40: loss is nan");
  EXPECT_EQ(h.rank(), 2);
}

TEST(Errors, TheScenarioReaderFillsFileLineColumnAndField) {
  const ScenarioError e = scenario_error("[[strategy]]\nname = \"a\"\nschedule = \"tree\"\n");
  EXPECT_EQ(e.file(), "s.toml");
  EXPECT_EQ(e.line(), 3);
  EXPECT_EQ(e.column(), 12);
  EXPECT_EQ(e.field(), "strategy[0].schedule");
  EXPECT_EQ(std::string(e.what()).rfind("s.toml:3:12: strategy[0].schedule must be one of", 0), 0u) << e.what();
  EXPECT_EQ(e.exit_code(), 2);
  // An unknown key is the field at fault.
  const ScenarioError k = scenario_error("[train]\nbatch_sise = 3\n[[strategy]]\nname = \"a\"\n");
  EXPECT_EQ(k.field(), "train.batch_sise");
  EXPECT_EQ(k.line(), 2);
}

TEST(Errors, AUnitErrorSaysWhatWasExpected) {
  try {
    parse_bandwidth("fast");
    FAIL() << "no exception";
  } catch (const UnitError& e) {
    EXPECT_STREQ(e.what(), "expected a bandwidth such as \"10Gbit/s\", got \"fast\"");
    EXPECT_EQ(e.expected(), "a bandwidth such as \"10Gbit/s\"");
  }
  // The scenario reader phrases it with the field and the value as written.
  const ScenarioError s = scenario_error("[cluster]\nlink_bandwidth = \"fast\"\n[[strategy]]\nname = \"a\"\n");
  EXPECT_STREQ(s.what(), "s.toml:2:18: cluster.link_bandwidth must be a bandwidth such as \"10Gbit/s\", got \"fast\"");
  EXPECT_EQ(s.field(), "cluster.link_bandwidth");
}

TEST(Errors, ACodecOptionIsFoundFromTheErrorsField) {
  // validate_strategies points at the option the codec refused, from InputError::field().
  const ScenarioError range = scenario_error(
      "[[strategy]]\nname = \"a\"\ncodec = \"topk\"\ncodec_options = { error_feedback = true, ratio = 2.0 }\n");
  EXPECT_EQ(range.field(), "strategy[0].codec_options.ratio");
  EXPECT_EQ(range.line(), 4);
  EXPECT_EQ(range.column(), 50);
  EXPECT_NE(std::string(range.what()).find("ratio must be in (0, 1], got \"2.0\""), std::string::npos) << range.what();
  // An option the codec does not have: that key.
  const ScenarioError unknown =
      scenario_error("[[strategy]]\nname = \"a\"\ncodec = \"fp16\"\ncodec_options = { ratio = 0.5 }\n");
  EXPECT_EQ(unknown.field(), "strategy[0].codec_options.ratio");
  EXPECT_NE(std::string(unknown.what()).find("unknown option \"ratio\""), std::string::npos) << unknown.what();
}
