// Rabenseifner's halving-doubling allreduce: correct for every world size and count, bit-identical across
// ranks, and bandwidth-optimal in 2 log2 n steps on powers of two.
#include <gtest/gtest.h>

#include "ddplab/core/error.hpp"
#include "ddplab/strategies/schedule.hpp"
#include "schedule_checks.hpp"

namespace ddplab {
namespace {

int log2_floor(int n) {
  int l = 0;
  while ((2 << l) <= n) ++l;
  return l;
}

TEST(HalvingDoubling, AllreduceEqualsReferenceSum) {
  for (int n = 1; n <= 17; ++n)
    for (std::size_t count : test::counts_for(n)) test::check_allreduce_sum(halving_doubling_allreduce(n, count));
  test::check_allreduce_sum(make_schedule("halving_doubling", ScheduleParams{6, 1001, 2}));
}

TEST(HalvingDoubling, BitIdenticalAcrossRanksInFloat) {
  for (int n = 2; n <= 17; ++n)
    for (std::size_t count : {std::size_t{37}, std::size_t{1000}})
      test::check_bit_identical(halving_doubling_allreduce(n, count), 7u + n);
}

TEST(HalvingDoubling, PowerOfTwoSendsTwiceNMinusOneOverNInTwoLogNSteps) {
  const std::size_t count = 16 * 1024, S = count * 4;
  for (int n : {1, 2, 4, 8, 16}) {
    const Schedule s = halving_doubling_allreduce(n, count);
    EXPECT_EQ(s.ranks[0].size(), static_cast<std::size_t>(2 * log2_floor(n))) << n;
    for (int r = 0; r < n; ++r) EXPECT_EQ(s.bytes_sent(r, 4), 2 * (n - 1) * S / n) << "n=" << n << " rank " << r;
  }
}

TEST(HalvingDoubling, NonPowerOfTwoFoldsTheExtraRanks) {
  const std::size_t count = 16 * 1024, S = count * 4;
  for (int n : {3, 5, 6, 7, 12, 17}) {
    const int levels = log2_floor(n), p = 1 << levels, extra = n - p;
    const Schedule s = halving_doubling_allreduce(n, count);
    EXPECT_EQ(s.ranks[0].size(), static_cast<std::size_t>(2 * levels + 2)) << n;
    const std::size_t core = 2 * (p - 1) * S / p;
    for (int r = 0; r < n; ++r) {
      const std::size_t expected = r < 2 * extra ? (r % 2 == 0 ? S : S + core) : core;
      EXPECT_EQ(s.bytes_sent(r, 4), expected) << "n=" << n << " rank " << r;
    }
  }
}

TEST(HalvingDoubling, FirstStepsStayBetweenNeighbours) {
  // Distance doubling: the largest exchange (half the buffer) is between ranks 1 apart in the
  // power-of-two numbering, i.e. on the same node when consecutive ranks share one.
  const Schedule s = halving_doubling_allreduce(8, 800);
  for (int r = 0; r < 8; ++r) {
    ASSERT_EQ(s.ranks[static_cast<std::size_t>(r)][0].sends.size(), 1u);
    EXPECT_EQ(s.ranks[static_cast<std::size_t>(r)][0].sends[0].peer, r ^ 1);
    EXPECT_EQ(s.ranks[static_cast<std::size_t>(r)][0].sends[0].chunk.count, 400u);
  }
  EXPECT_THROW(halving_doubling_allreduce(0, 10), ddplab::InputError);
}

}  // namespace
}  // namespace ddplab
