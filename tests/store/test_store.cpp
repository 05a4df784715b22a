// Results store: schema, round trips, batching, summaries and the errors a user can meet.
#include <gtest/gtest.h>

#include <cmath>
#include <fstream>
#include <limits>
#include <regex>

#include "ddplab/core/step_totals.hpp"
#include "ddplab/core/store.hpp"
#include "ddplab/core/version.hpp"
#include "store_test_util.hpp"

using namespace ddplab;
using ddplab::test::RawDb;
using ddplab::test::sample_info;
using ddplab::test::TempDir;

namespace {

const std::regex kIsoUtc(R"(\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}Z)");

// Expects fn to throw StoreError whose message contains every one of the pieces.
template <class Fn>
void expect_store_error(Fn fn, std::initializer_list<std::string> pieces) {
  try {
    fn();
    ADD_FAILURE() << "no StoreError thrown";
  } catch (const StoreError& e) {
    std::string msg = e.what();
    for (const auto& p : pieces) EXPECT_NE(msg.find(p), std::string::npos) << "'" << p << "' not in: " << msg;
  }
}

StepMetrics step_row(std::int64_t step, int rank, double step_s, std::int64_t bytes, double loss) {
  StepMetrics m;
  m.step = step;
  m.rank = rank;
  m.step_s = step_s;
  m.bytes_sent = bytes;
  m.loss = loss;
  m.samples = 32;
  return m;
}

}  // namespace

TEST(Store, CreatesParentFolderAndWalSchema) {
  TempDir dir;
  const auto file = dir.file("nested/deeper/results.db");
  { Store store(file); }
  ASSERT_TRUE(std::filesystem::exists(file));
  RawDb raw(file);
  EXPECT_EQ(raw.text("PRAGMA journal_mode"), "wal");
  EXPECT_EQ(raw.integer("SELECT version FROM schema_version"), Store::kSchemaVersion);
  EXPECT_EQ(raw.integer("SELECT COUNT(*) FROM schema_version"), 1);
  for (const char* table : {"runs", "steps", "evaluations", "resources"})
    EXPECT_EQ(
        raw.integer(std::string("SELECT COUNT(*) FROM sqlite_master WHERE type='table' AND name='") + table + "'"), 1)
        << table;
  // Reopening an existing store keeps one version row.
  { Store again(file); }
  EXPECT_EQ(raw.integer("SELECT COUNT(*) FROM schema_version"), 1);
}

TEST(Store, RoundTripsEveryField) {
  TempDir dir;
  const auto file = dir.file("results.db");
  std::int64_t id = 0;
  RunInfo info = sample_info();
  info.scenario = "scen, with \"quotes\"";
  info.world_size = 4;
  info.batch_size = 128;
  StepMetrics m{7, 3, 0.125, 0.25, 0.0625, 0.03125, 0.5, 128, 1234567890123LL, 2.75};
  Evaluation e{7, 12.5, 0.4, 0.875, 0.86, 0.85, 2, {7, 1, 0, 0}};
  Resources r{3, 987654321, 10.5, 12.25, std::nullopt};
  {
    Store store(file);
    id = store.begin_run(info);
    EXPECT_GT(id, 0);
    store.add_step(id, m);
    store.add_evaluation(id, e);
    store.add_resources(id, r);
    store.finish_run(id, RunStatus::Completed);
  }
  Store store(file);
  auto row = store.run(id);
  ASSERT_TRUE(row);
  EXPECT_EQ(row->id, id);
  EXPECT_EQ(row->info.scenario, info.scenario);
  EXPECT_EQ(row->info.strategy, info.strategy);
  EXPECT_EQ(row->info.backend, info.backend);
  EXPECT_EQ(row->info.world_size, 4);
  EXPECT_EQ(row->info.source, RunSource::Measured);
  EXPECT_EQ(row->info.config_json, info.config_json);
  EXPECT_EQ(row->info.host_info, info.host_info);
  EXPECT_EQ(row->info.batch_size, 128);
  EXPECT_EQ(row->version, ddplab::version());
  EXPECT_EQ(row->status, RunStatus::Completed);
  EXPECT_TRUE(std::regex_match(row->started_at, kIsoUtc)) << row->started_at;
  EXPECT_TRUE(std::regex_match(row->ended_at, kIsoUtc)) << row->ended_at;
  EXPECT_LE(row->started_at, row->ended_at);

  auto steps = store.steps(id);
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].step, 7);
  EXPECT_EQ(steps[0].rank, 3);
  EXPECT_EQ(steps[0].compute_s, 0.125);
  EXPECT_EQ(steps[0].comm_s, 0.25);
  EXPECT_EQ(steps[0].exposed_comm_s, 0.0625);
  EXPECT_EQ(steps[0].optimizer_s, 0.03125);
  EXPECT_EQ(steps[0].step_s, 0.5);
  EXPECT_EQ(steps[0].samples, 128);
  EXPECT_EQ(steps[0].bytes_sent, 1234567890123LL);
  EXPECT_EQ(steps[0].loss, 2.75);

  auto evals = store.evaluations(id);
  ASSERT_EQ(evals.size(), 1u);
  EXPECT_EQ(evals[0].step, 7);
  EXPECT_EQ(evals[0].wall_s, 12.5);
  EXPECT_EQ(evals[0].test_loss, 0.4);
  EXPECT_EQ(evals[0].test_accuracy, 0.875);
  EXPECT_EQ(evals[0].macro_precision, 0.86);
  EXPECT_EQ(evals[0].macro_recall, 0.85);
  EXPECT_EQ(evals[0].classes, 2);
  EXPECT_EQ(evals[0].confusion, (std::vector<std::int64_t>{7, 1, 0, 0}));

  auto res = store.resources(id);
  ASSERT_EQ(res.size(), 1u);
  EXPECT_EQ(res[0].rank, 3);
  EXPECT_EQ(res[0].peak_rss_bytes, 987654321);
  EXPECT_EQ(res[0].cpu_s, 10.5);
  EXPECT_EQ(res[0].wall_s, 12.25);

  EXPECT_FALSE(store.run(id + 100));
  EXPECT_TRUE(store.steps(id + 100).empty());
}

TEST(Store, RunningRunHasNoEndAndOrderedReads) {
  TempDir dir;
  Store store(dir.file("r.db"));
  auto id = store.begin_run(sample_info());
  auto row = store.run(id);
  ASSERT_TRUE(row);
  EXPECT_EQ(row->status, RunStatus::Running);
  EXPECT_TRUE(row->ended_at.empty());
  // Inserted out of order, read back by (step, rank).
  for (int step : {2, 0, 1})
    for (int rank : {1, 0}) store.add_step(id, step_row(step, rank, 0.1, 10, 1.0));
  store.add_evaluation(id, {5, 0, 0, 0.5, 0, 0, 0, {}});
  store.add_evaluation(id, {1, 0, 0, 0.1, 0, 0, 0, {}});
  store.add_resources(id, {1, 0, 0, 0, std::nullopt});
  store.add_resources(id, {0, 0, 0, 0, std::nullopt});
  auto steps = store.steps(id);  // reads see this Store's pending rows
  ASSERT_EQ(steps.size(), 6u);
  for (std::size_t i = 0; i < steps.size(); ++i) {
    EXPECT_EQ(steps[i].step, static_cast<std::int64_t>(i / 2));
    EXPECT_EQ(steps[i].rank, static_cast<int>(i % 2));
  }
  auto evals = store.evaluations(id);
  ASSERT_EQ(evals.size(), 2u);
  EXPECT_EQ(evals[0].step, 1);
  EXPECT_EQ(evals[1].step, 5);
  auto res = store.resources(id);
  ASSERT_EQ(res.size(), 2u);
  EXPECT_EQ(res[0].rank, 0);
  EXPECT_EQ(res[1].rank, 1);
}

TEST(Store, BatchesRowsUntilThresholdOrFlush) {
  TempDir dir;
  const auto file = dir.file("b.db");
  Store store(file, /*batch_rows=*/4);
  auto id = store.begin_run(sample_info());
  RawDb raw(file);
  // begin_run is committed at once.
  EXPECT_EQ(raw.text("SELECT status FROM runs WHERE id=" + std::to_string(id)), "running");
  for (int i = 0; i < 3; ++i) store.add_step(id, step_row(i, 0, 0.1, 1, 1));
  EXPECT_EQ(raw.integer("SELECT COUNT(*) FROM steps"), 0);  // pending
  store.add_evaluation(id, {0, 0, 0, 0, 0, 0, 0, {}});      // 4th row of any kind: one transaction
  EXPECT_EQ(raw.integer("SELECT COUNT(*) FROM steps"), 3);
  EXPECT_EQ(raw.integer("SELECT COUNT(*) FROM evaluations"), 1);
  store.add_step(id, step_row(3, 0, 0.1, 1, 1));
  EXPECT_EQ(raw.integer("SELECT COUNT(*) FROM steps"), 3);
  store.flush();
  EXPECT_EQ(raw.integer("SELECT COUNT(*) FROM steps"), 4);
  store.add_resources(id, {0, 1, 1, 1, std::nullopt});
  store.finish_run(id, RunStatus::Failed);  // flushes first
  EXPECT_EQ(raw.integer("SELECT COUNT(*) FROM resources"), 1);
  EXPECT_EQ(raw.text("SELECT status FROM runs"), "failed");
}

TEST(Store, DestructorFlushesPendingRows) {
  TempDir dir;
  const auto file = dir.file("d.db");
  std::int64_t id = 0;
  {
    Store store(file, 1000);
    id = store.begin_run(sample_info());
    for (int i = 0; i < 10; ++i) store.add_step(id, step_row(i, 0, 0.1, 1, 1));
  }
  Store store(file);
  EXPECT_EQ(store.steps(id).size(), 10u);
  EXPECT_EQ(store.run(id)->status, RunStatus::Running);
}

TEST(Store, NanLossIsNullAndReadsBackAsNan) {
  TempDir dir;
  const auto file = dir.file("nan.db");
  std::int64_t id = 0;
  {
    Store store(file);
    id = store.begin_run(sample_info("ring", RunSource::Simulated));
    store.add_step(id, step_row(0, 0, 0.2, 100, std::numeric_limits<double>::quiet_NaN()));
    store.add_step(id, step_row(0, 1, 0.3, 100, std::numeric_limits<double>::quiet_NaN()));
    store.finish_run(id, RunStatus::Completed);
  }
  RawDb raw(file);
  EXPECT_EQ(raw.integer("SELECT COUNT(*) FROM steps WHERE loss IS NULL"), 2);
  Store store(file);
  auto steps = store.steps(id);
  ASSERT_EQ(steps.size(), 2u);
  EXPECT_TRUE(std::isnan(steps[0].loss));
  EXPECT_TRUE(std::isnan(steps[1].loss));
  auto sum = store.summary(id);
  EXPECT_FALSE(sum.final_loss);
  EXPECT_FALSE(sum.final_accuracy);
  EXPECT_DOUBLE_EQ(sum.step_s, 0.3);
}

// 2 ranks x 3 steps, every aggregate computed by hand.
TEST(Store, SummaryMatchesHandComputedValues) {
  TempDir dir;
  Store store(dir.file("sum.db"));
  auto id = store.begin_run(sample_info());
  //                     step rank compute comm  exposed opt   step_s samples bytes loss
  const StepMetrics rows[] = {
      {0, 0, 0.06, 0.02, 0.01, 0.01, 0.10, 32, 1000, 3.0}, {0, 1, 0.08, 0.04, 0.03, 0.01, 0.15, 32, 2000, 3.2},
      {1, 0, 0.10, 0.06, 0.05, 0.02, 0.20, 32, 3000, 2.0}, {1, 1, 0.04, 0.02, 0.01, 0.02, 0.10, 32, 4000, 2.4},
      {2, 0, 0.12, 0.08, 0.07, 0.03, 0.30, 32, 5000, 1.0}, {2, 1, 0.20, 0.10, 0.09, 0.03, 0.40, 32, 6000, 2.0},
  };
  for (const auto& m : rows) store.add_step(id, m);
  // Evaluations inserted with the last step first: the final one is the one with the largest step.
  store.add_evaluation(id, {2, 9.0, 0.5, 0.7, 0.69, 0.68, 0, {}});
  store.add_evaluation(id, {1, 5.0, 0.9, 0.5, 0.49, 0.48, 0, {}});
  store.finish_run(id, RunStatus::Completed);

  auto s = store.summary(id);
  EXPECT_EQ(s.run.id, id);
  EXPECT_EQ(s.run.status, RunStatus::Completed);
  EXPECT_EQ(s.steps, 3);
  // slowest per step: 0.15, 0.20, 0.40 -> sum 0.75, mean 0.25; samples 6 x 32 = 192.
  EXPECT_NEAR(s.step_s, 0.25, 1e-12);
  EXPECT_NEAR(s.samples_per_s, 192.0 / 0.75, 1e-9);
  EXPECT_NEAR(s.compute_s, 0.60 / 6, 1e-12);
  EXPECT_NEAR(s.comm_s, 0.32 / 6, 1e-12);
  EXPECT_NEAR(s.exposed_comm_s, 0.26 / 6, 1e-12);
  EXPECT_NEAR(s.optimizer_s, 0.12 / 6, 1e-12);
  EXPECT_NEAR(s.bytes_per_step, 3500.0, 1e-9);
  ASSERT_TRUE(s.final_loss);
  EXPECT_NEAR(*s.final_loss, 1.5, 1e-12);
  ASSERT_TRUE(s.final_accuracy);
  EXPECT_NEAR(*s.final_accuracy, 0.7, 1e-12);

  auto all = store.summaries();
  ASSERT_EQ(all.size(), 1u);
  EXPECT_NEAR(all[0].samples_per_s, s.samples_per_s, 1e-12);
  EXPECT_EQ(s.skipped, 0);

  // Warm-up skipped: steps 1 and 2 only (slowest 0.20 and 0.40; 4 rows x 32 samples). Loss and accuracy
  // are the final ones either way.
  auto w = store.summary(id, 1);
  EXPECT_EQ(w.steps, 2);
  EXPECT_EQ(w.skipped, 1);
  EXPECT_NEAR(w.step_s, 0.30, 1e-12);
  EXPECT_NEAR(w.samples_per_s, 128.0 / 0.60, 1e-9);
  EXPECT_NEAR(w.compute_s, (0.10 + 0.04 + 0.12 + 0.20) / 4, 1e-12);
  EXPECT_NEAR(w.bytes_per_step, 4500.0, 1e-9);
  ASSERT_TRUE(w.final_loss);
  EXPECT_NEAR(*w.final_loss, 1.5, 1e-12);
  EXPECT_NEAR(store.summaries(1).at(0).step_s, 0.30, 1e-12);
  // More to skip than there are steps: the last step still counts.
  auto last = store.summary(id, 10);
  EXPECT_EQ(last.steps, 1);
  EXPECT_EQ(last.skipped, 2);
  EXPECT_NEAR(last.step_s, 0.40, 1e-12);
  EXPECT_NEAR(last.samples_per_s, 64.0 / 0.40, 1e-9);
}

// A run that stored its step pattern (warm-up of 2 steps, blocks of 2): a measured run is averaged over
// its whole steady blocks, a simulated one over the block it simulated, with each warm-up block counted as
// often as its segment repeats it.
TEST(Store, SummaryFollowsTheRunsStepPattern) {
  TempDir dir;
  Store store(dir.file("pattern.db"));
  const std::string pattern = R"({"pattern": {"segments": [{"first": 0, "length": 1, "repeats": 2, "what": "w"},)"
                              R"( {"first": 2, "length": 2, "repeats": 0, "what": "s"}]}})";
  RunInfo info = sample_info();
  info.config_json = pattern;
  const auto measured = store.begin_run(info);
  // One rank, steps 0..6: the window is 2..5 (two whole blocks); step 6 starts a block it does not finish.
  const double step_s[] = {1.0, 0.5, 0.1, 0.3, 0.1, 0.3, 9.0};
  for (int step = 0; step < 7; ++step)
    store.add_step(measured, {step, 0, 0.05, 0.01 * step, 0.0, 0.01, step_s[step], 10, 100 * step, 1.0});
  store.finish_run(measured, RunStatus::Completed);
  const RunSummary m = store.summary(measured);
  EXPECT_EQ(m.period, 2);
  EXPECT_EQ(m.steps, 4);
  EXPECT_EQ(m.skipped, 2);
  EXPECT_EQ(m.warmup_steps, 2);
  EXPECT_NEAR(m.warmup_s, 1.5, 1e-12);
  EXPECT_NEAR(m.step_s, 0.8 / 4, 1e-12);
  EXPECT_NEAR(m.samples_per_s, 40 / 0.8, 1e-9);
  EXPECT_NEAR(m.comm_s, 0.01 * (2 + 3 + 4 + 5) / 4, 1e-12);
  EXPECT_NEAR(m.bytes_per_step, 100.0 * (2 + 3 + 4 + 5) / 4, 1e-9);
  // --skip-steps 3 moves the window to the next block boundary: steps 4 and 5.
  const RunSummary later = store.summary(measured, 3);
  EXPECT_EQ(later.steps, 2);
  EXPECT_NEAR(later.samples_per_s, 20 / 0.4, 1e-9);

  info.source = RunSource::Simulated;
  const auto simulated = store.begin_run(info);
  // Two ranks; the warm-up block (step 0) stands for 2 steps, the steady block is steps 2 and 3.
  for (int rank = 0; rank < 2; ++rank) {
    store.add_step(simulated, {0, rank, 0.05, 0.0, 0.0, 0.0, 0.25 + 0.05 * rank, 10, 0, NAN});
    store.add_step(simulated, {2, rank, 0.05, 0.1, 0.0, 0.0, 0.1, 10, 0, NAN});
    store.add_step(simulated, {3, rank, 0.05, 0.0, 0.0, 0.0, 0.2 + 0.1 * rank, 10, 0, NAN});
  }
  store.finish_run(simulated, RunStatus::Completed);
  const RunSummary s = store.summary(simulated);
  EXPECT_EQ(s.steps, 2);
  EXPECT_EQ(s.warmup_steps, 2);
  EXPECT_NEAR(s.warmup_s, 2 * 0.30, 1e-12);
  EXPECT_NEAR(s.step_s, (0.1 + 0.3) / 2, 1e-12);
  EXPECT_NEAR(s.samples_per_s, 40 / 0.4, 1e-9);
  EXPECT_NEAR(s.comm_s, 0.2 / 4, 1e-12);
}

TEST(Store, SummaryOfEmptyRunAndUnknownRun) {
  TempDir dir;
  Store store(dir.file("e.db"));
  auto id = store.begin_run(sample_info());
  auto s = store.summary(id);
  EXPECT_EQ(s.steps, 0);
  EXPECT_EQ(s.samples_per_s, 0);
  EXPECT_EQ(s.step_s, 0);
  EXPECT_EQ(s.bytes_per_step, 0);
  EXPECT_FALSE(s.final_loss);
  EXPECT_FALSE(s.final_accuracy);
  expect_store_error([&] { store.summary(id + 1); }, {store.path(), "no run"});
}

TEST(Store, SummariesOldestFirstAndLatestMeasured) {
  TempDir dir;
  Store store(dir.file("l.db"));
  EXPECT_FALSE(store.latest_measured("default", "ring"));
  auto a = store.begin_run(sample_info("ring"));
  store.finish_run(a, RunStatus::Completed);
  auto b = store.begin_run(sample_info("ring"));
  store.finish_run(b, RunStatus::Completed);
  auto c = store.begin_run(sample_info("ring"));  // still running: not eligible
  auto d = store.begin_run(sample_info("ring", RunSource::Simulated));
  store.finish_run(d, RunStatus::Completed);
  auto e = store.begin_run(sample_info("ring"));
  store.finish_run(e, RunStatus::Failed);
  auto f = store.begin_run(sample_info("tree"));
  store.finish_run(f, RunStatus::Completed);
  EXPECT_EQ(store.latest_measured("default", "ring"), b);
  EXPECT_EQ(store.latest_measured("default", "tree"), f);
  EXPECT_FALSE(store.latest_measured("other", "ring"));
  auto all = store.summaries();
  ASSERT_EQ(all.size(), 6u);
  const std::int64_t order[] = {a, b, c, d, e, f};
  for (std::size_t i = 0; i < all.size(); ++i) EXPECT_EQ(all[i].run.id, order[i]);
  ASSERT_EQ(store.runs().size(), 6u);
}

TEST(Store, RefusesNewerSchemaVersion) {
  TempDir dir;
  const auto file = dir.file("future.db");
  { Store store(file); }
  {
    RawDb raw(file);
    raw.exec("UPDATE schema_version SET version = 99");
  }
  expect_store_error([&] { Store store(file); }, {file, "99", std::to_string(Store::kSchemaVersion)});
  // Refusal leaves the file untouched.
  RawDb raw(file);
  EXPECT_EQ(raw.integer("SELECT version FROM schema_version"), 99);
}

TEST(Store, RefusesFileThatIsNotADatabase) {
  TempDir dir;
  const auto file = dir.file("notes.db");
  {
    std::ofstream out(file);
    for (int i = 0; i < 200; ++i) out << "this is a text file, not a database\n";
  }
  expect_store_error([&] { Store store(file); }, {file, "not a database"});
}

TEST(Store, RejectsBadValuesWithPath) {
  TempDir dir;
  const auto file = dir.file("bad.db");
  Store store(file, 2);
  RunInfo info = sample_info();
  info.source = static_cast<RunSource>(99);  // a value without a name: the store's CHECK refuses it
  expect_store_error([&] { store.begin_run(info); }, {file, "CHECK"});
  auto id = store.begin_run(sample_info());
  expect_store_error([&] { store.finish_run(id, RunStatus::Running); }, {file, "completed"});
  expect_store_error([&] { store.finish_run(id + 50, RunStatus::Completed); }, {file, "no run"});
  // Duplicate (run, step, rank): the batch fails as a whole and is dropped...
  store.add_step(id, step_row(0, 0, 0.1, 1, 1));
  expect_store_error([&] { store.add_step(id, step_row(0, 0, 0.1, 1, 1)); }, {file, "UNIQUE", "dropped"});
  // ...and the run can still be marked failed afterwards.
  store.add_step(id, step_row(1, 0, 0.1, 1, 1));
  store.finish_run(id, RunStatus::Failed);
  EXPECT_EQ(store.run(id)->status, RunStatus::Failed);
  auto steps = store.steps(id);
  ASSERT_EQ(steps.size(), 1u);
  EXPECT_EQ(steps[0].step, 1);
  // Rows for a run that does not exist break the foreign key.
  store.add_step(id + 99, step_row(0, 0, 0.1, 1, 1));
  expect_store_error([&] { store.flush(); }, {file, "FOREIGN KEY"});
}

TEST(Store, TwoConnectionsShareTheFile) {
  TempDir dir;
  const auto file = dir.file("shared.db");
  Store writer(file, 2);
  Store reader(file);
  auto id = writer.begin_run(sample_info());
  writer.add_step(id, step_row(0, 0, 0.1, 1, 1));
  EXPECT_TRUE(reader.steps(id).empty());
  writer.add_step(id, step_row(0, 1, 0.1, 1, 1));
  EXPECT_EQ(reader.steps(id).size(), 2u);
  EXPECT_EQ(reader.run(id)->status, RunStatus::Running);
}

TEST(Store, ReadOnlyReadsWhatAWriterStoresAndWritesNothing) {
  TempDir dir;
  const auto file = dir.file("viewed.db");
  Store writer(file, 1);
  const auto id = writer.begin_run(sample_info());
  writer.add_step(id, step_row(0, 0, 0.1, 1, 2.5));
  Store viewer(file, Store::Access::ReadOnly);
  EXPECT_TRUE(viewer.read_only());
  ASSERT_EQ(viewer.steps(id).size(), 1u);
  writer.add_step(id, step_row(1, 0, 0.1, 1, 2.0));  // a run being written shows up in the open viewer
  EXPECT_EQ(viewer.steps(id).size(), 2u);
  expect_store_error([&] { viewer.begin_run(sample_info()); }, {file, "readonly"});
  expect_store_error([&] { viewer.delete_runs({id}); }, {file, "readonly"});
  EXPECT_EQ(writer.runs().size(), 1u);
}

TEST(Store, ReadOnlyRefusesMissingForeignOlderAndNewerFiles) {
  TempDir dir;
  expect_store_error([&] { Store s(dir.file("absent.db"), Store::Access::ReadOnly); }, {"absent.db", "no such file"});
  EXPECT_FALSE(std::filesystem::exists(dir.file("absent.db")));  // never created
  const auto text = dir.file("notes.db");
  {
    std::ofstream out(text);
    for (int i = 0; i < 200; ++i) out << "this is a text file, not a database\n";
  }
  expect_store_error([&] { Store s(text, Store::Access::ReadOnly); }, {text, "not a database"});
  const auto foreign = dir.file("foreign.db");
  {
    RawDb raw(foreign);
    raw.exec("CREATE TABLE t(x)");
  }
  expect_store_error([&] { Store s(foreign, Store::Access::ReadOnly); }, {foreign, "not a ddplab results store"});
  const auto old = dir.file("old.db");
  { Store s(old); }
  {
    RawDb raw(old);
    raw.exec("UPDATE schema_version SET version = 5");
  }
  expect_store_error([&] { Store s(old, Store::Access::ReadOnly); }, {old, "version 5 is older", "ddplab report --db"});
  {
    RawDb raw(old);
    EXPECT_EQ(raw.integer("SELECT version FROM schema_version"), 5);
  }  // left as it was
  {
    RawDb raw(old);
    raw.exec("UPDATE schema_version SET version = 99");
  }
  expect_store_error([&] { Store s(old, Store::Access::ReadOnly); }, {old, "99", "newer"});
}

TEST(Store, DeleteRunsRemovesTheirRowsInOneTransaction) {
  TempDir dir;
  const auto file = dir.file("prune.db");
  Store store(file, 1);
  std::vector<std::int64_t> ids;
  for (int i = 0; i < 3; ++i) {
    ids.push_back(store.begin_run(sample_info()));
    store.add_step(ids.back(), step_row(0, 0, 0.1, 1, 1.0));
    store.add_evaluation(ids.back(), Evaluation{1, 1.0, 0.5, 0.8, 0.8, 0.8, 0, {}});
    store.add_resources(ids.back(), Resources{0, 1 << 20, 1.0, 1.0, std::nullopt});
    store.finish_run(ids.back(), RunStatus::Completed);
  }
  PredictionRow p;
  p.scenario = "default", p.strategy = "ring", p.target_accuracy = 0.8, p.world_size = 4, p.global_batch = 64;
  p.updates = 10, p.step_s = 0.1, p.time_s = 1.0, p.sim_run_id = ids[0], p.fit_json = "{}";
  store.add_predictions({p});
  // An unknown id anywhere in the list: nothing is deleted.
  expect_store_error([&] { store.delete_runs({ids[0], 999}); }, {file, "no run with id 999"});
  EXPECT_EQ(store.runs().size(), 3u);
  store.delete_runs({ids[0], ids[2]});
  ASSERT_EQ(store.runs().size(), 1u);
  EXPECT_EQ(store.runs()[0].id, ids[1]);
  EXPECT_EQ(store.steps(ids[1]).size(), 1u);
  RawDb raw(file);
  EXPECT_EQ(raw.integer("SELECT COUNT(*) FROM steps"), 1);
  EXPECT_EQ(raw.integer("SELECT COUNT(*) FROM evaluations"), 1);
  EXPECT_EQ(raw.integer("SELECT COUNT(*) FROM resources"), 1);
  EXPECT_EQ(raw.text("SELECT sim_run_id FROM predictions"), "");  // the prediction stays, unlinked
  EXPECT_EQ(store.predictions().size(), 1u);
}

TEST(Store, TraceEventsRoundTripAndGoWithTheirRun) {
  TempDir dir;
  const auto file = dir.file("trace.db");
  Store store(file, 1);
  const auto id = store.begin_run(sample_info());
  const auto other = store.begin_run(sample_info());
  std::vector<TraceEvent> events = {
      {1, "comm", "sync_grads 0", 0.030, 0.010, {{"step", 5}, {"bytes", 4096}}},
      {0, "compute", "backward 1", 0.010, 0.020, {{"step", 5}}},
      {0, "compute", "forward 0", 0.001, 0.005, {{"step", 4}}},
  };
  store.add_trace(id, events);
  store.add_trace(other, {{0, "compute", "forward 0", 0.0, 1.0, {{"step", 0}}}});
  const auto back = store.trace_events(id);
  ASSERT_EQ(back.size(), 3u);
  // Ordered by step, rank, start: step 4 first, then step 5's rank 0 before rank 1.
  EXPECT_EQ(back[0].name, "forward 0");
  EXPECT_EQ(back[1].name, "backward 1");
  EXPECT_EQ(back[2].track, "comm");
  EXPECT_EQ(back[2].rank, 1);
  EXPECT_DOUBLE_EQ(back[2].start_s, 0.030);
  EXPECT_DOUBLE_EQ(back[2].dur_s, 0.010);
  EXPECT_EQ(back[2].args["bytes"], 4096);
  EXPECT_EQ(store.traced_runs(), (std::vector<std::int64_t>{id, other}));
  store.delete_runs({id});
  EXPECT_TRUE(store.trace_events(id).empty());
  EXPECT_EQ(store.traced_runs(), (std::vector<std::int64_t>{other}));
}

TEST(Store, ReadOnlyReadsTheOldestReadableVersionWithoutTimelines) {
  TempDir dir;
  const auto file = dir.file("v6.db");
  std::int64_t id = 0;
  {
    Store store(file);
    id = store.begin_run(sample_info());
    store.add_step(id, step_row(0, 0, 0.1, 1, 1.0));
  }
  {
    RawDb raw(file);
    raw.exec("DROP TABLE trace_events; UPDATE schema_version SET version = 6");
  }
  Store viewer(file, Store::Access::ReadOnly);
  EXPECT_EQ(viewer.schema(), 6);
  EXPECT_EQ(viewer.steps(id).size(), 1u);
  EXPECT_TRUE(viewer.trace_events(id).empty());
  EXPECT_TRUE(viewer.traced_runs().empty());
  RawDb raw(file);
  EXPECT_EQ(raw.integer("SELECT version FROM schema_version"), 6);  // not migrated
}

namespace {
void expect_same_summary(const RunSummary& a, const RunSummary& b) {
  EXPECT_EQ(a.steps, b.steps);
  EXPECT_EQ(a.skipped, b.skipped);
  EXPECT_EQ(a.period, b.period);
  EXPECT_EQ(a.warmup_steps, b.warmup_steps);
  EXPECT_DOUBLE_EQ(a.warmup_s, b.warmup_s);
  EXPECT_DOUBLE_EQ(a.samples_per_s, b.samples_per_s);
  EXPECT_DOUBLE_EQ(a.step_s, b.step_s);
  EXPECT_DOUBLE_EQ(a.compute_s, b.compute_s);
  EXPECT_DOUBLE_EQ(a.exposed_comm_s, b.exposed_comm_s);
  EXPECT_DOUBLE_EQ(a.bytes_per_step, b.bytes_per_step);
  EXPECT_EQ(a.final_loss.has_value(), b.final_loss.has_value());
  if (a.final_loss && b.final_loss) {
    EXPECT_DOUBLE_EQ(*a.final_loss, *b.final_loss);
  }
  EXPECT_EQ(a.final_accuracy, b.final_accuracy);
}
}  // namespace

TEST(Store, FinishedRunsKeepTheirStepTotalsAndSummary) {
  TempDir dir;
  const auto file = dir.file("cache.db");
  Store store(file, 3);
  const auto id = store.begin_run(sample_info());
  std::vector<StepMetrics> rows;
  for (int step = 0; step < 5; ++step)
    for (int rank = 0; rank < 2; ++rank) {
      StepMetrics m = step_row(step, rank, 0.1 + 0.01 * rank + 0.001 * step, 100 + rank,
                               rank == 1 && step == 2 ? std::numeric_limits<double>::quiet_NaN() : 1.0 + step + rank);
      m.compute_s = 0.05, m.samples = 32;
      rows.push_back(m);
      store.add_step(id, m);
    }
  store.add_evaluation(id, Evaluation{5, 1.0, 0.5, 0.75, 0.7, 0.7, 0, {}});
  // Running: computed from the rows, the same as core's step_totals.
  const auto live = store.totals(id);
  const auto want = step_totals(rows);
  ASSERT_EQ(live.size(), want.size());
  const RunSummary before = store.summary(id);
  store.finish_run(id, RunStatus::Completed);
  RawDb raw(file);
  EXPECT_EQ(raw.integer("SELECT COUNT(*) FROM step_totals WHERE run_id = " + std::to_string(id)), 5);
  EXPECT_EQ(raw.integer("SELECT COUNT(*) FROM run_summaries"), 1);
  const auto cached = store.totals(id);
  ASSERT_EQ(cached.size(), want.size());
  for (std::size_t i = 0; i < want.size(); ++i) {
    for (const auto* t : {&live[i], &cached[i]}) {
      EXPECT_EQ(t->step, want[i].step);
      EXPECT_EQ(t->ranks, want[i].ranks);
      EXPECT_DOUBLE_EQ(t->slowest_s, want[i].slowest_s);
      EXPECT_DOUBLE_EQ(t->samples, want[i].samples);
      EXPECT_DOUBLE_EQ(t->bytes_sent, want[i].bytes_sent);
      EXPECT_DOUBLE_EQ(t->mean_loss, want[i].mean_loss);  // step 2: rank 0's loss alone (rank 1's is NaN)
    }
  }
  EXPECT_DOUBLE_EQ(cached[2].mean_loss, 3.0);
  // The cached summary is what the rows give.
  const RunSummary after = store.summary(id);
  expect_same_summary(after, before);
  EXPECT_EQ(after.run.status, RunStatus::Completed);
  raw.exec("DELETE FROM run_summaries");
  expect_same_summary(store.summary(id), after);
  // A summary of another definition is not trusted.
  raw.exec("INSERT INTO run_summaries VALUES(" + std::to_string(id) + ", 999, '{}')");
  expect_same_summary(store.summary(id), after);
}

TEST(Store, MigratingToVersion8FillsTheCachesOfFinishedRuns) {
  TempDir dir;
  const auto file = dir.file("v7.db");
  std::int64_t done = 0, running = 0;
  RunSummary want;
  {
    Store store(file, 1);
    done = store.begin_run(sample_info());
    running = store.begin_run(sample_info());
    for (int step = 0; step < 4; ++step) {
      store.add_step(done, step_row(step, 0, 0.1 * (step + 1), 10, 2.0 - step));
      store.add_step(running, step_row(step, 0, 0.2, 10, 1.0));
    }
    store.finish_run(done, RunStatus::Completed);
    want = store.summary(done);
  }
  {
    RawDb raw(file);
    raw.exec(
        "DROP TABLE step_totals; DROP TABLE run_summaries; ALTER TABLE runs DROP COLUMN writer; ALTER TABLE runs DROP "
        "COLUMN reason; "
        "UPDATE schema_version SET version = 7");
  }
  {
    Store viewer(file, Store::Access::ReadOnly);  // version 7, read as it is: computed from the rows
    EXPECT_EQ(viewer.schema(), 7);
    expect_same_summary(viewer.summary(done), want);
  }
  Store store(file);
  RawDb raw(file);
  EXPECT_EQ(raw.integer("SELECT version FROM schema_version"), Store::kSchemaVersion);
  EXPECT_EQ(raw.integer("SELECT COUNT(*) FROM step_totals WHERE run_id = " + std::to_string(done)), 4);
  EXPECT_EQ(raw.integer("SELECT COUNT(*) FROM step_totals WHERE run_id = " + std::to_string(running)), 0);
  EXPECT_EQ(raw.integer("SELECT COUNT(*) FROM run_summaries"), 1);
  expect_same_summary(store.summary(done), want);
  EXPECT_EQ(store.totals(running).size(), 4u);  // a running run's from its rows
  store.delete_runs({done});
  EXPECT_EQ(raw.integer("SELECT COUNT(*) FROM step_totals"), 0);
  EXPECT_EQ(raw.integer("SELECT COUNT(*) FROM run_summaries"), 0);
}

// Version 9 lets a run end "interrupted": the migration edits the runs table's CHECK in place, keeping every
// row, and the connection that migrated can store the new status at once.
TEST(Store, MigratesVersion8ToLetRunsEndInterrupted) {
  TempDir dir;
  const std::string file = dir.file("v8.db");
  std::int64_t done = 0, running = 0;
  {
    Store store(file, 1);
    done = store.begin_run(sample_info());
    running = store.begin_run(sample_info());
    for (int step = 0; step < 3; ++step) {
      store.add_step(done, step_row(step, 0, 0.1, 10, 1.0));
      store.add_step(running, step_row(step, 0, 0.1, 10, 1.0));
    }
    store.finish_run(done, RunStatus::Completed);
  }
  {
    RawDb raw(file);  // what version 8 wrote: no "interrupted"
    raw.exec(
        "PRAGMA writable_schema = ON; "
        "UPDATE sqlite_master SET sql = replace(sql, ',''interrupted''', '') WHERE name = 'runs'; "
        "PRAGMA writable_schema = OFF; ALTER TABLE runs DROP COLUMN writer; ALTER TABLE runs DROP COLUMN reason; "
        "UPDATE schema_version SET version = 8");
  }
  {
    RawDb raw(file);
    EXPECT_THROW(raw.exec("UPDATE runs SET status = 'interrupted' WHERE id = " + std::to_string(running)),
                 std::runtime_error);
  }
  Store store(file);
  store.finish_run(running, RunStatus::Interrupted);
  EXPECT_EQ(store.run(running)->status, RunStatus::Interrupted);
  EXPECT_EQ(store.run(done)->status, RunStatus::Completed);
  EXPECT_EQ(store.totals(done).size(), 3u);
  EXPECT_EQ(store.totals(running).size(), 3u);
  RawDb raw(file);
  EXPECT_EQ(raw.integer("SELECT version FROM schema_version"), Store::kSchemaVersion);
  EXPECT_EQ(raw.text("PRAGMA integrity_check"), "ok");
  EXPECT_THROW(raw.exec("UPDATE runs SET status = 'paused' WHERE id = " + std::to_string(done)), std::runtime_error);
  EXPECT_THROW(store.finish_run(done, RunStatus::Running), StoreError);  // not an outcome
}
