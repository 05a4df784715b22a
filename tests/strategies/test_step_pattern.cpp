// The step pattern of every policy x codec x accumulation in the registries, checked against the plans
// themselves: each segment's blocks repeat, the steady block repeats forever, and neighbouring segments
// differ. Plus the patterns users know: PowerSGD's start_iter, local SGD's warm-up and period, accumulation.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "ddplab/strategies/strategy.hpp"

namespace ddplab {
namespace {

const ModelSpec kStepMlp = ModelSpec::mlp({784, 64, 32, 10});

StrategyConfig config(const std::string& policy, const std::string& codec, int accumulate) {
  StrategyConfig c;
  c.policy = policy;
  c.codec = codec;
  c.schedule = "ring";
  c.accumulate_steps = accumulate;
  // Caps small enough for several buckets, so that the rebuild after the first step changes them.
  c.bucket_cap = 100000;
  c.first_bucket_cap = 20000;
  // Every option of the policy away from its default (the registry's example value).
  for (const OptionSpec& o : find_policy(policy)->options) c.policy_options[o.name] = o.example;
  // And the codec's (PowerSGD's start_iter at 3: a plan change inside the window).
  for (const CodecInfo& k : codecs())
    if (k.name == codec)
      for (const OptionSpec& o : k.options) c.codec_options[o.name] = o.example;
  if (uses_parameter_servers(c)) c.schedule = "native";  // servers are pushed to and pulled from directly
  return c;
}

// The plans as the runtime goes through them: the first optimizer step on the initial buckets.
struct Plans {
  Strategy initial, rebuilt;
  int k;
  Plans(const StrategyConfig& c, const ModelSpec& m)
      : initial(c, m, {4, 1, 16, 1}), rebuilt(c, m, {4, 1, 16, 1}), k(c.accumulate_steps) {
    rebuilt.observe_ready_order(m.expected_ready_order());
  }
  StepPlan at(std::int64_t s) const { return s < k ? initial.plan(s) : rebuilt.plan(s); }
};

TEST(StepPattern, EveryRegisteredStrategyDescribesItsPlans) {
  int checked = 0;
  for (const PolicyInfo& policy : policies())
    for (const CodecInfo& codec : codecs())
      for (int accumulate : {1, 2}) {
        if (policy.shards != Shards::None && codec.name != "none") continue;  // refused by validate_strategies
        const StrategyConfig c = config(policy.name, codec.name, accumulate);
        const std::string what = policy.name + "/" + codec.name + " K=" + std::to_string(accumulate);
        const Plans plans(c, kStepMlp);
        const StepPattern p = plans.initial.pattern();
        ASSERT_FALSE(p.segments.empty()) << what;
        EXPECT_EQ(p.segments.front().first, 0) << what;
        EXPECT_EQ(p.steady().repeats, 0) << what;
        for (std::size_t i = 0; i + 1 < p.segments.size(); ++i) {
          const StepSegment& s = p.segments[i];
          EXPECT_GE(s.repeats, 1) << what;
          EXPECT_EQ(s.first + s.length * s.repeats, p.segments[i + 1].first) << what << " segment " << i;
          // Every block of the segment runs the same plans as its first.
          for (std::int64_t b = 1; b < s.repeats; ++b)
            for (std::int64_t j = 0; j < s.length; ++j)
              EXPECT_TRUE(plans.at(s.first + j).same_ops(plans.at(s.first + b * s.length + j)))
                  << what << " segment " << i << " block " << b;
          // ...and not those of the next segment, else the two would be one.
          bool differs = false;
          for (std::int64_t j = 0; j < std::min(s.length, p.segments[i + 1].length); ++j)
            differs = differs || !plans.at(s.first + j).same_ops(plans.at(p.segments[i + 1].first + j));
          EXPECT_TRUE(differs) << what << " segments " << i << " and " << i + 1;
        }
        // The steady block repeats: three periods on, the plans are the same.
        const std::int64_t first = p.steady().first, len = p.period();
        for (std::int64_t s = first; s < first + 3 * len; ++s)
          EXPECT_TRUE(plans.at(s).same_ops(plans.at(s + len))) << what << " step " << s;
        // The steady state starts as early as it can: the step before it does not repeat.
        if (first > 0) {
          EXPECT_FALSE(plans.at(first - 1).same_ops(plans.at(first - 1 + len))) << what;
        }
        EXPECT_EQ(StepPattern::from_json(p.to_json()).to_json(), p.to_json()) << what;
        ++checked;
      }
  EXPECT_GE(checked, 20);
}

TEST(StepPattern, PowerSgdWarmsUpUntilStartIter) {
  StrategyConfig c = config("overlap", "powersgd", 1);
  c.codec_options["start_iter"] = "1000";
  c.bucket_cap = c.first_bucket_cap = 0;  // one bucket: the rebuild changes nothing
  const StepPattern p = Strategy(c, kStepMlp, {4, 1, 16, 1}).pattern();
  ASSERT_EQ(p.segments.size(), 2u);
  EXPECT_EQ(p.segments[0].first, 0);
  EXPECT_EQ(p.segments[0].length, 1);
  EXPECT_EQ(p.segments[0].repeats, 1000);
  EXPECT_NE(p.segments[0].what.find("start_iter 1000"), std::string::npos) << p.segments[0].what;
  EXPECT_EQ(p.warmup_steps(), 1000);
  EXPECT_EQ(p.period(), 1);
}

TEST(StepPattern, LocalSgdWarmupThenBlocksOfItsPeriod) {
  StrategyConfig c = config("local_sgd", "none", 1);
  c.policy_options = {{"local_sgd_warmup", "20"}, {"local_sgd_period", "4"}};
  const StepPattern p = Strategy(c, kStepMlp, {4, 1, 16, 1}).pattern();
  EXPECT_EQ(p.warmup_steps(), 20);
  EXPECT_EQ(p.period(), 4);
  EXPECT_NE(p.steady().what.find("averaged every 4 steps"), std::string::npos) << p.steady().what;
  // Without a warm-up every step is part of the pattern from the start (the rebuild is a layout change the
  // first step's plans already show on this MLP only when buckets match; here they differ).
  c.policy_options["local_sgd_warmup"] = "0";
  c.bucket_cap = c.first_bucket_cap = 0;
  const StepPattern q = Strategy(c, kStepMlp, {4, 1, 16, 1}).pattern();
  EXPECT_EQ(q.warmup_steps(), 0);
  EXPECT_EQ(q.period(), 4);
  EXPECT_EQ(q.segments.size(), 1u);
}

TEST(StepPattern, AccumulationBlocksAreItsWindows) {
  StrategyConfig c = config("overlap", "none", 4);
  c.bucket_cap = c.first_bucket_cap = 0;
  const StepPattern p = Strategy(c, kStepMlp, {4, 1, 16, 1}).pattern();
  ASSERT_EQ(p.segments.size(), 1u);
  EXPECT_EQ(p.period(), 4);
  EXPECT_NE(p.steady().what.find("4 micro-steps per optimizer step"), std::string::npos);
}

TEST(StepPattern, RebuildThatChangesBucketsIsAWarmupStep) {
  // The default MLP with caps that put its weights in different buckets before and after the rebuild.
  const ModelSpec m = ModelSpec::mlp({784, 1024, 1024, 1024, 10});
  StrategyConfig c = config("overlap", "none", 1);
  c.bucket_cap = 25u << 20;
  c.first_bucket_cap = 1u << 20;
  const Strategy s(c, m, {4, 1, 16, 1});
  Strategy rebuilt(c, m, {4, 1, 16, 1});
  const bool changes = rebuilt.observe_ready_order(m.expected_ready_order());
  const StepPattern p = s.pattern();
  EXPECT_EQ(p.warmup_steps(), changes ? 1 : 0);
  if (changes) {
    EXPECT_NE(p.segments[0].what.find("rebuild"), std::string::npos);
  }
}

TEST(StepWindow, WholeBlocksAfterWarmupAndSetup) {
  StepPattern p;
  p.segments = {{0, 1, 20, "w"}, {20, 4, 0, "s"}};
  StepWindow w = steady_window(p, 60, 1);
  EXPECT_EQ(w.first, 20);
  EXPECT_EQ(w.end, 60);
  w = steady_window(p, 63, 22);  // starts at the next block boundary, ends at the last whole block
  EXPECT_EQ(w.first, 24);
  EXPECT_EQ(w.end, 60);
  w = steady_window(p, 23, 1);  // no whole block
  EXPECT_EQ(w.steps(), 0);
  StepPattern one;
  one.segments = {{0, 1, 0, "s"}};
  w = steady_window(one, 10, 1);
  EXPECT_EQ(w.first, 1);
  EXPECT_EQ(w.end, 10);
}

}  // namespace
}  // namespace ddplab
