// `bench collectives --simulate`: every schedule at every size, as nccl-tests rows, against alpha-beta.
#include <gtest/gtest.h>

#include <stdexcept>

#include "ddplab/core/error.hpp"
#include "ddplab/core/metrics.hpp"
#include "ddplab/simulator/collective_sim.hpp"
#include "sim_test_util.hpp"

namespace ddplab {
namespace {

TEST(CollectiveSim, RowsAreTheSchedulesTimesAsNcclTestsReportsThem) {
  CollectiveSimRequest req;
  req.world_size = 4;
  req.schedules = {"ring", "native"};
  req.sizes = {4096, 16u << 20};
  req.options = test::alpha_beta();
  int seen = 0;
  const auto rows = simulate_collective_bench(req, [&](const CollectiveBenchRow&) { ++seen; });
  ASSERT_EQ(rows.size(), 4u);
  EXPECT_EQ(seen, 4);
  const ClusterConfig& c = req.cluster;
  // The ring of 16 MiB: 2(n-1) steps of a quarter each over host->switch->host.
  const CollectiveBenchRow& ring = rows[1];
  EXPECT_EQ(ring.schedule, "ring");
  EXPECT_EQ(ring.bytes, 16 << 20);
  EXPECT_EQ(ring.count, 4 << 20);
  const double t = 2.0 * 3 * ((16u << 20) / 4.0 / c.link_bandwidth + 2 * c.link_latency);
  EXPECT_NEAR(ring.time_us, t * 1e6, 0.01 * t * 1e6);
  EXPECT_NEAR(ring.algbw_gbs, (16u << 20) / (ring.time_us * 1e-6) / 1e9, 1e-9);
  EXPECT_NEAR(ring.busbw_gbs, ring.algbw_gbs * bus_factor(Collective::Allreduce, 4), 1e-12);
  EXPECT_FALSE(ring.wrong.has_value());
  // native on MPI: recursive doubling at 4 KiB (2 whole-buffer exchanges), Rabenseifner at 16 MiB.
  const double rd = 2 * (4096 / c.link_bandwidth + 2 * c.link_latency);
  EXPECT_NEAR(rows[2].time_us, rd * 1e6, 0.01 * rd * 1e6);
  const double hd = 2 * ((8u << 20) / c.link_bandwidth + (4u << 20) / c.link_bandwidth) + 4 * 2 * c.link_latency;
  EXPECT_NEAR(rows[3].time_us, hd * 1e6, 0.01 * hd * 1e6);

  req.schedules = {"tree"};
  EXPECT_THROW(simulate_collective_bench(req), ddplab::InputError);
  req.schedules = {"ring"};
  req.sizes = {2};
  EXPECT_THROW(simulate_collective_bench(req), ddplab::InputError);
}

}  // namespace
}  // namespace ddplab
