// Double binary tree allreduce: correct for every world size, count and pipeline depth, bit-identical
// across ranks, 2(n-1) S sent over all ranks and at most 2 S by any one, in a step count logarithmic in n.
#include <gtest/gtest.h>

#include "ddplab/core/error.hpp"
#include "ddplab/strategies/schedule.hpp"
#include "schedule_checks.hpp"

namespace ddplab {
namespace {

int log2_ceil(int n) {
  int l = 0;
  while ((1 << l) < n) ++l;
  return l;
}

TEST(DoubleBinaryTree, AllreduceEqualsReferenceSum) {
  for (int n = 1; n <= 17; ++n)
    for (int pipeline : {0, 1, 3})
      for (std::size_t count : test::counts_for(n)) {
        SCOPED_TRACE("pipeline " + std::to_string(pipeline));
        test::check_allreduce_sum(double_binary_tree_allreduce(n, count, pipeline));
      }
  test::check_allreduce_sum(make_schedule("double_binary_tree", ScheduleParams{9, 262147, 2}));
}

TEST(DoubleBinaryTree, BitIdenticalAcrossRanksInFloat) {
  for (int n = 2; n <= 17; ++n)
    for (int pipeline : {1, 4})
      for (std::size_t count : {std::size_t{37}, std::size_t{1000}}) {
        SCOPED_TRACE("pipeline " + std::to_string(pipeline));
        test::check_bit_identical(double_binary_tree_allreduce(n, count, pipeline), 5u + n);
      }
}

TEST(DoubleBinaryTree, EachTreeMovesHalfTheBuffer) {
  const std::size_t count = 1 << 20, S = count * 4;
  for (int n = 2; n <= 64; ++n) {
    const Schedule s = double_binary_tree_allreduce(n, count, 4);
    const auto t = test::traffic(s);
    // Each half goes up and down every edge of its tree once: 2 (n-1) S/2 per tree.
    EXPECT_EQ(t.total, 2 * static_cast<std::size_t>(n - 1) * S) << n;
    // Interior in one tree (up S/2 + two children S/2 each) and leaf in the other (up S/2): at most 2 S.
    EXPECT_LE(t.max_rank, 2 * S) << n;
    // Complementary trees: every rank is an interior node of at least one, so every rank reduces.
    for (int r = 0; r < n; ++r) {
      bool reduces = false;
      for (const auto& step : s.ranks[static_cast<std::size_t>(r)])
        for (const auto& rv : step.recvs) reduces |= rv.mode == RecvMode::Reduce;
      EXPECT_TRUE(reduces) << "n=" << n << " rank " << r << " is a leaf in both trees";
    }
    // Depth about log2 n per tree, up then down, plus the pipeline; conflicts between the two trees on
    // the same (sender, receiver) pair cost a few more steps.
    EXPECT_LE(t.steps, static_cast<std::size_t>(2 * (log2_ceil(n) + 1) + 2 * 4)) << n;
  }
}

TEST(DoubleBinaryTree, PipelineDepthFollowsTheCount) {
  EXPECT_EQ(test::traffic(double_binary_tree_allreduce(2, 1000)).steps, 2u);  // one chunk per half
  EXPECT_EQ(double_binary_tree_allreduce(1, 1000).ranks[0].size(), 0u);
  EXPECT_THROW(double_binary_tree_allreduce(0, 10), ddplab::InputError);
}

}  // namespace
}  // namespace ddplab
