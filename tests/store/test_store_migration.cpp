// Every past schema version, as the build that shipped it created a store (data/store_vN.sql, written by
// data/make_fixtures.py from that commit's schema and migrations): today's Store reads the versions it can read
// without touching them, migrates every one in place keeping each row, and ends with the very schema a new file
// gets.
#include <gtest/gtest.h>

#include <fstream>
#include <sstream>
#include <string>

#include "ddplab/core/step_totals.hpp"
#include "ddplab/core/store.hpp"
#include "store_test_util.hpp"

using namespace ddplab;
using ddplab::test::RawDb;
using ddplab::test::TempDir;

namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw std::runtime_error("cannot read " + path);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

// A store file of `version`, from its fixture.
std::string old_store(const TempDir& dir, int version) {
  const std::string file = dir.file("v" + std::to_string(version) + ".db");
  RawDb(file).exec(read_text(std::string(DDPLAB_TEST_DATA) + "/store_v" + std::to_string(version) + ".sql"));
  return file;
}

// Every table, index and trigger's definition, whitespace collapsed: what "the same schema" means here.
std::string schema_text(const std::string& file) {
  RawDb raw(file);
  std::string all = raw.text(
      "SELECT group_concat(type || ' ' || name || ': ' || sql, char(10)) FROM "
      "(SELECT type, name, sql FROM sqlite_master WHERE sql IS NOT NULL AND name != 'sqlite_sequence' ORDER BY name)");
  std::string out;
  bool space = false;
  for (char c : all) {
    if (c == ' ' || c == '\t' || c == '\r') {
      space = true;
      continue;
    }
    if (space && !out.empty() && out.back() != '\n' && c != '\n') out += ' ';
    space = false;
    out += c;
  }
  return out;
}

void expect_sample_runs(const Store& store, const std::string& what) {
  SCOPED_TRACE(what);
  const auto runs = store.runs();
  ASSERT_EQ(runs.size(), 2u);
  EXPECT_EQ(runs[0].status, RunStatus::Completed);
  EXPECT_EQ(runs[1].status, RunStatus::Running);  // no writer recorded: cannot be checked, so not called abandoned
  EXPECT_TRUE(runs[1].writer.empty());
  EXPECT_EQ(store.steps(1).size(), 8u);
  EXPECT_EQ(store.steps(2).size(), 4u);
  // Steps of 0.02 and 0.03 s on two ranks, 32 samples each, losses 2.0 - 0.25 step: the slowest rank's
  // 0.03 s per step, 64 samples per step, a final mean loss of 1.25.
  const RunSummary s = store.summary(1);
  EXPECT_EQ(s.steps + s.skipped, 4);
  EXPECT_NEAR(s.step_s, 0.03, 1e-12);
  EXPECT_NEAR(s.samples_per_s, 64 / 0.03, 1e-6);
  ASSERT_TRUE(s.final_loss);
  EXPECT_NEAR(*s.final_loss, 1.25, 1e-12);
  EXPECT_EQ(s.final_accuracy, 0.75);
  EXPECT_EQ(store.totals(1).size(), 4u);
  const auto evals = store.evaluations(1);
  ASSERT_EQ(evals.size(), 1u);
  EXPECT_TRUE(evals[0].confusion.empty());
  const auto res = store.resources(1);
  ASSERT_EQ(res.size(), 1u);
  EXPECT_EQ(res[0].peak_rss_bytes, 1048576);
  EXPECT_FALSE(res[0].peak_device_bytes);
}

class StoreMigration : public testing::TestWithParam<int> {};

}  // namespace

TEST_P(StoreMigration, ReadsOrMigratesKeepingEveryRowAndEndsWithTodaysSchema) {
  const int version = GetParam();
  TempDir dir;
  const std::string file = old_store(dir, version);
  ASSERT_EQ(RawDb(file).integer("SELECT version FROM schema_version"), version);
  if (version >= Store::kOldestReadable) {
    const Store viewer(file, Store::Access::ReadOnly);
    EXPECT_EQ(viewer.schema(), version);
    expect_sample_runs(viewer, "read-only, not migrated");
  } else {
    EXPECT_THROW(Store(file, Store::Access::ReadOnly), StoreError);
  }
  EXPECT_EQ(RawDb(file).integer("SELECT version FROM schema_version"), version);  // a viewer migrates nothing

  {
    Store store(file);
    EXPECT_EQ(store.schema(), Store::kSchemaVersion);
    expect_sample_runs(store, "migrated");
    if (version >= 2) {
      ASSERT_EQ(store.benches().size(), 1u);
      EXPECT_EQ(store.bench_rows(1).size(), 1u);
    }
    if (version >= 3) {
      ASSERT_TRUE(store.calibration("lab"));
      EXPECT_EQ(store.calibration("lab")->fit_json, R"({"latency_s":1e-6})");
    }
    // What the newer versions added works on the migrated file: an interrupted run, with its writer.
    const std::int64_t id = store.begin_run(test::sample_info());
    store.add_step(id, {0, 0, 0.01, 0, 0, 0, 0.02, 32, 100, 1.0});
    store.finish_run(id, RunStatus::Interrupted);
    EXPECT_EQ(store.run(id)->status, RunStatus::Interrupted);
    EXPECT_FALSE(store.run(id)->writer.empty());
  }
  RawDb raw(file);
  EXPECT_EQ(raw.integer("SELECT version FROM schema_version"), Store::kSchemaVersion);
  EXPECT_EQ(raw.text("PRAGMA integrity_check"), "ok");
  EXPECT_EQ(raw.text("SELECT COUNT(*) FROM pragma_foreign_key_check"), "0");
  const std::string fresh = dir.file("fresh.db");
  Store{fresh};
  EXPECT_NE(schema_text(fresh).find("'failed','interrupted'"), std::string::npos) << schema_text(fresh);
  EXPECT_EQ(schema_text(file), schema_text(fresh));
}

INSTANTIATE_TEST_SUITE_P(EveryPastVersion, StoreMigration, testing::Range(1, Store::kSchemaVersion),
                         [](const testing::TestParamInfo<int>& p) { return "v" + std::to_string(p.param); });

// The fixtures cover every version before this build's: a new version needs its fixture (make_fixtures.py).
TEST(StoreMigrationFixtures, OneForEveryPastVersion) {
  for (int v = 1; v < Store::kSchemaVersion; ++v)
    EXPECT_TRUE(std::ifstream(std::string(DDPLAB_TEST_DATA) + "/store_v" + std::to_string(v) + ".sql").good()) << v;
}
