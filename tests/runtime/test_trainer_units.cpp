// The trainer's units that decide something on their own, without a job: the replicas' checksum verdict and
// the data's plan of steps.
#include <gtest/gtest.h>

#include <cstring>

#include "numbered_dataset.hpp"
#include "trainer_checks.hpp"
#include "trainer_data.hpp"

namespace ddplab {
namespace {

TEST(ReplicaChecksums, FnvOneAOverTheBytes) {
  EXPECT_EQ(parameter_checksum(nullptr, 0), 1469598103934665603ull);  // the offset basis
  std::vector<float> p = {1.0f, -2.5f, 3.25f};
  const std::uint64_t before = parameter_checksum(p.data(), p.size());
  std::uint32_t bits = 0;
  std::memcpy(&bits, &p[1], sizeof bits);
  bits ^= 1u;
  std::memcpy(&p[1], &bits, sizeof bits);
  EXPECT_NE(parameter_checksum(p.data(), p.size()), before);
}

TEST(ReplicaChecksums, AgreeingWorkersPass) {
  EXPECT_EQ(judge_checksums({7, 7, 7}, {1, 1, 1}, 4, 4), "");
  // A dedicated server holds shards, not a replica: its checksum is not compared.
  EXPECT_EQ(judge_checksums({7, 7, 9}, {1, 1, 0}, 4, 4), "");
}

TEST(ReplicaChecksums, AMajorityNamesTheOddRanks) {
  EXPECT_EQ(judge_checksums({0x25, 0x25, 0x78, 0x25}, {1, 1, 1, 1}, 7, 4),
            "step 7: the parameters of rank 2 differ from the other replicas' (checksum 0000000000000078, not "
            "0000000000000025): replicas diverged (train.consistency_every = 4)");
  EXPECT_EQ(judge_checksums({0x25, 0x78, 0x25, 0x25, 0x79}, {1, 1, 1, 1, 1}, 3, 1),
            "step 3: the parameters of ranks 1, 4 differ from the other replicas' (checksum 0000000000000078, not "
            "0000000000000025): replicas diverged (train.consistency_every = 1)");
}

TEST(ReplicaChecksums, WithoutAMajorityEveryGroupIsNamed) {
  EXPECT_EQ(judge_checksums({0x25, 0x78}, {1, 1}, 7, 4),
            "step 7: the replicas' parameters disagree and no checksum is held by a majority (rank 0 0000000000000025; "
            "rank 1 0000000000000078): replicas diverged (train.consistency_every = 4)");
}

Scenario data_scenario(int batch, int epochs, int max_steps) {
  Scenario sc;
  sc.train.batch_size = batch;
  sc.train.epochs = epochs;
  sc.train.max_steps = max_steps;
  sc.train.seed = 3;
  return sc;
}

TEST(TrainerDataPlan, StepsPerEpochAndRun) {
  const Dataset train = test::numbered_dataset(105, 2);  // 53 samples a replica of 2 (padded)
  const DataPlan p = plan_data(data_scenario(10, 3, 0), "s", train, {0, 2, 1}, 1);
  EXPECT_EQ(p.sampler->per_rank(), 53u);
  EXPECT_EQ(p.steps_per_epoch, 6);  // the last batch holds 3
  EXPECT_EQ(p.total_steps, 18);
  EXPECT_TRUE(p.histograms.empty());  // iid's cost a shuffle per rank: rank 0's only
  EXPECT_EQ(p.samples_at(5, 3), 6);   // every worker's batch
  EXPECT_EQ(plan_data(data_scenario(10, 3, 7), "s", train, {1, 2, 1}, 1).total_steps, 7);  // train.max_steps
}

TEST(TrainerDataPlan, APipelineDropsABatchShorterThanItsMicrobatches) {
  const Dataset train = test::numbered_dataset(105, 2);
  Scenario sc = data_scenario(10, 2, 0);
  sc.parallel.microbatches = 4;
  const DataPlan p = plan_data(sc, "s", train, {0, 2, 4}, 0);
  EXPECT_EQ(p.steps_per_epoch, 5);  // 3 samples left over: fewer than 4 microbatches
  EXPECT_EQ(p.total_steps, 10);
  EXPECT_EQ(p.histograms.size(), 2u);  // rank 0 prints and stores every share's classes
}

TEST(TrainerDataPlan, JoinTakesTheLongestShareAndCountsWhatEachStepTakes) {
  const Dataset train = test::numbered_dataset(120, 2);
  Scenario sc = data_scenario(8, 1, 0);
  sc.data.partition = "quantity";
  sc.data.skew = 2.0;
  sc.data.uneven = "join";
  const DataPlan p = plan_data(sc, "s", train, {0, 3, 1}, 1);
  ASSERT_TRUE(p.join);
  EXPECT_EQ(p.steps_per_epoch, p.join->per_epoch());
  std::int64_t taken = 0;
  for (std::int64_t s = 0; s < p.steps_per_epoch; ++s) taken += p.samples_at(s, 8);
  EXPECT_EQ(taken, 120);  // every sample once an epoch, whatever each step's batch
  // The last step is the longest share's alone: a sync then divides by the ranks that took a batch.
  const std::int64_t last = p.steps_per_epoch - 1;
  EXPECT_EQ(p.join_divisor(sc.data, last, 1), p.join->active(last));
  EXPECT_LT(p.join_divisor(sc.data, last, 1), 3);
  sc.data.join_divide_by_initial = true;
  EXPECT_EQ(p.join_divisor(sc.data, last, 1), 3);
}

}  // namespace
}  // namespace ddplab
