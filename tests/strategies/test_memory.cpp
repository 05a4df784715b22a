// The per-device memory model (memory.hpp) against hand computations: an MLP 784-128-10 has
// N = 784*128 + 128 + 128*10 + 10 = 101,770 parameters; in fp32, 407,080 bytes each for parameters and
// gradients; Adam keeps two slots (814,160 bytes for the whole model); one micro-batch of 32 keeps
// 32 * (128 + 10) * 4 = 17,664 bytes of layer outputs. The runtime's side is tests/mpi/test_device_memory.cpp.
#include <gtest/gtest.h>

#include "ddplab/strategies/memory.hpp"

namespace ddplab {
namespace {

constexpr double kN = 101'770;

Strategy make(const std::string& policy, int world, const std::string& codec = "none", StrategyConfig c = {}) {
  c.name = policy;
  c.policy = policy;
  c.schedule = policy == "ps" ? "native" : "ring";
  c.codec = codec;
  StrategyContext ctx;
  ctx.world_size = world;
  ctx.ranks_per_node = world;
  ctx.batch_size = 32;
  return Strategy(c, ModelSpec::mlp({784, 128, 10}), ctx);
}

const OptimizerInfo& adam() { return *find_optimizer("adam"); }

TEST(DeviceMemory, DataParallelKeepsEverythingOnEveryRank) {
  const Strategy s = make("overlap", 4);
  for (int r = 0; r < 4; ++r) {
    const DeviceMemory m = device_memory(s, r, adam(), 0);
    EXPECT_EQ(m.parameters, 407'080);
    EXPECT_EQ(m.gradients, 407'080);
    EXPECT_EQ(m.optimizer, 814'160);
    EXPECT_EQ(m.codec, 0);
    EXPECT_EQ(m.activations, 17'664);
    EXPECT_EQ(m.total(), 407'080 + 407'080 + 814'160 + 17'664);
  }
  EXPECT_EQ(device_memory(s, 0, *find_optimizer("sgd"), 0).optimizer, 407'080);       // momentum: one slot
  EXPECT_EQ(device_memory(s, 0, *find_optimizer("lamb"), 0).optimizer, 3 * 407'080);  // two slots and scratch
}

TEST(DeviceMemory, ZeroOneKeepsTheOptimizerStateOfItsChunk) {
  // One bucket (the model is under the 1 MiB first bucket) cut in 4: 25,443 elements for ranks 0 and 1
  // (101,770 = 4 * 25,442 + 2), 25,442 for ranks 2 and 3.
  const Strategy s = make("zero1", 4);
  ASSERT_EQ(s.bucketing().buckets.size(), 1u);
  EXPECT_EQ(device_memory(s, 0, adam(), 0).optimizer, 8.0 * 25'443);
  EXPECT_EQ(device_memory(s, 1, adam(), 0).optimizer, 8.0 * 25'443);
  EXPECT_EQ(device_memory(s, 3, adam(), 0).optimizer, 8.0 * 25'442);
  EXPECT_EQ(device_memory(s, 3, adam(), 0).parameters, 407'080);  // ZeRO-1 shards the optimizer only
  const auto [rank, largest] = largest_device_memory(s, adam(), 0);
  EXPECT_EQ(rank, 0);
  EXPECT_EQ(largest.optimizer, 8.0 * 25'443);
}

TEST(DeviceMemory, ZeroTwoKeepsTheGradientsOfItsChunkToo) {
  // As ZeRO-1, and 4 bytes per element of the chunk for the gradients: 101,772 bytes on ranks 0 and 1,
  // 101,768 on 2 and 3, the whole model's 407,080 once over the four.
  const Strategy s = make("zero2", 4);
  EXPECT_EQ(device_memory(s, 0, adam(), 0).gradients, 4.0 * 25'443);
  EXPECT_EQ(device_memory(s, 3, adam(), 0).gradients, 4.0 * 25'442);
  EXPECT_EQ(device_memory(s, 3, adam(), 0).optimizer, 8.0 * 25'442);
  EXPECT_EQ(device_memory(s, 3, adam(), 0).parameters, 407'080);
  double summed = 0;
  for (int r = 0; r < 4; ++r) summed += device_memory(s, r, adam(), 0).gradients;
  EXPECT_EQ(summed, 407'080);
  const auto [rank, largest] = largest_device_memory(s, adam(), 0);
  EXPECT_EQ(rank, 0);
  EXPECT_EQ(largest.total(), 407'080 + 4.0 * 25'443 + 8.0 * 25'443 + 17'664);
}

TEST(DeviceMemory, ParameterServersKeepTheStateOfTheShardsTheyServe) {
  StrategyConfig c;
  c.policy_options["ps_servers"] = "2";
  const Strategy s = make("ps", 4, "none", c);  // workers 0 and 1, servers 2 and 3
  for (int worker : {0, 1}) {
    EXPECT_EQ(device_memory(s, worker, adam(), 0).optimizer, 0);
    EXPECT_EQ(device_memory(s, worker, adam(), 0).activations, 17'664);
  }
  // 101,770 in two shards of 50,885; a server runs no forward.
  for (int server : {2, 3}) {
    EXPECT_EQ(device_memory(s, server, adam(), 0).optimizer, 8.0 * 50'885);
    EXPECT_EQ(device_memory(s, server, adam(), 0).activations, 0);
  }
}

TEST(DeviceMemory, CodecStateComesFromTheCodec) {
  // Top-k with error feedback keeps a residual of the whole bucket: 4N bytes.
  StrategyConfig c;
  c.codec_options = {{"ratio", "0.01"}};
  EXPECT_EQ(device_memory(make("overlap", 2, "topk", c), 0, adam(), 0).codec, 4 * kN);
  // PowerSGD keeps nothing before start_iter; then its residual and input (2 x 4N bytes) and the warm-start
  // Q (cols x rank) of the matrices it compresses at rank 1: both weights, 128 x 784 ((128 + 784) * 2 <
  // 100,352) and 10 x 128 ((10 + 128) * 2 < 1,280); Q holds 784 + 128 floats. The biases are sent whole.
  c.codec_options = {{"rank", "1"}, {"start_iter", "5"}};
  const Strategy p = make("overlap", 2, "powersgd", c);
  EXPECT_EQ(device_memory(p, 0, adam(), 4).codec, 0);
  EXPECT_EQ(device_memory(p, 0, adam(), 5).codec, 4 * (2 * kN + 784 + 128));
}

TEST(DeviceMemory, DescribesTheTotalAndTheParts) {
  DeviceMemory m;
  m.parameters = 2048;
  m.activations = 3 << 20;
  EXPECT_EQ(describe_memory(m), "3.0 MiB (parameters 2.0 KiB, activations 3.0 MiB)");
  EXPECT_EQ(describe_memory(DeviceMemory{}), "0 B");
}

}  // namespace
}  // namespace ddplab

namespace ddplab {
namespace {

// GPT-3 175B (174,615,846,912 parameters) with Adam under plain DDP needs 16 bytes per parameter on every
// device before any activation, 2.79 TB, far over an 80 GB device; ZeRO-1 over 1024 ranks divides the
// 8 bytes of Adam's state by 1024 but still keeps 8 bytes per parameter of weights and gradients.
TEST(DeviceMemory, ChecksAScenarioAgainstTheDeviceMemory) {
  Scenario sc;
  sc.model.type = ModelType::Table;
  sc.model.table = "gpt3_175b";
  sc.train.optimizer = "adam";
  sc.train.batch_size = 1;
  sc.cluster.device_memory = 80e9;
  StrategyConfig ddp;
  ddp.name = ddp.policy = "overlap";
  const MemoryCheck c = check_memory(sc, ddp, 8, 8);
  constexpr double kParams = 174'615'846'912.0;
  EXPECT_EQ(c.memory.parameters, 4 * kParams);
  EXPECT_EQ(c.memory.optimizer, 8 * kParams);
  EXPECT_GT(c.memory.activations, 0);
  EXPECT_FALSE(c.fits());
  EXPECT_NE(c.describe().find("OUT OF MEMORY: rank 0 needs "), std::string::npos) << c.describe();
  EXPECT_NE(c.describe().find("more than the 74.5 GiB of cluster.device_memory"), std::string::npos) << c.describe();

  StrategyConfig zero1 = ddp;
  zero1.name = zero1.policy = "zero1";
  const MemoryCheck z = check_memory(sc, zero1, 1024, 8);
  EXPECT_LT(z.memory.optimizer, 8 * kParams / 1024 * 1.01);
  EXPECT_GT(z.memory.optimizer, 8 * kParams / 1024 * 0.99);
  EXPECT_FALSE(z.fits());

  // A model that fits, and one without a capacity to check against.
  sc.model.type = ModelType::Mlp;
  sc.model.layers = {784, 128, 10};
  EXPECT_TRUE(check_memory(sc, ddp, 2, 2).fits());
  sc.cluster.device_memory.reset();
  EXPECT_TRUE(check_memory(sc, ddp, 2, 2).fits());
  EXPECT_NE(check_memory(sc, ddp, 2, 2).describe().find("no cluster.device_memory to check it against"),
            std::string::npos);
}

}  // namespace
}  // namespace ddplab
