// validate's procedure (validation.hpp), on stores built here: a bench whose "measurements" are the
// simulator's own predictions comes back at 0% error, an NCCL bench on a preset is replayed with NCCL's
// model, simulated benches are left out, and bad options are refused.
#include <unistd.h>

#include <gtest/gtest.h>

#include <filesystem>

#include "ddplab/core/error.hpp"
#include "ddplab/core/metrics.hpp"
#include "ddplab/simulator/collective_sim.hpp"
#include "ddplab/simulator/validation.hpp"

namespace ddplab {
namespace {

std::string fresh_db(const std::string& name) {
  const std::string path = testing::TempDir() + std::to_string(getpid()) + "-" + name;
  std::filesystem::remove(path);
  return path;
}

// Stores `rows` as a completed bench.
void store_bench(Store& store, const std::string& backend, int world, int per_node, const std::string& config,
                 const std::vector<CollectiveBenchRow>& rows) {
  BenchInfo info;
  info.backend = backend;
  info.world_size = world;
  info.ranks_per_node = per_node;
  info.config_json = config;
  const std::int64_t id = store.begin_bench(info);
  for (const auto& r : rows) store.add_bench_row(id, r);
  store.finish_bench(id, RunStatus::Completed);
}

std::vector<CollectiveBenchRow> predicted(const ClusterConfig& cluster, int world, Transport transport,
                                          const std::vector<std::string>& schedules) {
  CollectiveSimRequest req;
  req.cluster = cluster;
  req.world_size = world;
  req.schedules = schedules;
  req.sizes = {64u << 10, 16u << 20};
  req.transport = transport;
  return simulate_collective_bench(req);
}

TEST(Validation, BenchesOfThePredictionComeBackAtZeroError) {
  Store store(fresh_db("validation-mpi.db"));
  store_bench(store, "mpi", 4, 1, "{}", predicted(ClusterConfig{}, 4, Transport::Mpi, {"ring", "native"}));
  store_bench(store, "simgrid", 4, 1, "{}",
              predicted(ClusterConfig{}, 4, Transport::Mpi, {"ring"}));  // a prediction: left out
  int seen = 0;
  const ValidationReport r = validate_store(store, {}, [&](const ValidationRow&) { ++seen; });
  ASSERT_EQ(r.rows.size(), 4u);
  EXPECT_EQ(seen, 4);
  for (const auto& v : r.rows) EXPECT_NEAR(v.error_pct, 0.0, 0.5) << v.label << " " << v.bytes;
  EXPECT_EQ(store.validations().size(), 4u);
  EXPECT_TRUE(r.errors.empty());
  EXPECT_TRUE(r.calibration.empty());
}

TEST(Validation, NcclBenchOnAPresetIsReplayedWithNcclsModel) {
  ClusterConfig h100;
  apply_cluster_preset(h100, "dgx-h100");
  Store store(fresh_db("validation-nccl.db"));
  store_bench(store, "nccl", 16, 8, R"({"preset": "dgx-h100"})", predicted(h100, 16, Transport::Nccl, {"native"}));
  const ValidationReport r = validate_store(store, {});
  ASSERT_EQ(r.rows.size(), 2u);
  for (const auto& v : r.rows) EXPECT_NEAR(v.error_pct, 0.0, 0.5) << v.bytes;
}

TEST(Validation, BadOptionsAreRefused) {
  Store store(fresh_db("validation-bad.db"));
  ValidationOptions o;
  o.compute = "measurd";
  EXPECT_THROW(validate_store(store, o), ddplab::InputError);
  o.compute = "calibration";  // and no calibration stored
  EXPECT_THROW(validate_store(store, o), ddplab::InputError);
  o.compute = "auto";
  o.calibration = "no-such-fit";
  EXPECT_ANY_THROW(validate_store(store, o));
}

}  // namespace
}  // namespace ddplab
