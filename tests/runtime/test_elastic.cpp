// Elastic resume (runtime/elastic.hpp): the optimizer state a new world starts from is whole, each element
// taken from the old rank that updated it, for every policy of the registry; the step keeps the samples seen.
#include <gtest/gtest.h>

#include <algorithm>

#include "ddplab/runtime/elastic.hpp"

namespace ddplab {
namespace {

const std::vector<int> kLayers = {20, 16, 12, 4};
constexpr int kOldWorld = 3;

Strategy make(const PolicyInfo& p) {
  StrategyConfig c;
  c.name = c.policy = p.name;
  c.schedule = p.shards == Shards::Servers ? "native" : "ring";
  c.bucket_cap = 256;
  c.first_bucket_cap = 128;
  StrategyContext ctx;
  ctx.world_size = ctx.ranks_per_node = kOldWorld;
  Strategy s(c, ModelSpec::mlp(kLayers), ctx);
  // The buckets as DDP rebuilt them from an order other than the expected one.
  std::vector<int> order = ModelSpec::mlp(kLayers).expected_ready_order();
  std::reverse(order.begin(), order.end());
  s.observe_ready_order(order);
  return s;
}

// A layout-ordered vector in parameter order, as the executor saves it.
std::vector<float> ordered(const std::vector<float>& flat, const Strategy& s) {
  std::vector<float> out;
  for (std::size_t i = 0; i < s.model().params.size(); ++i) {
    const auto from = flat.begin() + static_cast<std::ptrdiff_t>(s.bucketing().grad_offset[i]);
    out.insert(out.end(), from, from + static_cast<std::ptrdiff_t>(s.model().params[i].count()));
  }
  return out;
}

TEST(ElasticCheckpoint, OptimizerStateIsWholeEachElementFromTheRankThatUpdatedIt) {
  for (const PolicyInfo& p : policies()) {
    SCOPED_TRACE(p.name);
    const Strategy s = make(p);
    const std::size_t n = s.model().parameter_count();
    // owner[e]: the rank whose update element e (in the layout) got, -1 when every rank updates it.
    std::vector<int> owner(n, p.shards == Shards::None ? -1 : -2);
    for (const Bucket& b : s.bucketing().buckets)
      for (int r = 0; r < kOldWorld; ++r) {
        const Chunk c = s.shard(b.id, r);
        for (std::size_t e = 0; e < c.count; ++e) owner[b.offset + c.offset + e] = r;
      }
    ASSERT_EQ(std::count(owner.begin(), owner.end(), -2), 0) << "an element no rank updates";
    std::vector<Checkpoint> old(kOldWorld);
    for (int r = 0; r < kOldWorld; ++r) {
      std::vector<float> params(n), state(n);
      for (std::size_t e = 0; e < n; ++e) {
        params[e] = static_cast<float>(r * 100000 + static_cast<int>(e));
        // What an old rank holds where it did not update: stale, here marked negative.
        state[e] = owner[e] == r || owner[e] == -1 ? static_cast<float>((r + 1) * 100000 + static_cast<int>(e)) : -1.0f;
      }
      old[static_cast<std::size_t>(r)].tensors = {
          {"params", ordered(params, s)}, {"optimizer.0", ordered(state, s)}, {"codec.0/residual", {1.0f}}};
    }
    const Checkpoint merged = elastic_checkpoint(old, s);
    EXPECT_EQ(merged.tensors.at("params"), old[0].tensors.at("params")) << "rank 0's parameters";
    EXPECT_EQ(merged.tensors.count("codec.0/residual"), 0u) << "codec state is not carried";
    std::vector<float> want(n);
    for (std::size_t e = 0; e < n; ++e)
      want[e] = static_cast<float>((std::max(owner[e], 0) + 1) * 100000 + static_cast<int>(e));
    EXPECT_EQ(merged.tensors.at("optimizer.0"), ordered(want, s));
  }
}

TEST(ElasticCheckpoint, RefusesFilesThatDoNotFitTheOldWorld) {
  const Strategy s = make(policies().front());
  EXPECT_THROW(elastic_checkpoint({}, s), CheckpointError);
  std::vector<Checkpoint> old(kOldWorld);
  for (auto& c : old) c.tensors["params"] = {1.0f};
  EXPECT_THROW(elastic_checkpoint(old, s), CheckpointError) << "parameters of another model";
  old.pop_back();
  EXPECT_THROW(elastic_checkpoint(old, s), CheckpointError) << "a rank's file missing";
}

TEST(ElasticStep, KeepsTheSamplesSeenAtTheStartOfAWindow) {
  EXPECT_EQ(elastic_step(20, 2, 4, 1), 10);
  EXPECT_EQ(elastic_step(20, 4, 2, 1), 40);
  EXPECT_EQ(elastic_step(20, 2, 3, 1), 13);
  EXPECT_EQ(elastic_step(20, 2, 3, 2), 12);
  EXPECT_EQ(elastic_step(0, 2, 3, 2), 0);
}

}  // namespace
}  // namespace ddplab
