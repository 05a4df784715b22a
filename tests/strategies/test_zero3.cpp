// zero3 (ZeRO-3, FSDP's FULL_SHARD): every forward chunk and backward layer finds its parameter units
// gathered and not given back under it, no gather or reshard of a unit can run while a pass uses it, each
// unit's gradients are reduce-scattered once its lowest layer's backward is done, and the step ends with
// every unit given back. Checked on the plans, for every bucket layout below, with and without prefetch,
// on sync and accumulating micro-steps.
#include <gtest/gtest.h>

#include <algorithm>
#include <set>

#include "ddplab/core/scenario.hpp"
#include "ddplab/strategies/layout.hpp"
#include "ddplab/strategies/memory.hpp"
#include "ddplab/strategies/model_library.hpp"
#include "ddplab/strategies/strategy.hpp"

namespace ddplab {
namespace {

StrategyConfig zero3(std::size_t cap, std::size_t first_cap, bool prefetch = true) {
  StrategyConfig c;
  c.name = c.policy = "zero3";
  c.schedule = "ring";
  c.bucket_cap = cap, c.first_bucket_cap = first_cap;
  if (!prefetch) c.policy_options.emplace("zero3_prefetch", "0");
  return c;
}

// anc[i][j]: op j runs before op i because of the plan's dependencies (deps name earlier ops only).
std::vector<std::vector<char>> ancestors(const StepPlan& p) {
  std::vector<std::vector<char>> anc(p.ops.size(), std::vector<char>(p.ops.size(), 0));
  for (const PlanOp& op : p.ops)
    for (int d : op.deps) {
      EXPECT_LT(d, op.id);
      auto& mine = anc[static_cast<std::size_t>(op.id)];
      mine[static_cast<std::size_t>(d)] = 1;
      const auto& theirs = anc[static_cast<std::size_t>(d)];
      for (std::size_t j = 0; j < theirs.size(); ++j) mine[j] |= theirs[j];
    }
  return anc;
}

// The buckets of each whole-batch pass op (Forward chunk, Backward of a layer), by op id.
std::vector<std::set<int>> units_used(const Strategy& s, const StepPlan& p) {
  const ModelSpec& m = s.model();
  std::vector<int> bucket_of_param(m.params.size(), -1);
  for (const Bucket& b : s.bucketing().buckets)
    for (int q : b.params) bucket_of_param[static_cast<std::size_t>(q)] = b.id;
  const auto of_layers = [&](int first, int last) {
    std::set<int> u;
    for (std::size_t q = 0; q < m.params.size(); ++q)
      if (m.params[q].layer >= first && m.params[q].layer <= last) u.insert(bucket_of_param[q]);
    return u;
  };
  std::vector<std::set<int>> used(p.ops.size());
  int from = 0;
  for (const PlanOp& op : p.ops) {
    if (op.kind == OpKind::Forward) {
      const int last = op.index < 0 ? static_cast<int>(m.layers.size()) - 1 : op.index;
      used[static_cast<std::size_t>(op.id)] = of_layers(from, last);
      from = last + 1;
    } else if (op.kind == OpKind::Backward) {
      used[static_cast<std::size_t>(op.id)] = of_layers(op.index, op.index);
    }
  }
  EXPECT_EQ(from, static_cast<int>(m.layers.size())) << "the forward chunks cover the model";
  return used;
}

// The properties of the header, on one plan; returns the number of AllGathers per bucket.
std::vector<int> check_plan(const Strategy& s, const StepPlan& p) {
  const auto anc = ancestors(p);
  const auto used = units_used(s, p);
  const std::size_t n = s.bucketing().buckets.size();
  const auto before = [&](const PlanOp& a, const PlanOp& b) {
    return anc[static_cast<std::size_t>(b.id)][static_cast<std::size_t>(a.id)] != 0;
  };
  std::vector<int> gathers(n, 0);
  for (const PlanOp& op : p.ops)
    if (op.kind == OpKind::AllGather) ++gathers.at(static_cast<std::size_t>(op.index));
  for (const PlanOp& use : p.ops)
    for (int u : used[static_cast<std::size_t>(use.id)]) {
      SCOPED_TRACE(std::string(op_name(use.kind)) + " " + std::to_string(use.index) + ", unit " + std::to_string(u));
      const PlanOp* last_gather = nullptr;
      for (const PlanOp& op : p.ops) {
        if ((op.kind != OpKind::AllGather && op.kind != OpKind::Reshard) || op.index != u) continue;
        // Ordered with the use, one way or the other: no gather rewrites, and no reshard drops, what it reads.
        EXPECT_TRUE(before(op, use) || before(use, op)) << op_name(op.kind) << " op " << op.id << " races the use";
        if (op.kind == OpKind::AllGather && before(op, use)) last_gather = &op;
      }
      if (!last_gather) {
        ADD_FAILURE() << "used without a gather";
        continue;
      }
      for (const PlanOp& op : p.ops)
        if (op.kind == OpKind::Reshard && op.index == u && before(op, use)) {
          EXPECT_TRUE(before(op, *last_gather)) << "given back after its gather, before this use";
        }
    }
  for (std::size_t b = 0; b < n; ++b) {
    SCOPED_TRACE("unit " + std::to_string(b));
    // The step ends with the unit given back: its last gather is followed by a reshard.
    const PlanOp *gather = nullptr, *reshard = nullptr;
    for (const PlanOp& op : p.ops)
      if (op.index == static_cast<int>(b)) {
        if (op.kind == OpKind::AllGather) gather = &op;
        if (op.kind == OpKind::Reshard && gather && before(*gather, op)) reshard = &op;
      }
    EXPECT_NE(gather, nullptr) << "never gathered";
    EXPECT_NE(reshard, nullptr) << "still whole when the step ends";
    // Its gradients: reduce-scattered after every backward that adds to them, then its shard updated; no
    // parameter gather follows the update (the next step's forward gathers).
    int scatters = 0, updates = 0;
    for (const PlanOp& op : p.ops) {
      if (op.index != static_cast<int>(b)) continue;
      if (op.kind == OpKind::ReduceScatter) {
        ++scatters;
        for (const PlanOp& use : p.ops)
          if (use.kind == OpKind::Backward && used[static_cast<std::size_t>(use.id)].count(static_cast<int>(b))) {
            EXPECT_TRUE(before(use, op)) << "reduce-scattered before the backward of layer " << use.index;
          }
      }
      if (op.kind == OpKind::ShardOptimizer) {
        ++updates;
        for (const PlanOp& later : p.ops)
          if (later.kind == OpKind::AllGather) {
            EXPECT_FALSE(before(op, later)) << "a gather after the update";
          }
      }
    }
    EXPECT_EQ(scatters, p.sync ? 1 : 0);
    EXPECT_EQ(updates, p.sync ? 1 : 0);
  }
  return gathers;
}

const ModelSpec kZeroMlp = ModelSpec::mlp({784, 256, 128, 10});

TEST(Zero3, EveryPassFindsItsUnitsGatheredAndEveryUnitEndsGivenBack) {
  // One bucket per tensor or several tensors, and a layer's weight and bias apart.
  for (std::size_t cap : {std::size_t{1024}, std::size_t{100000}, std::size_t{1} << 22})
    for (bool prefetch : {true, false}) {
      SCOPED_TRACE("bucket_cap " + std::to_string(cap) + (prefetch ? ", prefetch" : ", no prefetch"));
      Strategy s(zero3(cap, cap / 4 + 1, prefetch), kZeroMlp, {4, 1, 32, 1});
      for (int step : {0, 1}) {
        if (step == 1) s.observe_ready_order(kZeroMlp.expected_ready_order());
        const std::vector<int> gathers = check_plan(s, s.plan(step));
        // A unit the forward's last chunk uses stays whole into the backward: one gather; the others two.
        for (int g : gathers) EXPECT_TRUE(g == 1 || g == 2);
        EXPECT_GE(std::count(gathers.begin(), gathers.end(), 1), 1);
        if (s.bucketing().buckets.size() > 2) {
          EXPECT_GE(std::count(gathers.begin(), gathers.end(), 2), 1);
        }
      }
    }
}

// Its buckets are its units, and a unit is whole layers (FSDP wraps whole modules): DDP's buckets, whose
// ready order puts a layer's weight before its bias, would cut layers and make every unit straddle two.
TEST(Zero3, UnitsAreWholeLayers) {
  const ModelSpec m = ModelSpec::mlp({784, 1024, 1024, 1024, 10});
  for (std::size_t cap : {std::size_t{1} << 20, std::size_t{4} << 20, std::size_t{25} << 20}) {
    Strategy s(zero3(cap, 1 << 20), m, {3, 1, 64, 1});
    for (int rebuilt : {0, 1}) {
      if (rebuilt) s.observe_ready_order(m.expected_ready_order());
      std::vector<int> bucket_of_layer(m.layers.size(), -1);
      for (const Bucket& b : s.bucketing().buckets)
        for (int q : b.params) {
          int& owner = bucket_of_layer.at(static_cast<std::size_t>(m.params[static_cast<std::size_t>(q)].layer));
          EXPECT_TRUE(owner == -1 || owner == b.id)
              << "layer " << m.params[static_cast<std::size_t>(q)].layer << " cut, cap " << cap;
          owner = b.id;
        }
    }
    // DDP's buckets of the same caps do cut layers once rebuilt from the ready order.
    StrategyConfig ddp = zero3(cap, 1 << 20);
    ddp.policy = "zero1";
    Strategy z1(ddp, m, {3, 1, 64, 1});
    z1.observe_ready_order(m.expected_ready_order());
    const auto layer_of = [&](int q) { return m.params[static_cast<std::size_t>(q)].layer; };
    const auto& buckets = z1.bucketing().buckets;
    bool cut = false;
    for (std::size_t b = 1; b < buckets.size(); ++b)
      cut |= layer_of(buckets[b].params.front()) == layer_of(buckets[b - 1].params.back());
    EXPECT_TRUE(cut) << "cap " << cap << ": the contrast above proves nothing";
  }
}

TEST(Zero3, SyncBatchNormChunksKeepTheirStatisticsSums) {
  ModelConfig m;
  m.type = ModelType::Cnn;
  m.conv = {4, 8};
  m.hidden = {16};
  m.bn = "sync";
  const ModelSpec spec = model_spec_for(m);
  Strategy s(zero3(2048, 512), spec, {4, 1, 8, 1});
  const StepPlan p = s.plan(0);
  check_plan(s, p);
  // Each forward chunk before a sync layer is followed by its moments' allreduce, which the next chunk waits for.
  const auto anc = ancestors(p);
  for (const PlanOp& op : p.ops)
    if (op.kind == OpKind::SyncBnStats) {
      const int layer = op.index;
      for (const PlanOp& f : p.ops)
        if (f.kind == OpKind::Forward && f.index >= layer) {
          EXPECT_TRUE(anc[static_cast<std::size_t>(f.id)][static_cast<std::size_t>(op.id)])
              << "forward through " << f.index;
          break;
        }
    }
}

TEST(Zero3, PrefetchGathersTheNextUnitWhileTheCurrentOneComputes) {
  // One bucket per layer: 3 units, 3 forward chunks.
  const ModelSpec m = ModelSpec::mlp({4, 4, 4, 4});
  for (bool prefetch : {true, false}) {
    Strategy s(zero3(80, 80, prefetch), m, {2, 1, 4, 1});
    ASSERT_EQ(s.bucketing().buckets.size(), 3u);
    const StepPlan p = s.plan(0);
    const auto anc = ancestors(p);
    std::vector<const PlanOp*> forwards, gathers;
    for (const PlanOp& op : p.ops) {
      if (op.kind == OpKind::Forward) forwards.push_back(&op);
      if (op.kind == OpKind::AllGather && gathers.size() < 3) gathers.push_back(&op);  // the forward's
    }
    ASSERT_EQ(forwards.size(), 3u);
    ASSERT_EQ(gathers.size(), 3u);
    const auto waits = [&](const PlanOp* a, const PlanOp* b) {
      return anc[static_cast<std::size_t>(a->id)][static_cast<std::size_t>(b->id)] != 0;
    };
    // The second chunk's unit: with prefetch its gather waits for nothing, without it waits for the first chunk.
    EXPECT_EQ(waits(gathers[1], forwards[0]), !prefetch);
    // The third's: after the first chunk with prefetch, after the second without.
    EXPECT_TRUE(waits(gathers[2], forwards[0]));
    EXPECT_EQ(waits(gathers[2], forwards[1]), !prefetch);
  }
}

TEST(Zero3, AccumulatingMicroStepsGatherAndGiveBackWithoutSyncingGradients) {
  StrategyConfig c = zero3(100000, 20000);
  c.accumulate_steps = 2;
  Strategy s(c, kZeroMlp, {4, 1, 32, 1});
  const StepPlan quiet = s.plan(0), sync = s.plan(1);
  EXPECT_FALSE(quiet.sync);
  check_plan(s, quiet);
  check_plan(s, sync);
  std::size_t gathers = 0;
  for (const PlanOp& op : quiet.ops) {
    EXPECT_NE(op.kind, OpKind::ReduceScatter);
    gathers += op.kind == OpKind::AllGather;
  }
  EXPECT_GT(gathers, s.bucketing().buckets.size());
}

// Hand-computed: 3 units of 20 parameters on 2 ranks, 10 each. Prefetch keeps two units whole at the
// forward's peak (the chunk's and the next), without it one: 30 + 2 * 10 or 30 + 10 parameters.
TEST(Zero3, TheMemoryModelHoldsTheShardAndTheUnitsWholeAtThePeak) {
  const ModelSpec m = ModelSpec::mlp({4, 4, 4, 4});
  const OptimizerInfo& sgd = *find_optimizer("sgd");
  for (bool prefetch : {true, false}) {
    Strategy s(zero3(80, 80, prefetch), m, {2, 1, 4, 1});
    ASSERT_EQ(s.bucketing().buckets.size(), 3u);
    for (const Bucket& b : s.bucketing().buckets) ASSERT_EQ(s.shard(b.id, 0).count, 10u);
    for (int rank : {0, 1}) {
      const DeviceMemory d = device_memory(s, rank, sgd, 1);
      EXPECT_EQ(d.parameters, 4.0 * (30 + (prefetch ? 20 : 10))) << "rank " << rank;
      EXPECT_EQ(d.gradients, 4.0 * 30);
    }
  }
}

// Under [train] precision a ZeRO stage's shards travel in 16 bits (DeepSpeed's fp16 partitions, FSDP's
// param_dtype and reduce_dtype): the same elements, half the bytes. The runtime trains in fp32 only.
TEST(Zero3, ShardsTravelInTheTrainingPrecision) {
  for (const char* policy : {"zero1", "zero3"}) {
    StrategyConfig c = zero3(100000, 20000);
    c.policy = policy;
    StrategyContext ctx{4, 1, 32, 1};
    const StepPlan fp32 = Strategy(c, kZeroMlp, ctx).plan(0);
    ctx.activations = ElemType::BF16;
    const StepPlan bf16 = Strategy(c, kZeroMlp, ctx).plan(0);
    ASSERT_EQ(fp32.ops.size(), bf16.ops.size());
    int shards = 0;
    for (std::size_t i = 0; i < fp32.ops.size(); ++i) {
      if (fp32.ops[i].kind != OpKind::AllGather && fp32.ops[i].kind != OpKind::ReduceScatter) continue;
      ++shards;
      EXPECT_EQ(fp32.ops[i].calls.at(0).type, ElemType::F32) << policy;
      EXPECT_EQ(bf16.ops[i].calls.at(0).type, ElemType::BF16) << policy;
      EXPECT_EQ(bf16.ops[i].calls.at(0).count, fp32.ops[i].calls.at(0).count) << policy;
    }
    EXPECT_GT(shards, 0) << policy;
  }
}

TEST(Zero3, IsRefusedWithAModelParallelLayout) {
  Scenario sc;
  sc.path = "s.toml";
  sc.model.layers = {784, 64, 10};
  sc.parallel.tp = 2;
  sc.parallel.where["tp"] = "s.toml:3:6";
  StrategyConfig c = zero3(100000, 20000);
  sc.strategies = {c};
  try {
    validate_parallel(sc);
    FAIL() << "zero3 with tp = 2 accepted";
  } catch (const ScenarioError& e) {
    EXPECT_NE(std::string(e.what()).find("s.toml:3:6: parallel.tp splits the model, which strategy[0] (\"zero3\", "
                                         "policy \"zero3\") cannot shard"),
              std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace ddplab
