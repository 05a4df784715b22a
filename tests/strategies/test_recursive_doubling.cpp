// Recursive doubling: correct for every world size and count, bit-identical across ranks, log2 n steps of
// the whole buffer on powers of two, the extra ranks folded in and out otherwise.
#include <gtest/gtest.h>

#include "ddplab/core/error.hpp"
#include "ddplab/strategies/schedule.hpp"
#include "schedule_checks.hpp"

namespace ddplab {
namespace {

TEST(RecursiveDoubling, AllreduceEqualsReferenceSum) {
  for (int n = 1; n <= 17; ++n)
    for (std::size_t count : test::counts_for(n)) test::check_allreduce_sum(recursive_doubling_allreduce(n, count));
  test::check_allreduce_sum(make_schedule("recursive_doubling", ScheduleParams{6, 1001, 2}));
}

TEST(RecursiveDoubling, BitIdenticalAcrossRanksInFloat) {
  for (int n = 2; n <= 17; ++n)
    for (std::size_t count : {std::size_t{37}, std::size_t{1000}})
      test::check_bit_identical(recursive_doubling_allreduce(n, count), 11u + n);
}

TEST(RecursiveDoubling, WholeBufferInEachOfLogNSteps) {
  const std::size_t count = 1000, S = count * 4;
  for (int n : {1, 2, 4, 8, 16}) {
    int levels = 0;
    while ((2 << levels) <= n) ++levels;
    const Schedule s = recursive_doubling_allreduce(n, count);
    EXPECT_EQ(s.ranks[0].size(), static_cast<std::size_t>(levels)) << n;
    for (int r = 0; r < n; ++r) EXPECT_EQ(s.bytes_sent(r, 4), levels * S) << "n=" << n << " rank " << r;
  }
  // 6 ranks: 4 in the power-of-two phase; ranks 0 and 2 fold into 1 and 3 and get the sum back.
  const Schedule six = recursive_doubling_allreduce(6, count);
  EXPECT_EQ(six.ranks[0].size(), 4u);
  EXPECT_EQ(six.bytes_sent(0, 4), S);
  EXPECT_EQ(six.bytes_sent(1, 4), 3 * S);  // two exchanges and the result back to rank 0
  EXPECT_EQ(six.bytes_sent(5, 4), 2 * S);
  EXPECT_THROW(recursive_doubling_allreduce(0, 10), ddplab::InputError);
}

}  // namespace
}  // namespace ddplab
