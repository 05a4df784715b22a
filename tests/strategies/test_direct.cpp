// Direct (all-to-all) allreduce: correct for every world size and count, bit-identical across ranks,
// 2(n-1)/n of the buffer per rank in 2 steps.
#include <gtest/gtest.h>

#include "ddplab/core/error.hpp"
#include "ddplab/strategies/schedule.hpp"
#include "schedule_checks.hpp"

namespace ddplab {
namespace {

TEST(Direct, AllreduceEqualsReferenceSum) {
  for (int n = 1; n <= 17; ++n)
    for (std::size_t count : test::counts_for(n)) test::check_allreduce_sum(direct_allreduce(n, count));
  test::check_allreduce_sum(make_schedule("direct", ScheduleParams{5, 1001, 2}));
}

TEST(Direct, BitIdenticalAcrossRanksInFloat) {
  for (int n = 2; n <= 17; ++n)
    for (std::size_t count : {std::size_t{37}, std::size_t{1000}})
      test::check_bit_identical(direct_allreduce(n, count), 3u + n);
}

TEST(Direct, TwoStepsAndTwiceNMinusOneOverNOfTheBuffer) {
  const std::size_t count = 720720, S = count * 4;  // divisible by 1..16
  EXPECT_EQ(direct_allreduce(1, count).ranks[0].size(), 0u);
  for (int n = 2; n <= 16; ++n) {
    const Schedule s = direct_allreduce(n, count);
    for (int r = 0; r < n; ++r) {
      const auto& steps = s.ranks[static_cast<std::size_t>(r)];
      ASSERT_EQ(steps.size(), 2u);
      EXPECT_EQ(steps[0].sends.size(), static_cast<std::size_t>(n - 1));
      EXPECT_EQ(steps[1].recvs.size(), static_cast<std::size_t>(n - 1));
      EXPECT_EQ(s.bytes_sent(r, 4), 2 * (n - 1) * S / n) << "n=" << n << " rank " << r;
    }
  }
  EXPECT_THROW(direct_allreduce(0, 10), ddplab::InputError);
}

}  // namespace
}  // namespace ddplab
