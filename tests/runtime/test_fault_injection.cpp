// --inject-fault's values: parsed once at the command line, refused with the option's name when malformed,
// written back for the ranks, and striking only the rank and step they name.
#include <gtest/gtest.h>

#include "ddplab/core/error.hpp"
#include "ddplab/runtime/fault_injection.hpp"

namespace ddplab {
namespace {

constexpr auto kRunKinds = {FaultKind::Exit, FaultKind::Perturb, FaultKind::Bitflip};

FaultInjection run_fault(std::string_view text) { return parse_fault_injection(text, "--inject-fault", kRunKinds); }

TEST(FaultInjection, ParsesEachKindAndWritesItBack) {
  const FaultInjection exit = run_fault("exit:1:23");
  EXPECT_EQ(exit.kind, FaultKind::Exit);
  EXPECT_EQ(exit.rank, 1);
  EXPECT_EQ(exit.step, 23);
  const FaultInjection perturb = run_fault("perturb:3");
  EXPECT_EQ(perturb.kind, FaultKind::Perturb);
  EXPECT_EQ(perturb.rank, 3);
  EXPECT_EQ(run_fault("bitflip:0:5").kind, FaultKind::Bitflip);
  const FaultInjection wrong = parse_fault_injection("wrong:ring:16384", "--inject-fault", {FaultKind::Wrong});
  EXPECT_EQ(wrong.schedule, "ring");
  EXPECT_EQ(wrong.bytes, 16384u);
  // What the launcher passes on reads back as the same fault.
  for (const char* text : {"exit:1:23", "perturb:3", "bitflip:0:5"})
    EXPECT_EQ(fault_injection_text(run_fault(text)), text);
  EXPECT_EQ(fault_injection_text(wrong), "wrong:ring:16384");
  EXPECT_EQ(fault_injection_text(FaultInjection{}), "");
}

TEST(FaultInjection, StrikesOnlyItsRankAndStep) {
  const FaultInjection exit = run_fault("exit:1:23");
  EXPECT_TRUE(exit.strikes(FaultKind::Exit, 1, 23));
  EXPECT_FALSE(exit.strikes(FaultKind::Exit, 0, 23));
  EXPECT_FALSE(exit.strikes(FaultKind::Exit, 1, 22));
  EXPECT_FALSE(exit.strikes(FaultKind::Bitflip, 1, 23));
  // A perturbation names no step: it strikes its rank at the final check.
  EXPECT_TRUE(run_fault("perturb:3").strikes(FaultKind::Perturb, 3));
  EXPECT_FALSE(run_fault("perturb:3").strikes(FaultKind::Perturb, 2));
  const FaultInjection wrong = parse_fault_injection("wrong:ring:16384", "--inject-fault", {FaultKind::Wrong});
  EXPECT_TRUE(wrong.corrupts("ring", 16384));
  EXPECT_FALSE(wrong.corrupts("ring", 8192));
  EXPECT_FALSE(wrong.corrupts("native", 16384));
  EXPECT_FALSE(FaultInjection{}.corrupts("ring", 16384));
}

TEST(FaultInjection, RefusesMalformedValuesNamingTheOption) {
  for (const char* text :
       {"", "exit", "exit:1", "exit:1:2:3", "exit:one:3", "exit:-1:3", "exit:1:+3", "exit: 1:3", "perturb:1:2",
        "bitflip:1", "crash:1:2", "EXIT:1:2", "wrong:ring:16384", "exit:99999999999:1"}) {
    try {
      run_fault(text);
      ADD_FAILURE() << "accepted \"" << text << "\"";
    } catch (const InputError& e) {
      EXPECT_EQ(e.field(), "--inject-fault") << text;
      EXPECT_EQ(std::string(e.what()),
                std::string("--inject-fault: expected exit:RANK:STEP, perturb:RANK or bitflip:RANK:STEP (RANK and STEP "
                            "whole numbers), got \"") +
                    text + "\"");
    }
  }
  try {
    parse_fault_injection("wrong:ring", "--inject-fault", {FaultKind::Wrong});
    ADD_FAILURE() << "accepted wrong:ring";
  } catch (const InputError& e) {
    EXPECT_STREQ(e.what(), "--inject-fault: expected wrong:SCHEDULE:BYTES (BYTES a whole number), got \"wrong:ring\"");
  }
  for (const char* text : {"wrong::16384", "wrong:ring", "wrong:ring:16KiB", "exit:1:2"})
    EXPECT_THROW(parse_fault_injection(text, "--inject-fault", {FaultKind::Wrong}), InputError) << text;
}

}  // namespace
}  // namespace ddplab
