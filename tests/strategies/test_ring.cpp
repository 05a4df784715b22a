// The ring schedule, executed in memory (no transport) against a reference sum, for every world size.
#include <gtest/gtest.h>

#include <numeric>

#include "ddplab/strategies/schedule.hpp"

namespace ddplab {
namespace {

// Runs a schedule on n in-memory buffers: each step's messages are taken from the senders' buffers before
// any receiver applies its step, as a real transport would deliver them.
void simulate_in_memory(const Schedule& s, std::vector<std::vector<double>>& bufs) {
  const std::size_t steps = s.ranks[0].size();
  for (const auto& r : s.ranks) ASSERT_EQ(r.size(), steps);
  for (std::size_t k = 0; k < steps; ++k) {
    std::vector<std::vector<std::vector<double>>> inbox(bufs.size());  // per receiver, in recv order
    auto snapshot = bufs;
    for (std::size_t r = 0; r < bufs.size(); ++r)
      for (const RecvOp& rv : s.ranks[r][k].recvs) {
        // Find the matching send of the peer in the same step.
        bool found = false;
        for (const SendOp& sd : s.ranks[static_cast<std::size_t>(rv.peer)][k].sends)
          if (sd.peer == static_cast<int>(r)) {
            ASSERT_EQ(sd.chunk.count, rv.chunk.count);
            for (std::size_t i = 0; i < rv.chunk.count; ++i) {
              double& dst = bufs[r][rv.chunk.offset + i];
              const double v = snapshot[static_cast<std::size_t>(rv.peer)][sd.chunk.offset + i];
              dst = rv.mode == RecvMode::Reduce ? dst + v : v;
            }
            found = true;
          }
        ASSERT_TRUE(found) << "rank " << r << " step " << k << " receives from " << rv.peer << " who sends nothing";
      }
  }
}

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
      simulate_in_memory(s, bufs);
      for (int r = 0; r < n; ++r) EXPECT_EQ(bufs[static_cast<std::size_t>(r)], ref) << "n=" << n << " count=" << count;
    }
}

TEST(Ring, SendsTwiceNMinusOneChunksPerRank) {
  const Schedule s = ring_allreduce(4, 1000);
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(s.ranks[static_cast<std::size_t>(r)].size(), 6u);
    EXPECT_EQ(s.bytes_sent(r, 4), 2 * 3 * 250 * 4u);
  }
  EXPECT_THROW(make_schedule("bogus", 4, 10), std::invalid_argument);
  EXPECT_THROW(ring_allreduce(0, 10), std::invalid_argument);
}

}  // namespace
}  // namespace ddplab
