// Run under mpirun: what each rank of `ddplab calibrate` measures on real ranks (calibration_probe.hpp): the
// links (ping-pong rows on rank 0 only, node names and the samples under load on every rank) and the
// schedules at world sizes below the job's, where the ranks outside a world wait for it.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <memory>
#include <string>
#include <vector>

#include "ddplab/core/store.hpp"
#include "ddplab/runtime/calibration_probe.hpp"
#include "mpi_test_main.hpp"

namespace ddplab {
namespace {

const std::vector<std::uint64_t> kSizes = {1024, 4096};

TEST(CalibrationProbe, LinksAreMeasuredAsTheFitAsks) {
  Communicator& comm = *g_comm;
  const int n = comm.size();
  if (n < 2) GTEST_SKIP() << "ping-pong needs 2 ranks";
  CalibrationProbe probe(comm);
  probe.open(Transport::Mpi, 60);
  for (const std::string fit : {"ring", "exchange", "pingpong"}) {
    const LinkSamples s = probe.measure_links(kSizes, fit, 0.01, 5);
    // Rank 0 pings every other rank at every size; the others keep nothing.
    EXPECT_EQ(s.pingpong.size(), comm.rank() == 0 ? kSizes.size() * static_cast<std::size_t>(n - 1) : 0u) << fit;
    for (const PingPongRow& r : s.pingpong) {
      EXPECT_EQ(r.src, 0);
      EXPECT_GT(r.one_way_s, 0);
    }
    EXPECT_EQ(s.nodes.size(), static_cast<std::size_t>(n));
    ASSERT_EQ(s.loaded.size(), fit == "pingpong" ? 0u : kSizes.size()) << fit;
    for (std::size_t i = 0; i < s.loaded.size(); ++i) {
      EXPECT_EQ(s.loaded[i].bytes, kSizes[i]);
      EXPECT_GT(s.loaded[i].one_way_s, 0);
    }
  }
}

TEST(CalibrationProbe, SmallerWorldsAreTheJobsFirstRanks) {
  Communicator& comm = *g_comm;
  const int n = comm.size(), me = comm.rank();
  if (n < 3) GTEST_SKIP() << "a world below the job's needs 3 ranks";
  // Rank 0's store, in a folder rank 0 names.
  std::string dir = "/tmp/ddplab-probe-XXXXXX";
  if (me == 0 && !mkdtemp(dir.data())) comm.abort(1);  // the others wait in the broadcast
  comm.broadcast(dir.data(), dir.size(), 0);
  std::unique_ptr<Store> store;
  if (me == 0) store = std::make_unique<Store>(dir + "/r.db");
  CalibrationProbe probe(comm);
  probe.open(Transport::Mpi, 60);
  CollectiveBenchOptions opt;
  opt.sizes = kSizes;
  opt.schedules = {"native", "ring"};
  opt.iters = 2;
  opt.warmup = 1;
  opt.ranks_per_node = n;
  std::vector<int> worlds_begun;
  ScheduleBenchHooks hooks;
  hooks.begin = [&](int w, std::int64_t) { worlds_begun.push_back(w); };
  const ScheduleBenches b = probe.measure_schedules(schedule_worlds({}, n), opt, store.get(), {}, hooks);
  EXPECT_EQ(b.wrong, 0);
  const std::vector<int> worlds = schedule_worlds({}, n);
  if (me != 0) {
    EXPECT_TRUE(b.ids.empty());
    EXPECT_TRUE(worlds_begun.empty());
    return;
  }
  EXPECT_EQ(worlds_begun, worlds);
  const auto benches = store->benches();
  ASSERT_EQ(benches.size(), worlds.size());
  for (std::size_t i = 0; i < worlds.size(); ++i) {
    EXPECT_EQ(benches[i].id, b.ids[i]);
    EXPECT_EQ(benches[i].status, RunStatus::Completed);
    EXPECT_EQ(benches[i].info.world_size, worlds[i]);
    EXPECT_EQ(benches[i].info.ranks_per_node, worlds[i]);  // capped at the world
    EXPECT_EQ(store->bench_rows(b.ids[i]).size(), 4u);
  }
  store.reset();
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace ddplab
