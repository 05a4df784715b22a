// Bucketing (as PyTorch DDP assigns buckets), the plan of each policy, and [[strategy]] validation.
#include <gtest/gtest.h>

#include <algorithm>

#include <nlohmann/json.hpp>

#include "ddplab/core/error.hpp"
#include "ddplab/strategies/model_library.hpp"
#include "ddplab/strategies/strategy.hpp"

namespace ddplab {
namespace {

const ModelSpec kWideMlp = ModelSpec::mlp({784, 1024, 1024, 1024, 10});

std::vector<int> params_of(const Bucketing& b, int bucket) {
  return b.buckets.at(static_cast<std::size_t>(bucket)).params;
}

TEST(Bucketing, DefaultCapsGiveDdpsAssignmentInReverseParameterOrder) {
  // Parameters: 0 w0 (784x1024), 1 b0, 2 w1 (1024x1024, 4 MiB), 3 b1, 4 w2, 5 b2, 6 w3 (1024x10), 7 b3.
  const Bucketing b = make_buckets(kWideMlp, reverse_parameter_order(kWideMlp), 25u << 20, 1u << 20);
  ASSERT_EQ(b.buckets.size(), 2u);
  // The first bucket closes once it reaches 1 MiB: b3, w3, b2 are small, w2 takes it past the cap.
  EXPECT_EQ(params_of(b, 0), (std::vector<int>{7, 6, 5, 4}));
  EXPECT_EQ(params_of(b, 1), (std::vector<int>{3, 2, 1, 0}));
  EXPECT_EQ(b.buckets[0].count, 10u + 10240u + 1024u + 1048576u);
  EXPECT_EQ(b.buckets[1].offset, b.buckets[0].count);
  EXPECT_EQ(b.total, kWideMlp.parameter_count());
  // Gradient-as-bucket-view: parameters sit back to back in bucket order.
  EXPECT_EQ(b.grad_offset[7], 0u);
  EXPECT_EQ(b.grad_offset[6], 10u);
  EXPECT_EQ(b.grad_offset[0], b.buckets[1].offset + 1024u + 1048576u + 1024u);
  // Tensor shapes travel with the bucket, for codecs.
  EXPECT_EQ(b.buckets[0].layout.tensors[1].rows, 10u);
  EXPECT_EQ(b.buckets[0].layout.tensors[1].cols, 1024u);
}

TEST(Bucketing, CapsSmallerThanATensorGiveOneTensorPerBucketAndZeroMeansOneBucket) {
  const Bucketing small = make_buckets(kWideMlp, reverse_parameter_order(kWideMlp), 1, 1);
  EXPECT_EQ(small.buckets.size(), kWideMlp.params.size());
  const Bucketing one = make_buckets(kWideMlp, reverse_parameter_order(kWideMlp), 0, 0);
  EXPECT_EQ(one.buckets.size(), 1u);
  EXPECT_THROW(make_buckets(kWideMlp, {0, 1, 2}, 1, 1), ddplab::InputError);
  EXPECT_THROW(make_buckets(kWideMlp, {0, 0, 2, 3, 4, 5, 6, 7}, 1, 1), ddplab::InputError);
}

TEST(Strategy, BucketsAreRebuiltFromTheObservedReadyOrder) {
  StrategyConfig c;
  c.policy = "overlap";
  Strategy s(c, kWideMlp, {4, 1, 64, 1});
  // Backward produces each layer's weight, then its bias.
  const std::vector<int> observed{6, 7, 4, 5, 2, 3, 0, 1};
  EXPECT_TRUE(s.observe_ready_order(observed));
  EXPECT_EQ(params_of(s.bucketing(), 0), (std::vector<int>{6, 7, 4}));
  EXPECT_EQ(params_of(s.bucketing(), 1), (std::vector<int>{5, 2, 3, 0, 1}));
  EXPECT_FALSE(s.observe_ready_order(observed));
}

std::vector<std::string> kinds(const StepPlan& p) {
  std::vector<std::string> out;
  for (const auto& op : p.ops)
    out.push_back(std::string(op_name(op.kind)) + (op.index >= 0 ? std::to_string(op.index) : ""));
  return out;
}

TEST(Policies, FlatSyncsOneBucketAfterBackward) {
  StrategyConfig c;  // flat, native
  Strategy s(c, kWideMlp, {4, 1, 64, 1});
  const StepPlan p = s.plan(0);
  EXPECT_EQ(kinds(p), (std::vector<std::string>{"forward", "backward3", "backward2", "backward1", "backward0",
                                                "sync_grads0", "optimizer0"}));
  EXPECT_EQ(p.ops[5].deps, std::vector<int>{4});
  ASSERT_EQ(p.ops[5].calls.size(), 1u);
  EXPECT_EQ(p.ops[5].calls[0].count, kWideMlp.parameter_count());
  EXPECT_EQ(p.ops[5].schedule, "native");
  // Forward FLOPs: 2 per weight per sample plus bias and ReLU.
  EXPECT_NEAR(p.ops[0].flops, 64.0 * (2.0 * (784 * 1024 + 2 * 1024 * 1024 + 1024 * 10) + 2.0 * (3 * 1024 + 10)), 1.0);
}

TEST(Policies, SyncBatchNormSumsStatisticsBetweenForwardChunksAndGradientSumsBetweenLayers) {
  ModelConfig m;
  m.type = ModelType::Cnn;  // conv1 bn1 conv2 bn2 fc1 fc2: 16 and 32 channels
  m.conv = {16, 32};
  m.bn = "sync";
  const ModelSpec spec = model_spec_for(m);
  StrategyConfig c;  // flat, native: one bucket after backward
  const StepPlan p = Strategy(c, spec, {4, 1, 8, 1}).plan(0);
  // A chunk through layer i takes the moments of sync layer i + 1.
  EXPECT_EQ(kinds(p),
            (std::vector<std::string>{"forward0", "sync_bn_stats1", "forward2", "sync_bn_stats3", "forward5",
                                      "backward5", "backward4", "backward3", "sync_bn_grads3", "backward2", "backward1",
                                      "sync_bn_grads1", "backward0", "sync_grads0", "optimizer0"}));
  EXPECT_EQ(p.ops[2].deps, (std::vector<int>{1}));     // normalising waits for the summed moments
  EXPECT_EQ(p.ops[9].deps, (std::vector<int>{7, 8}));  // conv2's backward waits for bn2's summed gradients
  EXPECT_EQ(p.ops[1].calls.at(0).count, 2u * 16 + 1);  // sums, squares and the row count
  EXPECT_EQ(p.ops[8].calls.at(0).count, 2u * 32);
  EXPECT_TRUE(is_comm(OpKind::SyncBnStats) && is_comm(OpKind::SyncBnGrads));
  // The chunks split the forward work: together they are the model's.
  EXPECT_NEAR(p.ops[0].flops + p.ops[2].flops + p.ops[4].flops, 8.0 * spec.forward_flops(),
              1e-6 * spec.forward_flops());
  // Local statistics need no op.
  m.bn = "local";
  EXPECT_EQ(Strategy(c, model_spec_for(m), {4, 1, 8, 1}).plan(0).ops.size(), 9u);
}

TEST(Policies, OverlapStartsEachBucketWhenItsLastGradientIsReady) {
  StrategyConfig c;
  c.policy = "overlap";
  c.schedule = "ring";
  Strategy s(c, kWideMlp, {4, 1, 64, 1});
  const StepPlan p = s.plan(0);
  EXPECT_EQ(kinds(p), (std::vector<std::string>{"forward", "backward3", "backward2", "backward1", "backward0",
                                                "sync_grads0", "sync_grads1", "optimizer0", "optimizer1"}));
  EXPECT_EQ(p.ops[5].deps, std::vector<int>{2});  // bucket 0 = layers 3 and 2: ready after backward2
  EXPECT_EQ(p.ops[6].deps, std::vector<int>{4});
  EXPECT_EQ(p.ops[7].deps, std::vector<int>{5});  // each optimizer waits only for its own bucket
  EXPECT_EQ(p.ops[8].deps, std::vector<int>{6});
  EXPECT_NO_THROW(p.to_json().dump());
}

TEST(Policies, AccumulationSyncsEveryKthMicroStepOnly) {
  StrategyConfig c;
  c.policy = "overlap";
  c.accumulate_steps = 3;
  Strategy s(c, kWideMlp, {4, 1, 64, 1});
  for (int step = 0; step < 6; ++step) {
    const StepPlan p = s.plan(step);
    const bool comm = std::any_of(p.ops.begin(), p.ops.end(), [](const PlanOp& o) { return is_comm(o.kind); });
    EXPECT_EQ(p.sync, step % 3 == 2) << step;
    EXPECT_EQ(comm, step % 3 == 2) << step;
  }
}

TEST(Policies, LocalSgdWarmsUpThenAveragesParametersEveryPeriod) {
  StrategyConfig c;
  c.policy = "local_sgd";
  c.policy_options = {{"local_sgd_warmup", "2"}, {"local_sgd_period", "3"}};
  Strategy s(c, kWideMlp, {4, 1, 64, 1});
  auto count = [](const StepPlan& p, OpKind k) {
    return std::count_if(p.ops.begin(), p.ops.end(), [&](const PlanOp& o) { return o.kind == k; });
  };
  for (int step = 0; step < 2; ++step) EXPECT_EQ(count(s.plan(step), OpKind::SyncGrads), 2) << step;
  for (int step = 2; step < 9; ++step) {
    const StepPlan p = s.plan(step);
    EXPECT_EQ(count(p, OpKind::SyncGrads), 0) << step;
    EXPECT_EQ(count(p, OpKind::SyncParams), (step - 2 + 1) % 3 == 0 ? 2 : 0) << step;
  }
}

TEST(Policies, Zero1ReduceScattersUpdatesItsShardAndAllGathers) {
  StrategyConfig c;
  c.policy = "zero1";
  c.schedule = "ring";
  Strategy s(c, kWideMlp, {4, 1, 64, 1});
  const StepPlan p = s.plan(0);
  EXPECT_EQ(kinds(p), (std::vector<std::string>{"forward", "backward3", "backward2", "backward1", "backward0",
                                                "reduce_scatter0", "reduce_scatter1", "shard_optimizer0",
                                                "shard_optimizer1", "all_gather0", "all_gather1"}));
  EXPECT_EQ(p.ops[9].deps, std::vector<int>{7});
  EXPECT_EQ(p.ops[5].calls[0].collective, Collective::ReduceScatter);
}

Scenario parse_strategy(const std::string& strategy) { return parse_scenario("[[strategy]]\n" + strategy, "x.toml"); }

std::string validation_error(const Scenario& sc) {
  try {
    validate_strategies(sc);
  } catch (const ScenarioError& e) {
    return e.what();
  }
  return "";
}

// A checkpoint is taken where an accumulation window ends: its interval must be a multiple of every window.
TEST(Validation, CheckpointEveryMustBeAMultipleOfEveryAccumulationWindow) {
  const std::string two = "[[strategy]]\nname = \"a\"\n[[strategy]]\nname = \"b\"\naccumulate_steps = 4\n";
  EXPECT_EQ(validation_error(parse_scenario("[train]\ncheckpoint_every = 8\n" + two, "c.toml")), "");
  EXPECT_EQ(validation_error(parse_scenario("[train]\ncheckpoint_every = 6\n" + two, "c.toml")),
            "c.toml:2:20: train.checkpoint_every must be a multiple of strategy[1].accumulate_steps (4), got 6: a "
            "checkpoint is taken where an accumulation window ends");
  EXPECT_EQ(validation_error(parse_scenario("[train]\ncheckpoint_every = 0\n" + two, "c.toml")), "");
}

// data.uneven = "join" runs on every policy whose entry says it joins; the others are refused by name.
TEST(Validation, JoinIsRefusedByPoliciesThatCannotShadow) {
  for (const PolicyInfo& p : policies()) {
    const Scenario sc =
        parse_scenario("[data]\npartition = \"quantity\"\nuneven = \"join\"\n[[strategy]]\npolicy = \"" + p.name +
                           "\"\n" + (p.shards == Shards::Servers ? "" : "schedule = \"ring\"\n"),
                       "j.toml");
    const std::string error = validation_error(sc);
    if (p.joins) {
      EXPECT_EQ(error, "") << p.name;
    } else {
      EXPECT_EQ(error.substr(0, error.find(" (")), "j.toml:5:10: strategy[0].policy cannot run data.uneven = \"join\"")
          << p.name;
    }
  }
}

TEST(Validation, NamesTheFileLineAndFieldOfBadStrategies) {
  const std::string dir = std::string(DDPLAB_SOURCE_DIR) + "/tests/strategies/data/";
  const std::string bad_schedule = validation_error(load_scenario(dir + "bad_schedule.toml"));
  EXPECT_EQ(bad_schedule.substr(0, bad_schedule.find(" must")), dir + "bad_schedule.toml:3:12: strategy[0].schedule");
  EXPECT_NE(bad_schedule.find("\"halving_doubling\""), std::string::npos) << bad_schedule;
  EXPECT_NE(bad_schedule.find("got \"tree\""), std::string::npos) << bad_schedule;
  EXPECT_EQ(validation_error(load_scenario(dir + "bad_policy.toml")),
            dir +
                "bad_policy.toml:3:10: strategy[0].policy must be one of \"flat\", \"bucketed\", \"overlap\", "
                "\"local_sgd\", \"zero1\", \"zero2\", \"zero3\", \"ps\", got \"sometimes\"");
  EXPECT_EQ(validation_error(parse_strategy("codec = \"zip\"\n")).substr(0, 29), "x.toml:2:9: strategy[0].codec");
  const std::string opt = validation_error(parse_strategy("codec = \"topk\"\ncodec_options = { ratio = 2 }\n"));
  EXPECT_EQ(opt.substr(0, opt.find(' ')), "x.toml:3:27:") << opt;
  EXPECT_NE(opt.find("ratio"), std::string::npos) << opt;
  EXPECT_NE(
      validation_error(parse_strategy("policy = \"zero1\"\ncodec = \"fp16\"\n")).find("must be \"none\" with policy"),
      std::string::npos);
  EXPECT_EQ(validation_error(parse_strategy("policy = \"overlap\"\nschedule = \"ring\"\ncodec = \"powersgd\"\n")), "");
}

}  // namespace
}  // namespace ddplab
