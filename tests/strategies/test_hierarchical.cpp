// Hierarchical allreduce: correct for every world size, count and ranks per node (dividing n or not,
// 1, >= n), bit-identical across ranks, and only 2(N-1)/N of S/L per rank crossing node boundaries.
#include <gtest/gtest.h>

#include "ddplab/core/error.hpp"
#include "ddplab/strategies/schedule.hpp"
#include "schedule_checks.hpp"

namespace ddplab {
namespace {

// Bytes rank r sends to ranks on other nodes.
std::size_t cross_node_bytes(const Schedule& s, int r, int L) {
  std::size_t elems = 0;
  for (const auto& step : s.ranks[static_cast<std::size_t>(r)])
    for (const auto& snd : step.sends)
      if (snd.peer / L != r / L) elems += snd.chunk.count;
  return elems * 4;
}

TEST(Hierarchical, AllreduceEqualsReferenceSum) {
  for (int n = 1; n <= 17; ++n)
    for (int L : {1, 2, 3, 4, 5, 8, n, n + 3})
      for (std::size_t count : test::counts_for(n)) {
        SCOPED_TRACE("ranks per node " + std::to_string(L));
        test::check_allreduce_sum(hierarchical_allreduce(n, count, L));
      }
  test::check_allreduce_sum(make_schedule("hierarchical", ScheduleParams{7, 1001, 2}));
}

TEST(Hierarchical, BitIdenticalAcrossRanksInFloat) {
  for (int n = 2; n <= 17; ++n)
    for (int L : {1, 2, 3, 4, 6})
      for (std::size_t count : {std::size_t{37}, std::size_t{1000}}) {
        SCOPED_TRACE("ranks per node " + std::to_string(L));
        test::check_bit_identical(hierarchical_allreduce(n, count, L), 11u + n);
      }
}

TEST(Hierarchical, StepsAndBytesFollowThePhases) {
  const std::size_t count = 720720, S = count * 4;  // divisible by every L and N used here
  struct Case {
    int n, L;
  };
  for (Case c : {Case{4, 2}, Case{8, 2}, Case{8, 4}, Case{12, 3}, Case{12, 4}, Case{16, 4}, Case{16, 8}, Case{6, 1},
                 Case{6, 6}}) {
    const int N = c.n / c.L;
    const Schedule s = hierarchical_allreduce(c.n, count, c.L);
    EXPECT_EQ(s.ranks[0].size(), static_cast<std::size_t>(2 * (c.L - 1) + 2 * (N - 1))) << c.n << "/" << c.L;
    // Intra-node reduce-scatter and all-gather: (L-1)/L S each; cross-node ring on S/L: 2(N-1)/N S/L.
    const std::size_t intra = 2 * (c.L - 1) * S / c.L, inter = 2 * (N - 1) * (S / c.L) / N;
    for (int r = 0; r < c.n; ++r) {
      EXPECT_EQ(s.bytes_sent(r, 4), intra + inter) << c.n << "/" << c.L << " rank " << r;
      EXPECT_EQ(cross_node_bytes(s, r, c.L), inter) << c.n << "/" << c.L << " rank " << r;
    }
  }
}

TEST(Hierarchical, OneRankPerNodeOrOneNodeIsARing) {
  for (int n : {3, 5, 8}) {
    const auto ring = test::traffic(ring_allreduce(n, 1000));
    for (int L : {1, n, n + 2}) {
      const auto h = test::traffic(hierarchical_allreduce(n, 1000, L));
      EXPECT_EQ(h.steps, ring.steps) << n << "/" << L;
      EXPECT_EQ(h.total, ring.total) << n << "/" << L;
    }
  }
  EXPECT_THROW(hierarchical_allreduce(4, 10, 0), ddplab::InputError);
  EXPECT_THROW(hierarchical_allreduce(0, 10, 2), ddplab::InputError);
}

TEST(Hierarchical, ShortLastNodeTakesSeveralChunks) {
  // 4 ranks per node, 10 ranks: the last node has 2 ranks, each owning 2 of the 4 chunks.
  const Schedule s = hierarchical_allreduce(10, 4000, 4);
  // A chunk is 1000 elements; a 3-node ring allreduce of it sends 2/3 of it, 1333 elements.
  EXPECT_EQ(cross_node_bytes(s, 0, 4), 1333u * 4);
  EXPECT_EQ(cross_node_bytes(s, 8, 4), 2 * 1333u * 4);
  EXPECT_EQ(cross_node_bytes(s, 9, 4), 2 * 1333u * 4);
}

}  // namespace
}  // namespace ddplab
