// Results store, schema version 2: collective benchmark rows, and the in-place migration of version-1 files.
#include <gtest/gtest.h>

#include <cmath>
#include <regex>
#include <set>
#include <sqlite3.h>

#include "ddplab/core/class_metrics.hpp"
#include "ddplab/core/error.hpp"
#include "ddplab/core/store.hpp"
#include "store_test_util.hpp"

using namespace ddplab;
using ddplab::test::RawDb;
using ddplab::test::sample_info;
using ddplab::test::TempDir;

namespace {

// The schema exactly as version 1 of ddplab created it (core/src/store.cpp before version 2).
constexpr const char* kSchemaV1 = R"sql(
CREATE TABLE schema_version(version INTEGER NOT NULL);
INSERT INTO schema_version(version) VALUES(1);
CREATE TABLE runs(
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  scenario TEXT NOT NULL,
  strategy TEXT NOT NULL,
  backend TEXT NOT NULL,
  world_size INTEGER NOT NULL CHECK(world_size >= 1),
  source TEXT NOT NULL CHECK(source IN ('measured','simulated')),
  batch_size INTEGER NOT NULL,
  config TEXT NOT NULL,
  host_info TEXT NOT NULL,
  version TEXT NOT NULL,
  started_at TEXT NOT NULL,
  ended_at TEXT,
  status TEXT NOT NULL CHECK(status IN ('running','completed','failed')));
CREATE INDEX runs_by_name ON runs(scenario, strategy, source, status);
CREATE TABLE steps(
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  step INTEGER NOT NULL,
  rank INTEGER NOT NULL,
  compute_s REAL, comm_s REAL, exposed_comm_s REAL, optimizer_s REAL, step_s REAL,
  samples INTEGER NOT NULL,
  bytes_sent INTEGER NOT NULL,
  loss REAL,
  PRIMARY KEY(run_id, step, rank)) WITHOUT ROWID;
CREATE TABLE evaluations(
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  step INTEGER NOT NULL,
  wall_s REAL, test_loss REAL, test_accuracy REAL, macro_precision REAL, macro_recall REAL);
CREATE INDEX evaluations_by_run ON evaluations(run_id, step);
CREATE TABLE resources(
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  rank INTEGER NOT NULL,
  peak_rss_bytes INTEGER NOT NULL,
  cpu_s REAL, wall_s REAL);
CREATE INDEX resources_by_run ON resources(run_id, rank);
PRAGMA journal_mode=WAL;
)sql";

// A version-1 file with one completed run: two steps of two ranks, one evaluation, one resources row.
void write_v1_file(const std::string& path) {
  RawDb raw(path);
  raw.exec(kSchemaV1);
  raw.exec(
      "INSERT INTO runs(scenario, strategy, backend, world_size, source, batch_size, config, host_info, version, "
      "started_at, ended_at, status) VALUES('default','ring','cpu',2,'measured',32,'{}','{}','0.1.0',"
      "'2024-05-01T12:00:00Z','2024-05-01T12:01:00Z','completed')");
  raw.exec(
      "INSERT INTO steps VALUES(1,0,0,0.1,0.05,0.02,0.01,0.2,32,1000,2.5),(1,0,1,0.1,0.05,0.02,0.01,0.3,32,1000,2.7),"
      "(1,1,0,0.1,0.05,0.02,0.01,0.2,32,1000,2.1),(1,1,1,0.1,0.05,0.02,0.01,0.2,32,1000,2.3)");
  raw.exec("INSERT INTO evaluations VALUES(1,1,60.0,0.5,0.81,0.8,0.79)");
  raw.exec("INSERT INTO resources VALUES(1,0,1048576,1.5,60.0)");
}

// Every table, index and column of a store file, to compare a migrated file with a new one.
std::set<std::string> schema_of(const std::string& path) {
  sqlite3* db = nullptr;
  EXPECT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  std::set<std::string> out;
  std::vector<std::string> tables;
  sqlite3_stmt* st = nullptr;
  sqlite3_prepare_v2(db, "SELECT type, name, tbl_name FROM sqlite_master WHERE name NOT LIKE 'sqlite_%'", -1, &st,
                     nullptr);
  while (sqlite3_step(st) == SQLITE_ROW) {
    const std::string type = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
    const std::string name = reinterpret_cast<const char*>(sqlite3_column_text(st, 1));
    out.insert(type + " " + name + " on " + reinterpret_cast<const char*>(sqlite3_column_text(st, 2)));
    if (type == "table") tables.push_back(name);
  }
  sqlite3_finalize(st);
  for (const auto& t : tables) {
    sqlite3_prepare_v2(db, ("SELECT name, type, \"notnull\", pk FROM pragma_table_info('" + t + "')").c_str(), -1, &st,
                       nullptr);
    while (sqlite3_step(st) == SQLITE_ROW)
      out.insert(t + "." + reinterpret_cast<const char*>(sqlite3_column_text(st, 0)) + " " +
                 reinterpret_cast<const char*>(sqlite3_column_text(st, 1)) + " notnull=" +
                 std::to_string(sqlite3_column_int(st, 2)) + " pk=" + std::to_string(sqlite3_column_int(st, 3)));
    sqlite3_finalize(st);
  }
  sqlite3_close(db);
  return out;
}

BenchInfo sample_bench() {
  BenchInfo b;
  b.backend = "mpi";
  b.world_size = 4;
  b.ranks_per_node = 2;
  b.iters = 20;
  b.warmup = 5;
  b.config_json = R"({"sizes":[1024,2048]})";
  b.host_info = R"({"hostname":"node0"})";
  return b;
}

CollectiveBenchRow bench_row(const std::string& schedule, std::int64_t bytes, double time_us,
                             std::optional<std::int64_t> wrong) {
  CollectiveBenchRow r;
  r.schedule = schedule;
  r.bytes = bytes;
  r.count = bytes / 4;
  r.time_us = time_us;
  r.algbw_gbs = bytes / time_us / 1e3;
  r.busbw_gbs = r.algbw_gbs * 1.5;
  r.wrong = wrong;
  return r;
}

}  // namespace

TEST(StoreBench, RoundTripsBenchAndRowsInOrder) {
  TempDir dir;
  const auto file = dir.file("results.db");
  const std::vector<CollectiveBenchRow> rows = {bench_row("native", 1024, 12.5, 0), bench_row("native", 2048, 13.25, 0),
                                                bench_row("ring", 1024, 20.0, 3),
                                                bench_row("ring", 2048, 21.0, std::nullopt)};
  std::int64_t id = 0;
  {
    Store store(file);
    id = store.begin_bench(sample_bench());
    auto running = store.benches();
    ASSERT_EQ(running.size(), 1u);
    EXPECT_EQ(running[0].status, RunStatus::Running);
    EXPECT_TRUE(running[0].ended_at.empty());
    for (const auto& r : rows) store.add_bench_row(id, r);
    store.finish_bench(id, RunStatus::Failed);
  }
  Store store(file);
  const auto benches = store.benches();
  ASSERT_EQ(benches.size(), 1u);
  const BenchRunRow& b = benches[0];
  EXPECT_EQ(b.id, id);
  EXPECT_EQ(b.info.kind, "collectives");
  EXPECT_EQ(b.info.backend, "mpi");
  EXPECT_EQ(b.info.world_size, 4);
  EXPECT_EQ(b.info.ranks_per_node, 2);
  EXPECT_EQ(b.info.iters, 20);
  EXPECT_EQ(b.info.warmup, 5);
  EXPECT_EQ(b.info.config_json, sample_bench().config_json);
  EXPECT_EQ(b.info.host_info, sample_bench().host_info);
  EXPECT_EQ(b.status, RunStatus::Failed);
  EXPECT_TRUE(std::regex_match(b.started_at, std::regex(R"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z)")));
  EXPECT_FALSE(b.ended_at.empty());
  EXPECT_FALSE(b.version.empty());

  const auto back = store.bench_rows(id);
  ASSERT_EQ(back.size(), rows.size());
  for (std::size_t i = 0; i < rows.size(); ++i) {
    EXPECT_EQ(back[i].schedule, rows[i].schedule) << i;
    EXPECT_EQ(back[i].collective, Collective::Allreduce);
    EXPECT_EQ(back[i].type, "float");
    EXPECT_EQ(back[i].bytes, rows[i].bytes);
    EXPECT_EQ(back[i].count, rows[i].count);
    EXPECT_DOUBLE_EQ(back[i].time_us, rows[i].time_us);
    EXPECT_DOUBLE_EQ(back[i].algbw_gbs, rows[i].algbw_gbs);
    EXPECT_DOUBLE_EQ(back[i].busbw_gbs, rows[i].busbw_gbs);
    EXPECT_EQ(back[i].wrong, rows[i].wrong) << i;  // unchecked stays unchecked, not 0
  }
  EXPECT_TRUE(store.bench_rows(id + 1).empty());
  // Benches never show up as training runs.
  EXPECT_TRUE(store.runs().empty());
}

TEST(StoreBench, RowsAreBatchedAndFinishFlushes) {
  TempDir dir;
  const auto file = dir.file("results.db");
  Store store(file, /*batch_rows=*/3);
  const auto id = store.begin_bench(sample_bench());
  RawDb raw(file);
  store.add_bench_row(id, bench_row("ring", 1024, 10, 0));
  store.add_bench_row(id, bench_row("ring", 2048, 10, 0));
  EXPECT_EQ(raw.integer("SELECT COUNT(*) FROM collective_bench"), 0);
  store.add_bench_row(id, bench_row("ring", 4096, 10, 0));
  EXPECT_EQ(raw.integer("SELECT COUNT(*) FROM collective_bench"), 3);
  store.add_bench_row(id, bench_row("ring", 8192, 10, 0));
  store.finish_bench(id, RunStatus::Completed);
  EXPECT_EQ(raw.integer("SELECT COUNT(*) FROM collective_bench"), 4);
  EXPECT_EQ(raw.text("SELECT status FROM bench_runs"), "completed");
  // Queryable with plain SQL: the best ring busbw of this bench.
  EXPECT_EQ(raw.integer("SELECT MAX(bytes) FROM collective_bench c JOIN bench_runs b ON b.id = c.bench_id "
                        "WHERE b.world_size = 4 AND c.schedule = 'ring'"),
            8192);
}

TEST(StoreBench, FinishRejectsBadStatusAndUnknownBench) {
  TempDir dir;
  const auto file = dir.file("results.db");
  Store store(file);
  const auto id = store.begin_bench(sample_bench());
  EXPECT_THROW(store.finish_bench(id, RunStatus::Running), StoreError);  // not an outcome
  EXPECT_THROW(store.finish_bench(id + 5, RunStatus::Completed), StoreError);
  EXPECT_THROW(
      {
        BenchInfo bad = sample_bench();
        bad.world_size = 0;
        store.begin_bench(bad);
      },
      StoreError);
}

// A name this version does not know, in a store written by another: a StoreError naming the file, not a
// guess and not another kind of error (the fuzzer found it first).
TEST(StoreBench, AnUnknownStoredCollectiveIsAStoreErrorNamingTheFile) {
  TempDir dir;
  const auto file = dir.file("results.db");
  {
    Store store(file);
    const auto id = store.begin_bench(sample_bench());
    store.add_bench_row(id, bench_row("ring", 4096, 10, 0));
    store.finish_bench(id, RunStatus::Completed);
  }
  RawDb(file).exec("UPDATE collective_bench SET collective = 'gather'");
  const Store store(file, Store::Access::ReadOnly);
  try {
    store.bench_rows(1);
    FAIL() << "an unknown collective was read";
  } catch (const StoreError& e) {
    EXPECT_NE(std::string(e.what()).find(file), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("collective \"gather\" is not one of allreduce"), std::string::npos)
        << e.what();
  }
  EXPECT_EQ(store.benches().at(0).status, RunStatus::Completed);  // the rest of the store still reads
}

TEST(StoreMigration, Version1FileIsMigratedInPlace) {
  TempDir dir;
  const auto old_file = dir.file("v1.db"), new_file = dir.file("new.db");
  write_v1_file(old_file);
  { Store fresh(new_file); }
  {
    Store store(old_file);
    // The old run reads back exactly as before.
    const auto runs = store.runs();
    ASSERT_EQ(runs.size(), 1u);
    EXPECT_EQ(runs[0].info.strategy, "ring");
    EXPECT_EQ(runs[0].status, RunStatus::Completed);
    EXPECT_EQ(store.steps(runs[0].id).size(), 4u);
    const RunSummary s = store.summary(runs[0].id);
    EXPECT_EQ(s.steps, 2);
    EXPECT_DOUBLE_EQ(s.step_s, 0.25);  // mean of the slowest rank per step: (0.3 + 0.2) / 2
    ASSERT_TRUE(s.final_accuracy);
    EXPECT_DOUBLE_EQ(*s.final_accuracy, 0.81);
    // Evaluations stored before version 5 have no confusion matrix, and say so when asked for one.
    const auto evals = store.evaluations(runs[0].id);
    ASSERT_FALSE(evals.empty());
    EXPECT_TRUE(evals.back().confusion.empty());
    EXPECT_THROW(class_report_text(runs[0], evals, std::nullopt), ddplab::InputError);
    EXPECT_EQ(store.resources(runs[0].id).size(), 1u);
    // And the new tables work.
    const auto id = store.begin_bench(sample_bench());
    store.add_bench_row(id, bench_row("native", 4096, 5, 0));
    store.finish_bench(id, RunStatus::Completed);
    EXPECT_EQ(store.bench_rows(id).size(), 1u);
  }
  RawDb raw(old_file);
  EXPECT_EQ(raw.integer("SELECT version FROM schema_version"), Store::kSchemaVersion);
  EXPECT_EQ(raw.integer("SELECT COUNT(*) FROM schema_version"), 1);
  EXPECT_EQ(raw.text("PRAGMA journal_mode"), "wal");
  // A migrated file has the same tables, indexes and columns as a new one.
  EXPECT_EQ(schema_of(old_file), schema_of(new_file));
  // Opening again migrates nothing and keeps the data.
  { Store again(old_file); }
  EXPECT_EQ(raw.integer("SELECT version FROM schema_version"), Store::kSchemaVersion);
  EXPECT_EQ(raw.integer("SELECT COUNT(*) FROM collective_bench"), 1);
  EXPECT_EQ(raw.integer("SELECT COUNT(*) FROM steps"), 4);
}

TEST(StoreMigration, NewFileIsVersion2WithBenchTables) {
  TempDir dir;
  const auto file = dir.file("results.db");
  { Store store(file); }
  RawDb raw(file);
  EXPECT_GE(Store::kSchemaVersion, 2);
  EXPECT_EQ(raw.integer("SELECT version FROM schema_version"), Store::kSchemaVersion);
  for (const char* t : {"bench_runs", "collective_bench"})
    EXPECT_EQ(raw.integer(std::string("SELECT COUNT(*) FROM sqlite_master WHERE type='table' AND name='") + t + "'"), 1)
        << t;
}

TEST(StoreMigration, TwoStoresOpeningOneV1FileMigrateOnce) {
  TempDir dir;
  const auto file = dir.file("v1.db");
  write_v1_file(file);
  Store a(file);
  Store b(file);  // sees version 2 under the write lock: nothing left to do
  RawDb raw(file);
  EXPECT_EQ(raw.integer("SELECT COUNT(*) FROM schema_version"), 1);
  EXPECT_EQ(raw.integer("SELECT version FROM schema_version"), Store::kSchemaVersion);
  EXPECT_EQ(b.runs().size(), 1u);
}
