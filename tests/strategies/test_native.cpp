// `native` as the simulator replays it: Open MPI 4.1's fixed allreduce rules on MPI (the decision table of
// coll_tuned_decision_fixed.c, as runs of Debian 12's Open MPI 4.1.4 on this machine confirmed it), the
// ring on NCCL.
#include <set>

#include <gtest/gtest.h>

#include "ddplab/strategies/plan.hpp"
#include "ddplab/strategies/schedule.hpp"

namespace ddplab {
namespace {

std::string mpi(int p, std::size_t bytes) {
  return native_schedule(Transport::Mpi, Collective::Allreduce, p, bytes / 4, 4);
}

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
  EXPECT_EQ(native_schedule(Transport::Mpi, Collective::Allreduce, 3, 1, 4), "recursive_doubling");
  // Other collectives, and NCCL, replay as the ring.
  EXPECT_EQ(native_schedule(Transport::Mpi, Collective::ReduceScatter, 4, 1 << 20, 4), "ring");
  EXPECT_EQ(native_schedule(Transport::Nccl, Collective::Allreduce, 4, 1 << 20, 4), "ring");
  // schedule_for_call resolves native through it, for half types by their own bytes.
  const CollectiveCall f16{Collective::Allreduce, ElemType::F16, 3 * 1024, "fp16"};  // 6 KiB over 4 ranks
  EXPECT_EQ(schedule_name_for_call(f16, "native", 4, NativeReplay{Transport::Mpi, ""}), "recursive_doubling");
  EXPECT_EQ(schedule_for_call(f16, "native", 4, 1, NativeReplay{Transport::Mpi, ""}).name, "recursive_doubling");
  EXPECT_EQ(schedule_name_for_call(f16, "native", 4, NativeReplay{}), "ring");
}

TEST(NativeSchedule, IsARegistryEntryForEachCollectiveTheBackendsRun) {
  std::set<Collective> covered;
  for (const ScheduleInfo& info : schedules())
    if (info.backend_own) {
      EXPECT_EQ(info.name, "native");
      EXPECT_EQ(info.build, nullptr) << "the backend's own collective has no Schedule of ours";
      covered.insert(info.collective);
    }
  EXPECT_EQ(covered, (std::set<Collective>{Collective::Allreduce, Collective::ReduceScatter, Collective::AllGather}));
  EXPECT_TRUE(is_backend_native("native"));
  EXPECT_FALSE(is_backend_native("ring"));
  EXPECT_FALSE(is_backend_native("no_such"));
  EXPECT_TRUE(has_schedule("native", Collective::ReduceScatter));
  EXPECT_FALSE(has_schedule("native", Collective::Push));  // a parameter server pushes over its own schedule
  EXPECT_EQ(allreduce_schedule_names().front(), "native");
  EXPECT_THROW(make_schedule("native", ScheduleParams{4, 100, 1}), InputError);
  // A bench row's label: "native (in-place)" is the backend's own allreduce too.
  EXPECT_EQ(backend_native_base("native (in-place)"), "native");
  EXPECT_EQ(backend_native_base("native"), "native");
  EXPECT_EQ(backend_native_base("ring"), std::nullopt);
  EXPECT_EQ(backend_native_base("nativex"), std::nullopt);
}

TEST(NativeSchedule, ReplayIsATransportOrAScheduleAndNothingElse) {
  EXPECT_EQ(NativeReplay::parse("nccl"), (NativeReplay{Transport::Nccl, ""}));
  EXPECT_EQ(NativeReplay::parse("halving_doubling"), (NativeReplay{std::nullopt, "halving_doubling"}));
  EXPECT_EQ(NativeReplay::parse("mpi").name(), "mpi");
  EXPECT_THROW(NativeReplay::parse("native"), InputError);  // replaying native as itself says nothing
  try {
    NativeReplay::parse("rign", "SimOptions::native");
    FAIL();
  } catch (const InputError& e) {
    EXPECT_EQ(e.field(), "SimOptions::native");
    EXPECT_NE(std::string(e.what()).find("one of mpi, nccl, ring"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ddplab
