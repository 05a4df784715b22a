// The ring schedule, executed in memory (no transport) against a reference sum, for every world size.
#include <gtest/gtest.h>

#include <numeric>

#include "ddplab/core/error.hpp"
#include "ddplab/strategies/schedule.hpp"
#include "in_memory.hpp"

namespace ddplab {
namespace {

TEST(ChunkOf, SplitsNearEquallyAndCoversTheBuffer) {
  for (std::size_t count : {0u, 1u, 7u, 10u, 1001u})
    for (int parts = 1; parts <= 9; ++parts) {
      std::size_t next = 0;
      for (int i = 0; i < parts; ++i) {
        const Chunk c = chunk_of(count, parts, i);
        EXPECT_EQ(c.offset, next);
        EXPECT_LE(c.count, count / parts + 1);
        next += c.count;
      }
      EXPECT_EQ(next, count);
    }
}

TEST(Ring, AllreduceEqualsReferenceSumForEveryWorldSize) {
  for (int n = 1; n <= 9; ++n)
    for (std::size_t count : {1u, 5u, 13u, 100u}) {
      const Schedule s = ring_allreduce(n, count);
      std::vector<std::vector<double>> bufs(static_cast<std::size_t>(n), std::vector<double>(count));
      std::vector<double> ref(count, 0.0);
      for (int r = 0; r < n; ++r)
        for (std::size_t i = 0; i < count; ++i) {
          bufs[static_cast<std::size_t>(r)][i] = (r + 1) * 1000.0 + static_cast<double>(i);
          ref[i] += bufs[static_cast<std::size_t>(r)][i];
        }
      run_in_memory(s, bufs);
      for (int r = 0; r < n; ++r) EXPECT_EQ(bufs[static_cast<std::size_t>(r)], ref) << "n=" << n << " count=" << count;
    }
}

TEST(Ring, SendsTwiceNMinusOneChunksPerRank) {
  const Schedule s = ring_allreduce(4, 1000);
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(s.ranks[static_cast<std::size_t>(r)].size(), 6u);
    EXPECT_EQ(s.bytes_sent(r, 4), 2 * 3 * 250 * 4u);
  }
  EXPECT_THROW(make_schedule("bogus", 4, 10), ddplab::InputError);
  EXPECT_THROW(ring_allreduce(0, 10), ddplab::InputError);
  EXPECT_THROW(make_schedule("ring", 0, 10), ddplab::InputError);
}

}  // namespace
}  // namespace ddplab
