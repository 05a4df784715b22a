// `native` as the simulator replays it: Open MPI 4.1's fixed allreduce rules on MPI (the decision table of
// coll_tuned_decision_fixed.c, as runs of Debian 12's Open MPI 4.1.4 on this machine confirmed it), the
// ring on NCCL.
#include <gtest/gtest.h>

#include "ddplab/strategies/plan.hpp"
#include "ddplab/strategies/schedule.hpp"

namespace ddplab {
namespace {

std::string mpi(int p, std::size_t bytes) { return native_schedule("mpi", "allreduce", p, bytes / 4, 4); }

TEST(NativeSchedule, OpenMpiFixedRulesByWorldAndBytes) {
  const std::size_t KiB = 1024, MiB = 1024 * KiB;
  // p = 2 and 3: the ring up to 256 KiB but for the recursive-doubling windows, then Rabenseifner.
  for (int p : {2, 3}) {
    EXPECT_EQ(mpi(p, 64), "recursive_doubling");
    EXPECT_EQ(mpi(p, 4 * KiB), "ring");
    EXPECT_EQ(mpi(p, 12 * KiB), "recursive_doubling");
    EXPECT_EQ(mpi(p, 64 * KiB), "ring");  // "segmented ring" with segment size 0 runs as the ring
    EXPECT_EQ(mpi(p, 256 * KiB - 4), "ring");
    EXPECT_EQ(mpi(p, 256 * KiB), "halving_doubling");
    EXPECT_EQ(mpi(p, 64 * MiB), "halving_doubling");
  }
  EXPECT_EQ(mpi(4, 4 * KiB), "recursive_doubling");
  EXPECT_EQ(mpi(4, 8 * KiB), "halving_doubling");
  EXPECT_EQ(mpi(8, 4 * KiB), "recursive_doubling");
  EXPECT_EQ(mpi(8, 16 * MiB), "halving_doubling");
  EXPECT_EQ(mpi(16, 4 * KiB), "halving_doubling");  // 4096 is not below 4096
  EXPECT_EQ(mpi(16, 2 * KiB), "recursive_doubling");
  EXPECT_EQ(mpi(100, 128 * KiB), "recursive_doubling");
  EXPECT_EQ(mpi(200, 64 * KiB), "recursive_doubling");  // reduce-then-broadcast, replayed as its nearest
  EXPECT_EQ(mpi(1024, 1 * MiB), "halving_doubling");
  // The ring falls back to recursive doubling when there are fewer elements than ranks.
  EXPECT_EQ(native_schedule("mpi", "allreduce", 3, 1, 4), "recursive_doubling");
  // Other collectives, and NCCL, replay as the ring.
  EXPECT_EQ(native_schedule("mpi", "reduce_scatter", 4, 1 << 20, 4), "ring");
  EXPECT_EQ(native_schedule("nccl", "allreduce", 4, 1 << 20, 4), "ring");
  // schedule_for_call resolves native through it, for half types by their own bytes.
  const CollectiveCall f16{"allreduce", ElemType::F16, 3 * 1024, "fp16"};  // 6 KiB over 4 ranks
  EXPECT_EQ(schedule_name_for_call(f16, "native", 4, "mpi"), "recursive_doubling");
  EXPECT_EQ(schedule_for_call(f16, "native", 4, 1, "mpi").name, "recursive_doubling");
  EXPECT_EQ(schedule_name_for_call(f16, "native", 4, "ring"), "ring");
}

}  // namespace
}  // namespace ddplab
