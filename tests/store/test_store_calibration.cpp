// Results store, schema version 3: calibrations with their ping-pong rows, validations, and the in-place
// upgrade of a version-2 file (runs and benches kept).
#include <gtest/gtest.h>

#include "ddplab/core/store.hpp"
#include "store_test_util.hpp"

using namespace ddplab;
using ddplab::test::RawDb;
using ddplab::test::sample_info;
using ddplab::test::TempDir;

namespace {

PingPongRow pp(int dst, std::int64_t bytes, double t) { return {0, dst, bytes, 10, t}; }

ValidationRow vrow(const std::string& metric, double measured, double predicted) {
  ValidationRow v;
  v.calibration = "here";
  v.kind = metric == "busbw_gbs" ? "collective" : "run";
  v.ref_id = 3;
  v.label = "ring";
  v.world_size = 2;
  v.bytes = metric == "busbw_gbs" ? 4096 : 0;
  v.metric = metric;
  v.measured = measured;
  v.predicted = predicted;
  v.error_pct = 100 * (predicted - measured) / measured;
  return v;
}

}  // namespace

TEST(StoreCalibration, RoundTripsFitAndPingPongRows) {
  TempDir dir;
  Store store(dir.file("r.db"));
  EXPECT_FALSE(store.calibration("here"));
  const auto id = store.add_calibration({0, "here", "", R"({"host":"a"})", R"({"latency_s":1e-6})"},
                                        {pp(1, 1024, 2e-6), pp(1, 2048, 3e-6), pp(2, 1024, 2.5e-6)});
  const auto rec = store.calibration("here");
  ASSERT_TRUE(rec);
  EXPECT_EQ(rec->id, id);
  EXPECT_EQ(rec->host_info, R"({"host":"a"})");
  EXPECT_EQ(rec->fit_json, R"({"latency_s":1e-6})");
  EXPECT_FALSE(rec->created_at.empty());
  const auto rows = store.pingpong_rows(id);
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].dst, 1);
  EXPECT_EQ(rows[1].bytes, 2048);
  EXPECT_DOUBLE_EQ(rows[1].one_way_s, 3e-6);
  EXPECT_EQ(rows[2].dst, 2);
  // A later fit under the same name is the one returned; both stay listed.
  const auto id2 = store.add_calibration({0, "here", "", "{}", "{}"}, {});
  EXPECT_EQ(store.calibration("here")->id, id2);
  EXPECT_EQ(store.calibrations().size(), 2u);
  EXPECT_THROW(store.add_calibration({0, "", "", "{}", "{}"}, {}), StoreError);
}

TEST(StoreCalibration, ValidationsRoundTrip) {
  TempDir dir;
  Store store(dir.file("r.db"));
  store.add_validations({vrow("step_s", 0.02, 0.021), vrow("busbw_gbs", 5.0, 4.0)});
  const auto v = store.validations();
  ASSERT_EQ(v.size(), 2u);
  EXPECT_EQ(v[0].metric, "step_s");
  EXPECT_EQ(v[0].kind, "run");
  EXPECT_NEAR(v[0].error_pct, 5.0, 1e-9);
  EXPECT_EQ(v[1].kind, "collective");
  EXPECT_EQ(v[1].bytes, 4096);
  EXPECT_NEAR(v[1].error_pct, -20.0, 1e-9);
  EXPECT_FALSE(v[1].created_at.empty());
  ValidationRow bad = vrow("step_s", 1, 1);
  bad.kind = "other";
  EXPECT_THROW(store.add_validations({vrow("step_s", 1, 1), bad}), StoreError);
  EXPECT_EQ(store.validations().size(), 2u);  // all or nothing
}

TEST(StoreCalibration, Version2FileIsUpgradedKeepingRunsAndBenches) {
  TempDir dir;
  const auto file = dir.file("v2.db");
  std::int64_t run = 0, bench = 0;
  {
    Store store(file);
    run = store.begin_run(sample_info());
    StepMetrics m;
    m.step_s = 0.5;
    m.samples = 32;
    store.add_step(run, m);
    store.finish_run(run, RunStatus::Completed);
    BenchInfo b;
    b.backend = "mpi";
    b.world_size = 2;
    b.config_json = b.host_info = "{}";
    bench = store.begin_bench(b);
    CollectiveBenchRow r;
    r.schedule = "ring";
    r.bytes = 4096;
    r.count = 1024;
    r.time_us = 10;
    store.add_bench_row(bench, r);
    store.finish_bench(bench, RunStatus::Completed);
  }
  {  // Make it a version-2 file, as ddplab before calibration wrote it.
    RawDb raw(file);
    raw.exec(
        "DROP TABLE calibrations; DROP TABLE calibration_pingpong; DROP TABLE validations; "
        "ALTER TABLE resources DROP COLUMN peak_device_bytes; ALTER TABLE evaluations DROP COLUMN confusion; "
        "ALTER TABLE runs DROP COLUMN writer; ALTER TABLE runs DROP COLUMN reason; UPDATE schema_version SET version = "
        "2");
  }
  {
    Store store(file);
    ASSERT_EQ(store.runs().size(), 1u);
    EXPECT_DOUBLE_EQ(store.summary(run).step_s, 0.5);
    ASSERT_EQ(store.bench_rows(bench).size(), 1u);
    EXPECT_EQ(store.bench_rows(bench)[0].schedule, "ring");
    store.add_calibration({0, "here", "", "{}", "{}"}, {pp(1, 1024, 1e-6)});
    EXPECT_EQ(store.pingpong_rows(store.calibration("here")->id).size(), 1u);
  }
  RawDb raw(file);
  EXPECT_EQ(raw.integer("SELECT version FROM schema_version"), Store::kSchemaVersion);
  EXPECT_EQ(raw.integer("SELECT COUNT(*) FROM schema_version"), 1);
}

// Version 4 adds resources.peak_device_bytes: rows from before read back as "not measured".
TEST(StoreCalibration, Version3FileGainsPeakDeviceMemory) {
  TempDir dir;
  const auto file = dir.file("v3.db");
  std::int64_t run = 0;
  {
    Store store(file);
    run = store.begin_run(sample_info());
    store.add_resources(run, {0, 1 << 20, 1.5, 2.0, std::nullopt});
    store.finish_run(run, RunStatus::Completed);
  }
  {
    RawDb raw(file);
    raw.exec(
        "ALTER TABLE resources DROP COLUMN peak_device_bytes; ALTER TABLE evaluations DROP COLUMN confusion; "
        "ALTER TABLE runs DROP COLUMN writer; ALTER TABLE runs DROP COLUMN reason; UPDATE schema_version SET version = "
        "3");
  }
  Store store(file);
  store.add_resources(run, {1, 1 << 20, 1.5, 2.0, std::int64_t{3} << 30});
  const auto res = store.resources(run);
  ASSERT_EQ(res.size(), 2u);
  EXPECT_FALSE(res[0].peak_device_bytes.has_value());
  ASSERT_TRUE(res[1].peak_device_bytes.has_value());
  EXPECT_EQ(*res[1].peak_device_bytes, std::int64_t{3} << 30);
  EXPECT_EQ(res[0].peak_rss_bytes, 1 << 20);
}

TEST(StoreCalibration, Version4FileGainsConfusionMatrices) {
  TempDir dir;
  const auto file = dir.file("v4.db");
  std::int64_t run = 0;
  {
    Store store(file);
    run = store.begin_run(sample_info());
    store.add_evaluation(run, {1, 1.0, 0.5, 0.75, 0.7, 0.7, 0, {}});
    store.finish_run(run, RunStatus::Completed);
  }
  {
    RawDb raw(file);
    raw.exec(
        "ALTER TABLE evaluations DROP COLUMN confusion; ALTER TABLE runs DROP COLUMN writer; ALTER TABLE runs DROP "
        "COLUMN reason; "
        "UPDATE schema_version SET version = 4");
  }
  Store store(file);
  store.add_evaluation(run, {2, 2.0, 0.4, 0.5, 0.5, 0.5, 2, {1, 1, 0, 2}});
  const auto evals = store.evaluations(run);
  ASSERT_EQ(evals.size(), 2u);
  EXPECT_TRUE(evals[0].confusion.empty());
  EXPECT_EQ(evals[1].classes, 2);
  EXPECT_EQ(evals[1].confusion, (std::vector<std::int64_t>{1, 1, 0, 2}));
}
