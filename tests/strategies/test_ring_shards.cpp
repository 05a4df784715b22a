// Standalone ring reduce-scatter and all-gather (ZeRO-1): rank r ends with (or starts with) the sum of
// chunk_of(count, n, r); (n-1)/n of the buffer per rank in n-1 steps; reduce-scatter then all-gather is
// an allreduce.
#include <gtest/gtest.h>

#include "ddplab/core/error.hpp"
#include "ddplab/strategies/schedule.hpp"
#include "schedule_checks.hpp"

namespace ddplab {
namespace {

double shard_value(std::size_t r, std::size_t i) { return static_cast<double>((r + 1) * 1000 + i % 251); }

TEST(RingShards, ReduceScatterLeavesEachRankTheSumOfItsChunk) {
  for (int n = 1; n <= 17; ++n)
    for (std::size_t count : test::counts_for(n)) {
      const Schedule s = make_schedule("ring", ScheduleParams{n, count, 1}, Collective::ReduceScatter);
      EXPECT_EQ(s.collective, Collective::ReduceScatter);
      test::check_rules(s);
      std::vector<std::vector<double>> bufs(static_cast<std::size_t>(n), std::vector<double>(count));
      std::vector<double> ref(count, 0.0);
      for (std::size_t r = 0; r < bufs.size(); ++r)
        for (std::size_t i = 0; i < count; ++i) ref[i] += bufs[r][i] = shard_value(r, i);
      run_in_memory(s, bufs);
      for (int r = 0; r < n; ++r) {
        const Chunk c = chunk_of(count, n, r);
        for (std::size_t i = c.offset; i < c.offset + c.count; ++i)
          ASSERT_EQ(bufs[static_cast<std::size_t>(r)][i], ref[i]) << "n=" << n << " count=" << count << " rank " << r;
      }
    }
}

TEST(RingShards, AllGatherSpreadsEveryChunkEverywhere) {
  for (int n = 1; n <= 17; ++n)
    for (std::size_t count : test::counts_for(n)) {
      const Schedule s = make_schedule("ring", ScheduleParams{n, count, 1}, Collective::AllGather);
      EXPECT_EQ(s.collective, Collective::AllGather);
      test::check_rules(s);
      // Only a rank's own chunk is valid at the start; everything else is garbage.
      std::vector<std::vector<double>> bufs(static_cast<std::size_t>(n), std::vector<double>(count, -1.0));
      std::vector<double> ref(count);
      for (int r = 0; r < n; ++r) {
        const Chunk c = chunk_of(count, n, r);
        for (std::size_t i = c.offset; i < c.offset + c.count; ++i)
          bufs[static_cast<std::size_t>(r)][i] = ref[i] = shard_value(static_cast<std::size_t>(r), i);
      }
      run_in_memory(s, bufs);
      for (int r = 0; r < n; ++r) EXPECT_EQ(bufs[static_cast<std::size_t>(r)], ref) << "n=" << n << " count=" << count;
    }
}

TEST(RingShards, ReduceScatterThenAllGatherIsABitIdenticalAllreduce) {
  for (int n = 1; n <= 17; ++n)
    for (std::size_t count : {std::size_t{37}, std::size_t{1000}}) {
      Schedule s = ring_reduce_scatter(n, count);
      const Schedule ag = ring_all_gather(n, count);
      for (std::size_t r = 0; r < s.ranks.size(); ++r)
        s.ranks[r].insert(s.ranks[r].end(), ag.ranks[r].begin(), ag.ranks[r].end());
      test::check_allreduce_sum(s);
      test::check_bit_identical(s, 13u + n);
    }
}

TEST(RingShards, NMinusOneStepsAndNMinusOneOverNOfTheBuffer) {
  const std::size_t count = 720720, S = count * 4;
  for (int n = 1; n <= 16; ++n)
    for (const Schedule& s : {ring_reduce_scatter(n, count), ring_all_gather(n, count)}) {
      EXPECT_EQ(s.ranks[0].size(), static_cast<std::size_t>(n - 1));
      for (int r = 0; r < n; ++r) EXPECT_EQ(s.bytes_sent(r, 4), (n - 1) * S / n) << s.collective << " n=" << n;
    }
  EXPECT_THROW(make_schedule("tree", ScheduleParams{4, 10, 1}, Collective::ReduceScatter), ddplab::InputError);
  EXPECT_THROW(ring_all_gather(0, 10), ddplab::InputError);
}

}  // namespace
}  // namespace ddplab
