// Typed options (options.hpp) of every policy and codec in the registries: each example is accepted and read
// back, differs from the fallback, and a value outside the range is refused with the option's requirement.
#include <gtest/gtest.h>

#include <cmath>

#include "ddplab/core/error.hpp"
#include "ddplab/strategies/codec.hpp"
#include "ddplab/strategies/strategy.hpp"

namespace ddplab {
namespace {

// A value just outside the option's range or type.
std::string outside(const OptionSpec& o) {
  if (o.kind == OptionKind::Boolean) return "maybe";
  if (std::isfinite(o.max)) return o.kind == OptionKind::Integer ? "1000000000000" : std::to_string(o.max * 2 + 1);
  return o.kind == OptionKind::Integer ? std::to_string(static_cast<long long>(o.min) - 1) : std::to_string(o.min - 1);
}

void check_specs(const std::string& owner, const std::vector<OptionSpec>& specs) {
  for (const OptionSpec& o : specs) {
    SCOPED_TRACE(owner + "." + o.name);
    EXPECT_FALSE(o.help.empty());
    EXPECT_TRUE(option_accepts(o, o.fallback)) << o.fallback;
    EXPECT_TRUE(option_accepts(o, o.example)) << o.example;
    EXPECT_NE(o.example, o.fallback) << "the example must change something";
    EXPECT_FALSE(option_accepts(o, outside(o))) << outside(o);
    EXPECT_FALSE(option_accepts(o, "")) << "empty";
    const OptionValues none, set{{o.name, o.example}};
    try {
      option_integer(specs, set, o.name);
      EXPECT_EQ(o.kind, OptionKind::Integer);  // a number or bool read as an integer only when it is one
    } catch (const ddplab::InternalError&) {   // reading an option as another kind is a bug, not bad input
    }
    if (o.kind == OptionKind::Boolean) {
      EXPECT_NE(option_bool(specs, none, o.name), option_bool(specs, set, o.name));
    } else {
      EXPECT_NE(option_number(specs, none, o.name), option_number(specs, set, o.name));
    }
    const OptionValues bad{{o.name, outside(o)}};
    try {
      o.kind == OptionKind::Boolean ? (void)option_bool(specs, bad, o.name) : (void)option_number(specs, bad, o.name);
      ADD_FAILURE() << "accepted " << outside(o);
    } catch (const ddplab::InputError& e) {
      EXPECT_EQ(std::string(e.what()), o.name + " must be " + o.requirement() + ", got \"" + outside(o) + "\"");
    }
  }
}

TEST(Options, EveryRegisteredOptionHasARangeAnExampleAndItsMessage) {
  for (const PolicyInfo& p : policies()) check_specs("policy " + p.name, p.options);
  for (const CodecInfo& c : codecs()) check_specs("codec " + c.name, c.options);
}

TEST(Options, RequirementsReadAsTheyAreWritten) {
  EXPECT_EQ((OptionSpec{"r", OptionKind::Number, 0, 1, true, "0.5", "0.1", "x"}).requirement(), "in (0, 1]");
  EXPECT_EQ((OptionSpec{"k", OptionKind::Integer, 1, INFINITY, false, "1", "2", "x"}).requirement(), "an integer >= 1");
  EXPECT_EQ((OptionSpec{"k", OptionKind::Integer, 1, 8, false, "1", "2", "x"}).requirement(), "an integer from 1 to 8");
  EXPECT_EQ((OptionSpec{"e", OptionKind::Number, 0, INFINITY, false, "0", "1", "x"}).requirement(), "a number >= 0");
  EXPECT_EQ((OptionSpec{"b", OptionKind::Boolean, 0, 1, false, "true", "false", "x"}).requirement(), "true or false");
  EXPECT_THROW(option_integer({}, {}, "nothing"), ddplab::InternalError);
}

TEST(Options, PolicyOptionsOfAStrategy) {
  StrategyConfig c;
  c.policy = "local_sgd";
  EXPECT_EQ(policy_option(c, "local_sgd_period"), 1);  // the fallback
  c.policy_options["local_sgd_period"] = "4";
  EXPECT_EQ(policy_option(c, "local_sgd_period"), 4);
  c.policy_options["local_sgd_period"] = "0";
  EXPECT_THROW(check_policy_options(c), ddplab::InputError);
  c.policy_options = {{"ps_servers", "1"}};  // another policy's option
  EXPECT_THROW(check_policy_options(c), ddplab::InputError);
}

}  // namespace
}  // namespace ddplab
