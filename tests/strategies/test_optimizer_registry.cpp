// The optimizer and lr schedule registries: every entry's options work, the lr plan follows its formulas,
// [train] is checked with file:line:col, and clipping puts the global norm before every update in the plan.
#include <gtest/gtest.h>

#include <cmath>
#include <numbers>

#include "ddplab/core/error.hpp"
#include "ddplab/strategies/optimizer.hpp"
#include "ddplab/strategies/strategy.hpp"
#include "optimizer_harness.hpp"

namespace ddplab {
namespace {

TEST(OptimizerRegistry, EveryEntryRunsWithItsDefaultsAndItsExamples) {
  ASSERT_GE(optimizers().size(), 6u);
  for (const OptimizerInfo& o : optimizers()) {
    SCOPED_TRACE(o.name);
    EXPECT_EQ(find_optimizer(o.name), &o);
    EXPECT_GT(o.bytes_per_param, 0);
    OptionValues examples;
    for (const OptionSpec& spec : o.options) {
      EXPECT_TRUE(option_accepts(spec, spec.fallback)) << spec.name;
      EXPECT_TRUE(option_accepts(spec, spec.example)) << spec.name;
      if (o.name != "sgd" || spec.name != "nesterov") examples[spec.name] = spec.example;  // nesterov needs momentum
    }
    for (const OptionValues& values : {OptionValues{}, examples}) {
      const auto after = test::run_updates(o.name, values, test::UpdateSetup{});
      ASSERT_EQ(after.size(), 3u);
      for (std::size_t i = 0; i < after[2].size(); ++i) {
        EXPECT_TRUE(std::isfinite(after[2][i]));
        EXPECT_NE(after[2][i], test::UpdateSetup{}.p0[i]) << "element " << i << " never moved";
      }
    }
    try {
      make_optimizer(o.name, {{"no_such_option", "1"}});
      FAIL() << "an unknown option was accepted";
    } catch (const ddplab::InputError& e) {
      EXPECT_NE(std::string(e.what()).find("unknown option \"no_such_option\""), std::string::npos) << e.what();
    }
  }
  EXPECT_THROW(make_optimizer("adagrad", {}), ddplab::InputError);
}

TrainConfig train_with(const std::string& schedule, OptionValues options = {}) {
  TrainConfig t;
  t.lr = 0.1;
  t.batch_size = 32;
  t.lr_schedule = schedule;
  t.lr_schedule_options = std::move(options);
  return t;
}

TEST(LrPlan, ScalingRulesByGlobalBatch) {
  TrainConfig t = train_with("constant");
  EXPECT_DOUBLE_EQ(make_lr_plan(t, 256, 10).peak, 0.1);  // "none"
  t.lr_scale = "linear";
  EXPECT_DOUBLE_EQ(make_lr_plan(t, 256, 10).peak, 0.8);  // 256 / 32
  t.lr_scale = "sqrt";
  EXPECT_DOUBLE_EQ(make_lr_plan(t, 256, 10).peak, 0.1 * std::sqrt(8.0));
  t.lr_base_batch = 256;
  EXPECT_DOUBLE_EQ(make_lr_plan(t, 256, 10).peak, 0.1);
  t.lr_scale = "linear";
  t.lr_base_batch = 0;
  EXPECT_EQ(make_lr_plan(t, 256, 10).describe(), "lr 0.1 x 8 (linear scaling: global batch 256 / 32) = 0.8");
}

TEST(LrPlan, WarmupThenEachSchedule) {
  TrainConfig t = train_with("constant");
  t.warmup_steps = 4;
  const LrPlan constant = make_lr_plan(t, 32, 20);
  for (int s = 0; s < 4; ++s) EXPECT_DOUBLE_EQ(constant.lr(s), 0.1 * (s + 1) / 4) << "warm-up update " << s;
  EXPECT_DOUBLE_EQ(constant.lr(4), 0.1);
  EXPECT_DOUBLE_EQ(constant.lr(19), 0.1);

  t.lr_schedule = "cosine";
  t.lr_schedule_options = {{"min_factor", "0.1"}};
  const LrPlan cosine = make_lr_plan(t, 32, 20);  // 16 updates of decay after the warm-up
  EXPECT_DOUBLE_EQ(cosine.lr(3), 0.1);
  EXPECT_DOUBLE_EQ(cosine.lr(4), 0.1);
  EXPECT_NEAR(cosine.lr(12), 0.1 * (0.1 + 0.9 * 0.5 * (1 + std::cos(std::numbers::pi * 8 / 15))), 1e-15);
  EXPECT_NEAR(cosine.lr(19), 0.01, 1e-15);  // the floor at the last update, and after
  EXPECT_NEAR(cosine.lr(25), 0.01, 1e-15);
  EXPECT_EQ(cosine.describe(), "lr 0.1, warm-up 4 updates, cosine decay over 16 updates");

  t.lr_schedule = "step";
  t.lr_schedule_options = {{"step_size", "5"}, {"gamma", "0.5"}};
  const LrPlan step = make_lr_plan(t, 32, 20);
  EXPECT_DOUBLE_EQ(step.lr(4 + 4), 0.1);
  EXPECT_DOUBLE_EQ(step.lr(4 + 5), 0.05);
  EXPECT_DOUBLE_EQ(step.lr(4 + 14), 0.025);
  EXPECT_EQ(step.describe(), "lr 0.1, warm-up 4 updates, x 0.5 every 5 updates");

  EXPECT_THROW(make_lr_plan(train_with("linear"), 32, 10), ddplab::InputError);
  EXPECT_THROW(make_lr_plan(train_with("step", {{"gamma", "0"}}), 32, 10), ddplab::InputError);
  for (const LrScheduleInfo& s : lr_schedules()) {
    OptionValues examples;
    for (const OptionSpec& o : s.options) examples[o.name] = o.example;
    const LrPlan p = make_lr_plan(train_with(s.name, examples), 32, 100);
    for (int u = 0; u < 100; ++u) EXPECT_GT(p.lr(u), 0) << s.name << " update " << u;
  }
}

std::string validate_error(const std::string& text) {
  try {
    // [[strategy]] is required; one added at the end leaves the positions of the lines above as they are.
    const bool has = text.find("[[strategy]]") != std::string::npos;
    const Scenario sc = parse_scenario(has ? text : text + "[[strategy]]\nname = \"base\"\n", "o.toml");
    validate_strategies(sc);
    validate_train(sc);
  } catch (const ScenarioError& e) {
    return e.what();
  }
  return "";
}

TEST(ValidateTrain, NamesTheFieldAndItsPosition) {
  EXPECT_EQ(
      validate_error("[train]\noptimizer = \"adagrad\"\n"),
      "o.toml:2:13: train.optimizer must be one of \"sgd\", \"adam\", \"adamw\", \"rmsprop\", \"lars\", \"lamb\", "
      "got \"adagrad\"");
  EXPECT_EQ(validate_error("[train]\noptimizer = \"adam\"\noptimizer_options = { beta2 = 1.0 }\n"),
            "o.toml:3:31: train.optimizer_options.beta2 must be in [0, 1), got 1.0");
  EXPECT_EQ(validate_error("[train]\noptimizer_options = { momentun = 0.9 }\n"),
            "o.toml:2:34: train.optimizer_options.momentun is not an option of optimizer \"sgd\" (known: momentum, "
            "dampening, nesterov)");
  EXPECT_EQ(
      validate_error("[train]\noptimizer_options = { nesterov = true, momentum = 0 }\n"),
      "o.toml:2:21: train.optimizer_options nesterov needs momentum > 0 and dampening = 0, as in torch.optim.SGD");
  EXPECT_EQ(validate_error("[train]\nlr_schedule = \"linear\"\n"),
            "o.toml:2:15: train.lr_schedule must be one of \"constant\", \"cosine\", \"step\", got \"linear\"");
  EXPECT_EQ(validate_error("[train]\nlr_schedule = \"step\"\nlr_schedule_options = { step_size = 0 }\n"),
            "o.toml:3:37: train.lr_schedule_options.step_size must be an integer >= 1, got 0");
  EXPECT_EQ(
      validate_error(
          "[train]\noptimizer = \"lamb\"\n[[strategy]]\nname = \"z\"\npolicy = \"zero1\"\nschedule = \"ring\"\n"),
      "o.toml:2:13: train.optimizer \"lamb\" scales each tensor by a ratio of whole-tensor norms, but strategy[0] "
      "(\"z\") uses policy \"zero1\", which splits the optimizer's work across ranks");
  EXPECT_EQ(validate_error("[train]\noptimizer = \"lars\"\nlr_schedule = \"cosine\"\nclip_grad_norm = 1\n"), "");
}

StepPlan plan_of(const std::string& policy, bool clip, int world = 4) {
  StrategyConfig c;
  c.policy = policy;
  c.schedule = policy == "ps" ? "native" : "ring";
  c.bucket_cap = 4096, c.first_bucket_cap = 1024;
  Strategy s(c, ModelSpec::mlp({20, 64, 32, 10}), {world, 1, 8, 1, clip});
  return s.plan(1);
}

TEST(ClipPlan, TheNormWaitsForEverySyncAndEveryUpdateWaitsForTheNorm) {
  for (const char* policy : {"flat", "overlap", "zero1", "ps", "local_sgd"}) {
    SCOPED_TRACE(policy);
    const StepPlan plain = plan_of(policy, false), clipped = plan_of(policy, true);
    const bool sharded = std::string(policy) == "zero1" || std::string(policy) == "ps";
    EXPECT_EQ(clipped.ops.size(), plain.ops.size() + (sharded ? 2 : 1));
    int norm = -1, sync = -1;
    for (const PlanOp& op : clipped.ops) {
      EXPECT_EQ(op.id, &op - clipped.ops.data());
      for (int d : op.deps) EXPECT_LT(d, op.id) << "not topological";
      if (op.kind == OpKind::GradNorm) norm = op.id;
      if (op.kind == OpKind::NormSync) {
        sync = op.id;
        EXPECT_EQ(op.deps, std::vector<int>{norm});
        ASSERT_EQ(op.calls.size(), 1u);
        EXPECT_EQ(op.calls[0].count, 1u);
      }
    }
    ASSERT_GE(norm, 0);
    EXPECT_EQ(sync >= 0, sharded);
    const int gate = sharded ? sync : norm;
    for (const PlanOp& op : clipped.ops) {
      if (op.kind == OpKind::Optimizer || op.kind == OpKind::ShardOptimizer) {
        EXPECT_NE(std::find(op.deps.begin(), op.deps.end(), gate), op.deps.end())
            << op_name(op.kind) << " " << op.index;
      }
      // Every gradient sync comes before the norm, and the norm waits for each.
      if (op.kind == OpKind::SyncGrads || op.kind == OpKind::ReduceScatter || op.kind == OpKind::Push) {
        EXPECT_LT(op.id, norm);
        const auto& nd = clipped.ops[static_cast<std::size_t>(norm)].deps;
        EXPECT_NE(std::find(nd.begin(), nd.end(), op.id), nd.end()) << op_name(op.kind) << " " << op.index;
      }
    }
  }
}

}  // namespace
}  // namespace ddplab
