// Run under mpirun: the native allreduce and every schedule, executed over point-to-point, against a
// reference sum that every rank computes for itself.
#include <gtest/gtest.h>

#include "mpi_test_main.hpp"

#include <cmath>

#include "ddplab/runtime/communicator.hpp"
#include "ddplab/runtime/schedule_executor.hpp"
#include "ddplab/strategies/half.hpp"

namespace ddplab {
namespace {

// Values that sum exactly in float, in any order, so results can be compared bit for bit.
float value(int rank, std::size_t i) { return static_cast<float>((rank + 1) * 3 + static_cast<int>(i % 97)); }

std::vector<float> reference(int world, std::size_t count) {
  std::vector<float> ref(count, 0.0f);
  for (int r = 0; r < world; ++r)
    for (std::size_t i = 0; i < count; ++i) ref[i] += value(r, i);
  return ref;
}

TEST(MpiCollectives, NativeAllreduceEqualsReferenceSum) {
  Communicator& c = *g_comm;
  for (std::size_t count : {1u, 7u, 1000u, 100003u}) {
    std::vector<float> buf(count);
    for (std::size_t i = 0; i < count; ++i) buf[i] = value(c.rank(), i);
    c.allreduce_sum(buf.data(), count);
    EXPECT_EQ(buf, reference(c.size(), count)) << "count " << count;
  }
}

TEST(MpiCollectives, EveryAllreduceScheduleOverPointToPointEqualsReferenceSum) {
  Communicator& c = *g_comm;
  for (const ScheduleInfo& info : schedules()) {
    if (info.backend_own) continue;  // no Schedule: the backend runs it
    if (info.collective != Collective::Allreduce) continue;
    // Counts below, equal to and above the world size, none divisible by 2 or 3; 2 ranks per node so
    // hierarchical schedules see several nodes.
    for (std::size_t count : {1u, 5u, 1001u, 262147u}) {
      const Schedule s = make_schedule(info.name, ScheduleParams{c.size(), count, 2});
      std::vector<float> buf(count);
      for (std::size_t i = 0; i < count; ++i) buf[i] = value(c.rank(), i);
      ScheduleExecutor exec(c);
      exec.run(s, buf.data());
      EXPECT_EQ(buf, reference(c.size(), count)) << info.name << " count " << count;
      // The bytes recorded per peer are the schedule's own.
      std::map<int, std::uint64_t> expected;
      for (const auto& step : s.ranks[static_cast<std::size_t>(c.rank())])
        for (const auto& snd : step.sends) expected[snd.peer] += snd.chunk.count * sizeof(float);
      for (auto it = expected.begin(); it != expected.end();) it = it->second == 0 ? expected.erase(it) : std::next(it);
      auto recorded = exec.bytes_to_peer();
      for (auto it = recorded.begin(); it != recorded.end();) it = it->second == 0 ? recorded.erase(it) : std::next(it);
      EXPECT_EQ(recorded, expected) << info.name << " count " << count;
      EXPECT_EQ(exec.bytes_sent(), s.bytes_sent(c.rank(), sizeof(float)));
    }
  }
}

TEST(MpiCollectives, ReduceScatterThenAllGatherSchedulesEqualReferenceSum) {
  Communicator& c = *g_comm;
  for (const ScheduleInfo& info : schedules()) {
    if (info.backend_own) continue;  // no Schedule: the backend runs it
    if (info.collective != Collective::ReduceScatter) continue;
    for (std::size_t count : {1u, 5u, 1001u, 262147u}) {
      std::vector<float> buf(count);
      for (std::size_t i = 0; i < count; ++i) buf[i] = value(c.rank(), i);
      const std::vector<float> ref = reference(c.size(), count);
      const Schedule rs = make_schedule(info.name, ScheduleParams{c.size(), count, 2}, Collective::ReduceScatter);
      ScheduleExecutor e1(c);
      e1.run(rs, buf.data());
      EXPECT_EQ(e1.bytes_sent(), rs.bytes_sent(c.rank(), sizeof(float)));
      const Chunk mine = chunk_of(count, c.size(), c.rank());
      for (std::size_t i = 0; i < count; ++i) {
        if (i >= mine.offset && i < mine.offset + mine.count)
          ASSERT_EQ(buf[i], ref[i]) << info.name << " " << count;
        else
          buf[i] = -12345.0f;  // outside the shard the content is unspecified: make it garbage
      }
      const Schedule ag = make_schedule(info.name, ScheduleParams{c.size(), count, 2}, Collective::AllGather);
      ScheduleExecutor e2(c);
      e2.run(ag, buf.data());
      EXPECT_EQ(e2.bytes_sent(), ag.bytes_sent(c.rank(), sizeof(float)));
      EXPECT_EQ(buf, ref) << info.name << " count " << count;
    }
  }
}

TEST(MpiCollectives, NativeShardCollectivesAndHalfPrecisionAllreduce) {
  Communicator& c = *g_comm;
  const std::size_t count = 1001;
  std::vector<float> buf(count);
  for (std::size_t i = 0; i < count; ++i) buf[i] = value(c.rank(), i);
  const std::vector<float> ref = reference(c.size(), count);
  c.reduce_scatter_sum(buf.data(), count);
  const Chunk mine = chunk_of(count, c.size(), c.rank());
  for (std::size_t i = mine.offset; i < mine.offset + mine.count; ++i) ASSERT_EQ(buf[i], ref[i]);
  c.all_gather_shards(buf.data(), count);
  EXPECT_EQ(buf, ref);
  // Small integers are exact in fp16, so the half sum must equal the float reference.
  std::vector<std::uint16_t> half(count);
  for (std::size_t i = 0; i < count; ++i) half[i] = float_to_f16(value(c.rank(), i));
  c.allreduce_sum(half.data(), count, ElemType::F16);
  for (std::size_t i = 0; i < count; ++i) ASSERT_EQ(f16_to_float(half[i]), ref[i]) << i;
}

TEST(MpiCollectives, BroadcastAndGather) {
  Communicator& c = *g_comm;
  int v = c.rank() == 0 ? 1234 : -1;
  c.broadcast(&v, sizeof v, 0);
  EXPECT_EQ(v, 1234);
  const int mine = c.rank() * 10;
  std::vector<int> all(static_cast<std::size_t>(c.size()));
  c.gather(&mine, sizeof mine, all.data(), 0);
  if (c.rank() == 0) {
    for (int r = 0; r < c.size(); ++r) EXPECT_EQ(all[static_cast<std::size_t>(r)], r * 10);
  }
}

// split(): odd and even ranks form two groups (rank 0 alone is left out with a negative color when there
// are 3 ranks or more). Each group's native allreduce and ring over point-to-point sum its own ranks only,
// in the job's rank order.
TEST(MpiCollectives, SplitGroupsReduceOnlyTheirOwnRanks) {
  Communicator& c = *g_comm;
  const bool left_out = c.size() >= 3 && c.rank() == 0;
  auto group = c.split(left_out ? -1 : c.rank() % 2);
  if (left_out) {
    EXPECT_EQ(group, nullptr);
  } else {
    ASSERT_NE(group, nullptr);
    std::vector<int> members;  // the job's ranks in this group, ascending
    for (int r = c.size() >= 3 ? 1 : 0; r < c.size(); ++r)
      if (r % 2 == c.rank() % 2) members.push_back(r);
    ASSERT_EQ(group->size(), static_cast<int>(members.size()));
    EXPECT_EQ(members[static_cast<std::size_t>(group->rank())], c.rank());
    EXPECT_EQ(group->local_rank(), c.local_rank());
    const std::size_t count = 1001;
    std::vector<float> want(count, 0.0f);
    for (int r : members)
      for (std::size_t i = 0; i < count; ++i) want[i] += value(r, i);
    std::vector<float> buf(count);
    for (std::size_t i = 0; i < count; ++i) buf[i] = value(c.rank(), i);
    group->allreduce_sum(buf.data(), count);
    EXPECT_EQ(buf, want) << "native";
    for (std::size_t i = 0; i < count; ++i) buf[i] = value(c.rank(), i);
    ScheduleExecutor exec(*group);
    exec.run(make_schedule("ring", group->size(), count), buf.data());
    EXPECT_EQ(buf, want) << "ring";
  }
  c.barrier();  // the world still works after the groups
}

}  // namespace
}  // namespace ddplab
