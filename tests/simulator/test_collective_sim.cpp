// `bench collectives --simulate`: every schedule at every size, as nccl-tests rows, against alpha-beta; and the
// simulated bench recorded in the results store as a measured one is, on a scenario's, a preset's or the default
// cluster.
#include <gtest/gtest.h>

#include <fstream>
#include <iterator>
#include <stdexcept>
#include <string>

#include <nlohmann/json.hpp>

#include "ddplab/core/error.hpp"
#include "ddplab/core/metrics.hpp"
#include "ddplab/core/store.hpp"
#include "ddplab/simulator/collective_sim.hpp"
#include "sim_test_util.hpp"
#include "temp_dir.hpp"

namespace ddplab {
namespace {

using test::TempDir;

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

TEST(SimulatedBench, TheClusterComesFromAScenarioAPresetOrTheDefault) {
  const SimulatedBench plain = simulated_bench_cluster("", "", "");
  EXPECT_EQ(plain.where, "the default cluster (10 Gbit/s star)");
  EXPECT_EQ(plain.request.transport, Transport::Mpi);
  // A GPU preset replays native as NCCL, unless told otherwise; the CPU test bed's as MPI.
  const SimulatedBench dgx = simulated_bench_cluster("", "dgx-h100", "");
  EXPECT_EQ(dgx.request.transport, Transport::Nccl);
  EXPECT_EQ(dgx.where, describe_cluster(dgx.request.cluster));
  EXPECT_EQ(simulated_bench_cluster("", "dgx-h100", "mpi").request.transport, Transport::Mpi);
  EXPECT_EQ(simulated_bench_cluster("", "cpu-testbed", "").request.transport, Transport::Mpi);
  EXPECT_THROW(simulated_bench_cluster("", "no-such-preset", ""), InputError);

  const SimulatedBench sc = simulated_bench_cluster(DDPLAB_SOURCE_DIR "/scenarios/default.toml", "", "");
  EXPECT_EQ(sc.scenario, DDPLAB_SOURCE_DIR "/scenarios/default.toml");
  EXPECT_EQ(sc.where.rfind("scenario " + sc.scenario + ": ", 0), 0u) << sc.where;
  EXPECT_EQ(sc.request.transport, Transport::Mpi);  // default.toml trains on the CPU
  EXPECT_THROW(simulated_bench_cluster(DDPLAB_SOURCE_DIR "/scenarios/no-such.toml", "", ""), InputError);
}

TEST(SimulatedBench, IsStoredAsABenchOfBackendSimgrid) {
  TempDir dir;
  Store store(dir.file("r.db"));
  SimulatedBench bench = simulated_bench_cluster("", "", "");
  bench.request.world_size = 4;
  bench.request.schedules = {"ring", "native"};
  bench.request.sizes = {4096, 65536};
  bench.sizes = "4KiB,64KiB";
  std::size_t benches_at_begin = 99;
  int rows = 0;
  const std::int64_t id = run_simulated_bench(
      store, bench, [&] { benches_at_begin = store.benches().size(); }, [&](const CollectiveBenchRow&) { ++rows; });
  EXPECT_EQ(benches_at_begin, 0u);  // begin comes before anything is stored
  EXPECT_EQ(rows, 4);
  EXPECT_EQ(bench.request.options.network_model, bench.request.cluster.network_model);  // "auto" resolved
  const auto all = store.benches();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].id, id);
  EXPECT_EQ(all[0].status, RunStatus::Completed);
  EXPECT_EQ(all[0].info.backend, "simgrid");
  EXPECT_EQ(all[0].info.world_size, 4);
  const auto cfg = nlohmann::json::parse(all[0].info.config_json);
  EXPECT_EQ(cfg["simulated"], true);
  EXPECT_EQ(cfg["sizes"], "4KiB,64KiB");
  EXPECT_EQ(cfg["native_as"], "mpi");
  EXPECT_FALSE(cfg.contains("calibration"));
  const auto stored = store.bench_rows(id);
  ASSERT_EQ(stored.size(), 4u);
  EXPECT_EQ(stored[0].schedule, "ring");
  EXPECT_GT(stored[0].time_us, 0);

  // A simulation that fails leaves its bench failed, and the error goes on.
  bench.request.schedules = {"ring", "tree"};
  EXPECT_THROW(run_simulated_bench(store, bench, {}, {}), InputError);
  EXPECT_EQ(store.benches().back().status, RunStatus::Failed);
}

TEST(SimulatedBench, AScenarioNamingAMissingCalibrationIsRefusedBeforeAnythingIsStored) {
  TempDir dir;
  Store store(dir.file("r.db"));
  std::ifstream in(DDPLAB_SOURCE_DIR "/scenarios/ci-small.toml");
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  text.replace(text.find("[cluster]\n"), 10, "[cluster]\ncalibration = \"nosuch\"\n");
  const std::string toml = dir.write("ci-small.toml", text);
  SimulatedBench bench = simulated_bench_cluster(toml, "", "");
  EXPECT_EQ(bench.calibration, "nosuch");
  bench.request.world_size = 2;
  bench.request.schedules = {"ring"};
  bench.request.sizes = {4096};
  bool begun = false;
  EXPECT_THROW(run_simulated_bench(store, bench, [&] { begun = true; }, {}), Error);
  EXPECT_FALSE(begun);
  EXPECT_TRUE(store.benches().empty());
}

}  // namespace
}  // namespace ddplab
