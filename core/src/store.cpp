// Results store over SQLite (WAL). Writers buffer rows and commit them in one transaction per batch,
// so a crash loses at most the rows not yet flushed; readers aggregate in SQL.
#include "ddplab/core/store.hpp"

#include <sqlite3.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <iterator>
#include <limits>
#include <optional>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ddplab/core/process_identity.hpp"
#include "ddplab/core/step_pattern.hpp"
#include "ddplab/core/step_totals.hpp"
#include "ddplab/core/version.hpp"
#include "store_sql.hpp"

namespace ddplab {
namespace {

// Schema version 1, as first shipped; later versions are migrations on top of it, so a new file and a
// migrated old one end up identical. Metric columns are nullable so NaN (stored as NULL) never violates a constraint.
constexpr const char* kSchema = R"sql(
CREATE TABLE IF NOT EXISTS runs(
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
  status TEXT NOT NULL CHECK(status IN ('running','completed','failed','interrupted')));
CREATE INDEX IF NOT EXISTS runs_by_name ON runs(scenario, strategy, source, status);
CREATE TABLE IF NOT EXISTS steps(
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  step INTEGER NOT NULL,
  rank INTEGER NOT NULL,
  compute_s REAL, comm_s REAL, exposed_comm_s REAL, optimizer_s REAL, step_s REAL,
  samples INTEGER NOT NULL,
  bytes_sent INTEGER NOT NULL,
  loss REAL,
  PRIMARY KEY(run_id, step, rank)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS evaluations(
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  step INTEGER NOT NULL,
  wall_s REAL, test_loss REAL, test_accuracy REAL, macro_precision REAL, macro_recall REAL);
CREATE INDEX IF NOT EXISTS evaluations_by_run ON evaluations(run_id, step);
CREATE TABLE IF NOT EXISTS resources(
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  rank INTEGER NOT NULL,
  peak_rss_bytes INTEGER NOT NULL,
  cpu_s REAL, wall_s REAL);
CREATE INDEX IF NOT EXISTS resources_by_run ON resources(run_id, rank);
)sql";

// Version 2: collective benchmarks (`ddplab bench collectives`), one bench_runs row per invocation and one
// collective_bench row per (schedule, size). To compare schedules across benches, join on bench_id.
constexpr const char* kMigrateTo2 = R"sql(
CREATE TABLE IF NOT EXISTS bench_runs(
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  kind TEXT NOT NULL,
  backend TEXT NOT NULL,
  world_size INTEGER NOT NULL CHECK(world_size >= 1),
  ranks_per_node INTEGER NOT NULL CHECK(ranks_per_node >= 1),
  iters INTEGER NOT NULL,
  warmup INTEGER NOT NULL,
  config TEXT NOT NULL,
  host_info TEXT NOT NULL,
  version TEXT NOT NULL,
  started_at TEXT NOT NULL,
  ended_at TEXT,
  status TEXT NOT NULL CHECK(status IN ('running','completed','failed')));
CREATE TABLE IF NOT EXISTS collective_bench(
  id INTEGER PRIMARY KEY,
  bench_id INTEGER NOT NULL REFERENCES bench_runs(id) ON DELETE CASCADE,
  schedule TEXT NOT NULL,
  collective TEXT NOT NULL,
  type TEXT NOT NULL,
  bytes INTEGER NOT NULL CHECK(bytes >= 0),
  count INTEGER NOT NULL CHECK(count >= 0),
  time_us REAL, algbw_gbs REAL, busbw_gbs REAL,
  wrong INTEGER);
CREATE INDEX IF NOT EXISTS collective_bench_by_bench ON collective_bench(bench_id, schedule, bytes);
)sql";

// Version 3: `ddplab calibrate` fits (one calibrations row per fit, its ping-pong measurements in
// calibration_pingpong) and `ddplab validate` comparisons (validations).
constexpr const char* kMigrateTo3 = R"sql(
CREATE TABLE IF NOT EXISTS calibrations(
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT NOT NULL,
  created_at TEXT NOT NULL,
  host_info TEXT NOT NULL,
  fit TEXT NOT NULL,
  version TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS calibrations_by_name ON calibrations(name, id);
CREATE TABLE IF NOT EXISTS calibration_pingpong(
  calibration_id INTEGER NOT NULL REFERENCES calibrations(id) ON DELETE CASCADE,
  src INTEGER NOT NULL, dst INTEGER NOT NULL,
  bytes INTEGER NOT NULL CHECK(bytes >= 0),
  iters INTEGER NOT NULL,
  one_way_s REAL);
CREATE INDEX IF NOT EXISTS calibration_pingpong_by_id ON calibration_pingpong(calibration_id, src, dst, bytes);
CREATE TABLE IF NOT EXISTS validations(
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  created_at TEXT NOT NULL,
  calibration TEXT NOT NULL,
  kind TEXT NOT NULL CHECK(kind IN ('run','collective')),
  ref_id INTEGER NOT NULL,
  label TEXT NOT NULL,
  world_size INTEGER NOT NULL,
  bytes INTEGER NOT NULL,
  metric TEXT NOT NULL,
  measured REAL, predicted REAL, error_pct REAL);
)sql";

// Version 4: peak device memory per rank (NULL for host backends and for runs stored before).
constexpr const char* kMigrateTo4 = R"sql(
ALTER TABLE resources ADD COLUMN peak_device_bytes INTEGER;
)sql";

// Version 5: each evaluation's confusion matrix, a JSON array of its rows (row = true class), from which
// per-class precision, recall and F1 follow (class_metrics.hpp).
constexpr const char* kMigrateTo5 = R"sql(
ALTER TABLE evaluations ADD COLUMN confusion TEXT;
)sql";

// Version 6: `ddplab predict`'s time-to-accuracy predictions, one row per strategy and world size, with the
// statistical-efficiency fit they used (JSON) and, where the store held one, the measured counterpart.
constexpr const char* kMigrateTo6 = R"sql(
CREATE TABLE IF NOT EXISTS predictions(
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  created_at TEXT NOT NULL,
  scenario TEXT NOT NULL,
  strategy TEXT NOT NULL,
  target_accuracy REAL NOT NULL,
  world_size INTEGER NOT NULL,
  global_batch REAL NOT NULL,
  updates REAL NOT NULL,
  step_s REAL NOT NULL,
  time_s REAL NOT NULL,
  sim_run_id INTEGER REFERENCES runs(id) ON DELETE SET NULL,
  fit TEXT NOT NULL,
  measured_s REAL,
  measured_runs TEXT NOT NULL DEFAULT '[]',
  version TEXT NOT NULL);
CREATE INDEX IF NOT EXISTS predictions_by_scenario ON predictions(scenario, strategy, id);
)sql";

// Version 7: timelines, one row per op of the traced steps (a measured run's last steady steps, or the steps
// `--trace-steps` named; a small simulation's simulated steps), as core/trace.hpp's TraceEvent.
constexpr const char* kMigrateTo7 = R"sql(
CREATE TABLE IF NOT EXISTS trace_events(
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  rank INTEGER NOT NULL,
  step INTEGER NOT NULL,
  track TEXT NOT NULL,
  name TEXT NOT NULL,
  start_s REAL NOT NULL,
  dur_s REAL NOT NULL,
  args TEXT NOT NULL DEFAULT '{}');
CREATE INDEX IF NOT EXISTS trace_events_by_run ON trace_events(run_id, step, rank);
)sql";

// Version 8: what a finished run's readers need without scanning its step rows (80M rows for 1000 runs of 10k
// steps on 8 ranks): its steps collapsed over ranks (step_totals.hpp's StepTotals, and the mean loss) and its
// summary (RunSummary at skip_steps 0, as JSON, with the version of its definition). Written by finish_run;
// migrating a file fills both for the runs it holds that have finished.
constexpr const char* kMigrateTo8 = R"sql(
CREATE TABLE IF NOT EXISTS step_totals(
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  step INTEGER NOT NULL,
  ranks INTEGER NOT NULL,
  slowest_s REAL, samples REAL, compute_s REAL, comm_s REAL, exposed_comm_s REAL, optimizer_s REAL, bytes_sent REAL,
  mean_loss REAL,
  PRIMARY KEY(run_id, step)) WITHOUT ROWID;
CREATE TABLE IF NOT EXISTS run_summaries(
  run_id INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
  definition INTEGER NOT NULL,
  summary TEXT NOT NULL);
INSERT OR REPLACE INTO step_totals
  SELECT run_id, step, COUNT(*), MAX(step_s), TOTAL(samples), TOTAL(compute_s), TOTAL(comm_s), TOTAL(exposed_comm_s),
         TOTAL(optimizer_s), TOTAL(bytes_sent), AVG(loss)
  FROM steps WHERE run_id IN (SELECT id FROM runs WHERE status != 'running') GROUP BY run_id, step;
)sql";

// Version 9: a run may end "interrupted" (SIGINT / SIGTERM to its launcher). Only the runs table's CHECK
// changes, which does not touch stored rows: SQLite documents editing the schema text in place for such
// changes (writable_schema, then a schema cookie bump: Migration::new_schema_text). Rebuilding the table
// instead would cascade-delete every run's rows, foreign keys being on inside the migration's transaction.
constexpr const char* kMigrateTo9 = R"sql(
PRAGMA writable_schema = ON;
UPDATE sqlite_master SET sql = replace(sql, '''failed''))', '''failed'',''interrupted''))')
  WHERE type = 'table' AND name = 'runs' AND instr(sql, '''interrupted''') = 0;
PRAGMA writable_schema = OFF;
)sql";

// Version 10: which process writes each run (process_identity.hpp, as JSON), so that a run it left "running"
// when it died reads as "abandoned" (NULL for runs stored before: those cannot be checked); and why a run
// that did not complete ended so (a watchdog report, a rank's error), NULL when nothing said; and the flight
// recorder's dumps (core/flight.hpp): each rank's last calls when the run failed.
constexpr const char* kMigrateTo10 = R"sql(
ALTER TABLE runs ADD COLUMN writer TEXT;
ALTER TABLE runs ADD COLUMN reason TEXT;
CREATE TABLE IF NOT EXISTS flight_records(
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  rank INTEGER NOT NULL,
  seq INTEGER NOT NULL,
  step INTEGER NOT NULL,
  op TEXT NOT NULL,
  call TEXT NOT NULL,
  bytes INTEGER NOT NULL,
  start_s REAL NOT NULL,
  end_s REAL,
  failed INTEGER NOT NULL,
  PRIMARY KEY(run_id, rank, seq)) WITHOUT ROWID;
)sql";

// Version 11: checkpoints (checkpoint.hpp) of measured runs: the folder holding the ranks' files of each
// step, their total size and the slowest rank's time to write its file. `ddplab run --resume` continues a
// run from its newest one.
constexpr const char* kMigrateTo11 = R"sql(
CREATE TABLE IF NOT EXISTS checkpoints(
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  step INTEGER NOT NULL,
  path TEXT NOT NULL,
  ranks INTEGER NOT NULL,
  bytes INTEGER NOT NULL,
  write_s REAL NOT NULL,
  final INTEGER NOT NULL,
  created_at TEXT NOT NULL,
  PRIMARY KEY(run_id, step)) WITHOUT ROWID;
)sql";

// Migrations in order; migration i takes a file from version to - 1 to version `to`.
struct Migration {
  int to;
  const char* sql;
  bool new_schema_text = false;  // edits sqlite_master: bump the schema cookie so connections reread it
};
constexpr Migration kMigrations[] = {{2, kMigrateTo2},   {3, kMigrateTo3},  {4, kMigrateTo4}, {5, kMigrateTo5},
                                     {6, kMigrateTo6},   {7, kMigrateTo7},  {8, kMigrateTo8}, {9, kMigrateTo9, true},
                                     {10, kMigrateTo10}, {11, kMigrateTo11}};
static_assert(std::size(kMigrations) == Store::kSchemaVersion - 1, "one migration per version after 1");

// The runs table's columns as read_run reads them; a read-only file older than version 10 has no writer.
std::string run_columns(int schema) {
  return fmt::format(
      "id, scenario, strategy, backend, world_size, source, batch_size, config, host_info, version, "
      "started_at, ended_at, status, {}",
      schema >= 10 ? "writer, reason" : "NULL, NULL");
}

RunRow read_run(const Stmt& s) {
  RunRow r;
  r.id = s.i64(0);
  r.info.scenario = s.text(1);
  r.info.strategy = s.text(2);
  r.info.backend = s.text(3);
  r.info.world_size = s.i32(4);
  r.info.source = s.choice<RunSource>(5);
  r.info.batch_size = s.i32(6);
  r.info.config_json = s.text(7);
  r.info.host_info = s.text(8);
  r.version = s.text(9);
  r.started_at = s.text(10);
  r.ended_at = s.text(11);
  r.status = s.choice<RunStatus>(12);
  r.writer = s.null(13) ? std::string() : s.text(13);
  r.reason = s.null(14) ? std::string() : s.text(14);
  if (r.status == RunStatus::Running && liveness(ProcessIdentity::from_json(r.writer)) == Liveness::Gone)
    r.status = RunStatus::Abandoned;
  return r;
}

// Closes the connection unless released; guards the constructor, which may throw halfway.
struct DbGuard {
  sqlite3*& db;
  bool released = false;
  ~DbGuard() {
    if (!released && db) {
      sqlite3_close_v2(db);
      db = nullptr;
    }
  }
};

// A file written by a newer build: its tables may mean something this build does not know.
void refuse_newer(const std::string& path, std::int64_t stored) {
  if (stored > Store::kSchemaVersion)
    throw StoreError(
        fmt::format("results store {}: schema version {} is newer than version {} known to this build "
                    "(ddplab {}); use a newer ddplab",
                    path, stored, Store::kSchemaVersion, version()));
}

}  // namespace

Store::Store(const std::string& path, int batch_rows)
    : path_(path), batch_rows_(batch_rows < 1 ? 1 : batch_rows), pending_(std::make_unique<Pending>()) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path parent = fs::path(path).parent_path();
  if (!parent.empty() && !fs::exists(parent, ec)) {
    fs::create_directories(parent, ec);
    if (ec)
      throw StoreError(
          fmt::format("results store {}: cannot create folder {}: {}", path, parent.string(), ec.message()));
  }

  DbGuard guard{db_};
  int rc = sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  if (rc != SQLITE_OK) fail(path, "cannot open", db_);
  sqlite3_extended_result_codes(db_, 1);
  sqlite3_busy_timeout(db_, 5000);
  // The first statement that reads the header is where a non-database file is detected.
  exec(db_, path, "PRAGMA journal_mode=WAL", "cannot open (enable WAL)");
  exec(db_, path, "PRAGMA synchronous=NORMAL; PRAGMA foreign_keys=ON", "cannot open (pragmas)");

  // Check the version and apply the schema atomically, so two processes opening a new file do not race.
  exec(db_, path, "BEGIN IMMEDIATE", "cannot open (begin)");
  try {
    exec(db_, path, "CREATE TABLE IF NOT EXISTS schema_version(version INTEGER NOT NULL)", "create schema_version");
    std::optional<std::int64_t> stored;
    {
      Stmt s(db_, path_, "SELECT MAX(version) FROM schema_version");
      if (s.step() && !s.null(0)) stored = s.i64(0);
    }
    if (stored) refuse_newer(path, *stored);
    exec(db_, path, kSchema, "apply schema");
    if (!stored) {
      Stmt s(db_, path_, "INSERT INTO schema_version(version) VALUES(1)");
      s.run();
      stored = 1;
    }
    // Bring the file up to this build's version, in the same transaction: all or nothing.
    for (const Migration& m : kMigrations) {
      if (m.to <= *stored) continue;
      exec(db_, path, m.sql, fmt::format("migrate schema to version {}", m.to).c_str());
      if (m.new_schema_text) {
        std::int64_t cookie = 0;
        {
          Stmt c(db_, path_, "PRAGMA schema_version");
          if (c.step()) cookie = c.i64(0);
        }
        exec(db_, path, fmt::format("PRAGMA schema_version = {}", cookie + 1).c_str(),
             fmt::format("migrate schema to version {}", m.to).c_str());
      }
      Stmt s(db_, path_, "UPDATE schema_version SET version = ?1");
      s.bind(1, m.to).run();
    }
    // Runs finished before version 8: their step totals came with the migration, their summaries now.
    if (*stored < 8) {
      std::vector<std::int64_t> finished;
      {
        Stmt s(db_, path_, "SELECT id FROM runs WHERE status != 'running'");
        while (s.step()) finished.push_back(s.i64(0));
      }
      for (std::int64_t id : finished) cache_run(id, false);
    }
    exec(db_, path, "COMMIT", "commit schema");
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }

  prepare_inserts();
  guard.released = true;  // the Store owns the connection now
}

// Prepared once per connection. A read-only connection prepares them too (SQLite refuses the write only
// when it is stepped), so every writer fails with the store's own "readonly" message rather than a crash.
void Store::prepare_inserts() {
  pending_->ins_step = Stmt(db_, path_,
                            "INSERT INTO steps(run_id, step, rank, compute_s, comm_s, exposed_comm_s, optimizer_s, "
                            "step_s, samples, bytes_sent, loss) VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11)");
  pending_->ins_eval = Stmt(db_, path_,
                            "INSERT INTO evaluations(run_id, step, wall_s, test_loss, test_accuracy, "
                            "macro_precision, macro_recall, confusion) VALUES(?1,?2,?3,?4,?5,?6,?7,?8)");
  pending_->ins_res = Stmt(db_, path_,
                           "INSERT INTO resources(run_id, rank, peak_rss_bytes, cpu_s, wall_s, peak_device_bytes) "
                           "VALUES(?1,?2,?3,?4,?5,?6)");
  pending_->ins_bench =
      Stmt(db_, path_,
           "INSERT INTO collective_bench(bench_id, schedule, collective, type, bytes, count, time_us, "
           "algbw_gbs, busbw_gbs, wrong) VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10)");
}

Store::Store(const std::string& path, Access)
    : path_(path), batch_rows_(1), read_only_(true), pending_(std::make_unique<Pending>()) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(path, ec)) throw StoreError(fmt::format("results store {}: no such file", path));
  if (!fs::is_regular_file(path, ec)) throw StoreError(fmt::format("results store {}: not a regular file", path));
  DbGuard guard{db_};
  // NOMUTEX: a Store is used by one thread at a time, and a viewer reading millions of rows should not
  // pay a lock per column read.
  if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READONLY | SQLITE_OPEN_NOMUTEX, nullptr) != SQLITE_OK)
    fail(path, "cannot open", db_);
  sqlite3_extended_result_codes(db_, 1);
  sqlite3_busy_timeout(db_, 5000);
  // The first read of the header is where a file that is not SQLite shows itself.
  bool has_version = false;
  {
    Stmt s(db_, path_, "SELECT COUNT(*) FROM sqlite_master WHERE type = 'table' AND name = 'schema_version'");
    has_version = s.step() && s.i64(0) > 0;
  }
  if (!has_version)
    throw StoreError(fmt::format(
        "results store {}: an SQLite file, but not a ddplab results store (no schema_version table)", path));
  std::int64_t stored = 0;
  {
    Stmt s(db_, path_, "SELECT MAX(version) FROM schema_version");
    if (s.step() && !s.null(0)) stored = s.i64(0);
  }
  refuse_newer(path, stored);
  if (stored < kOldestReadable)
    throw StoreError(
        fmt::format("results store {}: schema version {} is older than version {}, the oldest this build reads "
                    "without upgrading it; it is opened read-only here, so upgrade it once with "
                    "`ddplab report --db {}` (migrations keep every row)",
                    path, stored, kOldestReadable, path));
  schema_ = static_cast<int>(stored);
  prepare_inserts();
  guard.released = true;
}

Store::~Store() {
  if (pending_ && db_) {
    try {
      pending_->flush(db_, path_);
    } catch (...) {
      // A destructor cannot report; the rows are lost, the file stays consistent.
    }
  }
  pending_.reset();  // finalize statements before closing
  if (db_) sqlite3_close_v2(db_);
}

Transport RunInfo::transport() const {
  return backend.rfind("cuda", 0) == 0 && backend.find("+mpi") == std::string::npos ? Transport::Nccl : Transport::Mpi;
}

std::int64_t Store::begin_run(const RunInfo& info) {
  Stmt s(db_, path_,
         "INSERT INTO runs(scenario, strategy, backend, world_size, source, batch_size, config, host_info, "
         "version, started_at, ended_at, status, writer) VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,NULL,'running',?11)");
  s.bind(1, info.scenario).bind(2, info.strategy).bind(3, info.backend).bind(4, info.world_size);
  s.bind(5, info.source).bind(6, info.batch_size).bind(7, info.config_json).bind(8, info.host_info);
  s.bind(9, std::string(version())).bind(10, utc_now()).bind(11, ProcessIdentity::current().to_json());
  s.run();  // autocommit: visible at once
  return sqlite3_last_insert_rowid(db_);
}

void Store::add_step(std::int64_t run, const StepMetrics& m) {
  pending_->steps.emplace_back(run, m);
  if (pending_->size() >= static_cast<std::size_t>(batch_rows_)) flush();
}

void Store::add_evaluation(std::int64_t run, const Evaluation& e) {
  pending_->evals.emplace_back(run, e);
  if (pending_->size() >= static_cast<std::size_t>(batch_rows_)) flush();
}

void Store::add_resources(std::int64_t run, const Resources& r) {
  pending_->res.emplace_back(run, r);
  if (pending_->size() >= static_cast<std::size_t>(batch_rows_)) flush();
}

void Store::flush() { pending_->flush(db_, path_); }

void Store::set_run_reason(std::int64_t run, const std::string& reason) {
  Stmt s(db_, path_, "UPDATE runs SET reason = ?1 WHERE id = ?2");
  s.bind(1, reason).bind(2, run).run();
  if (sqlite3_changes(db_) == 0)
    throw StoreError(fmt::format("results store {}: set_run_reason: no run with id {}", path_, run));
}

void Store::finish_run(std::int64_t run, RunStatus status, const std::string& reason) {
  if (status != RunStatus::Completed && status != RunStatus::Failed && status != RunStatus::Interrupted)
    throw StoreError(fmt::format(
        "results store {}: finish_run({}): status must be \"completed\", \"failed\" or \"interrupted\", not \"{}\"",
        path_, run, to_string(status)));
  std::optional<StoreError> flush_error;
  try {
    flush();
  } catch (const StoreError& e) {
    flush_error = e;  // still record the outcome, then report the lost rows
  }
  // The outcome and the run's cached totals and summary together: a reader never sees a finished run without them.
  in_transaction(db_, path_, "finish run", [&] {
    Stmt s(db_, path_, "UPDATE runs SET status = ?1, ended_at = ?2, reason = ?3 WHERE id = ?4");
    s.bind(1, status).bind(2, utc_now());
    if (reason.empty())
      s.bind_null(3);
    else
      s.bind(3, reason);
    s.bind(4, run).run();
    if (sqlite3_changes(db_) == 0)
      throw StoreError(fmt::format("results store {}: finish_run: no run with id {}", path_, run));
    cache_run(run, true);
  });
  if (flush_error) throw *flush_error;
}

void Store::set_run_config(std::int64_t run, const std::string& config_json) {
  Stmt s(db_, path_, "UPDATE runs SET config = ?1 WHERE id = ?2");
  s.bind(1, config_json).bind(2, run).run();
  if (sqlite3_changes(db_) == 0)
    throw StoreError(fmt::format("results store {}: set_run_config: no run with id {}", path_, run));
}

void Store::delete_runs(const std::vector<std::int64_t>& ids) {
  flush();
  in_transaction(db_, path_, "delete runs", [&] {
    for (std::int64_t id : ids) {
      Stmt s(db_, path_, "DELETE FROM runs WHERE id = ?1");  // steps, evaluations, resources: ON DELETE CASCADE
      s.bind(1, id).run();
      if (sqlite3_changes(db_) == 0)
        throw StoreError(fmt::format("results store {}: delete: no run with id {}", path_, id));
    }
  });
}

// Reads first commit this Store's own pending rows, so a writer always sees what it wrote.
std::vector<RunRow> Store::runs() const {
  pending_->flush(db_, path_);
  std::vector<RunRow> out;
  Stmt s(db_, path_, fmt::format("SELECT {} FROM runs ORDER BY id", run_columns(schema_)).c_str());
  while (s.step()) out.push_back(read_run(s));
  return out;
}

std::optional<RunRow> Store::run(std::int64_t id) const {
  pending_->flush(db_, path_);
  Stmt s(db_, path_, fmt::format("SELECT {} FROM runs WHERE id = ?1", run_columns(schema_)).c_str());
  s.bind(1, id);
  if (!s.step()) return std::nullopt;
  return read_run(s);
}

std::vector<StepMetrics> Store::steps(std::int64_t run) const {
  pending_->flush(db_, path_);
  std::vector<StepMetrics> out;
  Stmt s(db_, path_,
         "SELECT step, rank, compute_s, comm_s, exposed_comm_s, optimizer_s, step_s, samples, bytes_sent, loss "
         "FROM steps WHERE run_id = ?1 ORDER BY step, rank");
  s.bind(1, run);
  while (s.step()) {
    StepMetrics m;
    m.step = s.i64(0);
    m.rank = s.i32(1);
    m.compute_s = s.real(2);
    m.comm_s = s.real(3);
    m.exposed_comm_s = s.real(4);
    m.optimizer_s = s.real(5);
    m.step_s = s.real(6);
    m.samples = s.i64(7);
    m.bytes_sent = s.i64(8);
    m.loss = s.real(9);
    out.push_back(m);
  }
  return out;
}

std::vector<Evaluation> Store::evaluations(std::int64_t run) const {
  pending_->flush(db_, path_);
  std::vector<Evaluation> out;
  Stmt s(db_, path_,
         "SELECT step, wall_s, test_loss, test_accuracy, macro_precision, macro_recall, confusion "
         "FROM evaluations WHERE run_id = ?1 ORDER BY step, rowid");
  s.bind(1, run);
  while (s.step()) {
    Evaluation e;
    e.step = s.i64(0);
    e.wall_s = s.real(1);
    e.test_loss = s.real(2);
    e.test_accuracy = s.real(3);
    e.macro_precision = s.real(4);
    e.macro_recall = s.real(5);
    if (!s.null(6)) {
      const auto rows = nlohmann::json::parse(s.text(6), nullptr, false);
      bool ok = rows.is_array();
      for (const auto& row : rows) {
        ok = ok && row.is_array() && row.size() == rows.size();
        for (const auto& v : row) ok = ok && v.is_number_integer();
      }
      if (!ok)
        throw StoreError(
            fmt::format("results store {}: run {}'s evaluation at step {} has an unreadable confusion matrix "
                        "(not a square array of counts)",
                        path_, run, e.step));
      e.classes = static_cast<int>(rows.size());
      for (const auto& row : rows)
        for (const auto& v : row) e.confusion.push_back(v.get<std::int64_t>());
    }
    out.push_back(e);
  }
  return out;
}

std::vector<Resources> Store::resources(std::int64_t run) const {
  pending_->flush(db_, path_);
  std::vector<Resources> out;
  Stmt s(db_, path_,
         "SELECT rank, peak_rss_bytes, cpu_s, wall_s, peak_device_bytes FROM resources WHERE run_id = ?1 "
         "ORDER BY rank, rowid");
  s.bind(1, run);
  while (s.step()) {
    Resources r;
    r.rank = s.i32(0);
    r.peak_rss_bytes = s.i64(1);
    r.cpu_s = s.real(2);
    r.wall_s = s.real(3);
    if (!s.null(4)) r.peak_device_bytes = s.i64(4);
    out.push_back(r);
  }
  return out;
}

namespace {

// One definition of a step's totals, in SQL: the steps of `run_id = ?1` collapsed over ranks (StepTotals).
constexpr const char* kTotalsSelect =
    "SELECT step, COUNT(*), MAX(step_s), TOTAL(samples), TOTAL(compute_s), TOTAL(comm_s), TOTAL(exposed_comm_s), "
    "       TOTAL(optimizer_s), TOTAL(bytes_sent), AVG(loss) FROM steps WHERE run_id = ?1 GROUP BY step ORDER BY step";

// Bumped whenever RunSummary's definition changes: cached summaries of another definition are recomputed.
constexpr int kSummaryDefinition = 1;

std::vector<StepTotals> read_totals(sqlite3* db, const std::string& path, std::int64_t run, bool cached) {
  std::vector<StepTotals> out;
  Stmt s(db, path,
         cached ? "SELECT step, ranks, slowest_s, samples, compute_s, comm_s, exposed_comm_s, optimizer_s, bytes_sent, "
                  "mean_loss "
                  "FROM step_totals WHERE run_id = ?1 ORDER BY step"
                : kTotalsSelect);
  s.bind(1, run);
  while (s.step()) {
    StepTotals t{s.i64(0), s.i32(1), s.real(2), s.real(3), s.real(4), s.real(5), s.real(6), s.real(7), s.real(8)};
    t.mean_loss = s.real(9);
    out.push_back(t);
  }
  return out;
}

nlohmann::json summary_json(const RunSummary& s) {
  auto opt = [](const std::optional<double>& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  return {{"steps", s.steps},
          {"skipped", s.skipped},
          {"period", s.period},
          {"warmup_steps", s.warmup_steps},
          {"warmup_s", s.warmup_s},
          {"samples_per_s", s.samples_per_s},
          {"step_s", s.step_s},
          {"compute_s", s.compute_s},
          {"comm_s", s.comm_s},
          {"exposed_comm_s", s.exposed_comm_s},
          {"optimizer_s", s.optimizer_s},
          {"bytes_per_step", s.bytes_per_step},
          {"final_loss", opt(s.final_loss)},
          {"final_accuracy", opt(s.final_accuracy)}};
}

// false when the JSON is not a whole summary (then it is recomputed).
bool from_summary_json(const std::string& text, RunSummary& s) {
  const auto j = nlohmann::json::parse(text, nullptr, false);
  try {
    s.steps = j.at("steps"), s.skipped = j.at("skipped"), s.period = j.at("period"),
    s.warmup_steps = j.at("warmup_steps");
    s.warmup_s = j.at("warmup_s"), s.samples_per_s = j.at("samples_per_s"), s.step_s = j.at("step_s");
    s.compute_s = j.at("compute_s"), s.comm_s = j.at("comm_s"), s.exposed_comm_s = j.at("exposed_comm_s");
    s.optimizer_s = j.at("optimizer_s"), s.bytes_per_step = j.at("bytes_per_step");
    if (!j.at("final_loss").is_null()) s.final_loss = j.at("final_loss").get<double>();
    if (!j.at("final_accuracy").is_null()) s.final_accuracy = j.at("final_accuracy").get<double>();
    return true;
  } catch (const nlohmann::json::exception&) {
    return false;
  }
}

// The aggregates of one run from its step totals; see RunSummary for the definitions.
RunSummary summarize(sqlite3* db, const std::string& path, RunRow row, int skip_steps, std::vector<StepTotals> steps) {
  RunSummary sum;
  sum.run = std::move(row);
  const std::int64_t id = sum.run.id;
  {
    Stmt s(db, path, "SELECT test_accuracy FROM evaluations WHERE run_id = ?1 ORDER BY step DESC, rowid DESC LIMIT 1");
    s.bind(1, id);
    if (s.step()) sum.final_accuracy = s.opt(0);
  }
  if (steps.empty()) return sum;
  if (std::isfinite(steps.back().mean_loss)) sum.final_loss = steps.back().mean_loss;
  std::optional<StepPattern> pattern;
  {
    const auto cfg = nlohmann::json::parse(sum.run.info.config_json, nullptr, false);
    if (cfg.is_object() && cfg.contains("pattern")) {
      try {
        pattern = StepPattern::from_json(cfg.at("pattern"));
      } catch (const std::exception&) {  // a malformed pattern: summarised as a run without one
      }
    }
  }
  if (pattern) sum.period = pattern->period();
  const RunWindows w = run_windows(std::move(steps), pattern ? &*pattern : nullptr,
                                   sum.run.info.source == RunSource::Simulated, skip_steps);
  const WindowTotals &steady = w.steady, &warmup = w.warmup;
  sum.skipped = w.skipped;
  sum.steps = static_cast<std::int64_t>(steady.steps);
  sum.samples_per_s = steady.samples_per_s();
  sum.step_s = steady.step_s();
  sum.compute_s = steady.mean(steady.compute_s);
  sum.comm_s = steady.mean(steady.comm_s);
  sum.exposed_comm_s = steady.mean(steady.exposed_comm_s);
  sum.optimizer_s = steady.mean(steady.optimizer_s);
  sum.bytes_per_step = steady.mean(steady.bytes_sent);
  sum.warmup_steps = static_cast<std::int64_t>(warmup.steps);
  sum.warmup_s = warmup.time_s;
  return sum;
}

}  // namespace

bool Store::cached(const RunRow& run) const {
  return schema_ >= 8 && run.status != RunStatus::Running &&
         run.status != RunStatus::Abandoned;  // finish_run wrote the caches
}

std::vector<StepTotals> Store::totals(std::int64_t run) const {
  const auto row = this->run(run);  // flushes pending rows
  if (!row) throw StoreError(fmt::format("results store {}: no run with id {}", path_, run));
  return totals_of(*row);
}

std::vector<StepTotals> Store::totals_of(const RunRow& row) const {
  if (cached(row)) {
    std::vector<StepTotals> t = read_totals(db_, path_, row.id, true);
    if (!t.empty()) return t;
  }
  return read_totals(db_, path_, row.id, false);
}

RunSummary Store::summary_of(RunRow row, int skip_steps) const {
  if (skip_steps == 0 && cached(row)) {
    Stmt s(db_, path_, "SELECT definition, summary FROM run_summaries WHERE run_id = ?1");
    s.bind(1, row.id);
    RunSummary sum;
    if (s.step() && s.i32(0) == kSummaryDefinition && from_summary_json(s.text(1), sum)) {
      sum.run = std::move(row);
      return sum;
    }
  }
  std::vector<StepTotals> t = totals_of(row);
  return summarize(db_, path_, std::move(row), skip_steps, std::move(t));
}

RunSummary Store::summary(std::int64_t id, int skip_steps) const {
  auto row = run(id);  // flushes pending rows
  if (!row) throw StoreError(fmt::format("results store {}: no run with id {}", path_, id));
  return summary_of(std::move(*row), skip_steps);
}

std::vector<RunSummary> Store::summaries(int skip_steps) const {
  std::vector<RunSummary> out;
  for (auto& row : runs()) out.push_back(summary_of(std::move(row), skip_steps));
  return out;
}

void Store::cache_run(std::int64_t run, bool totals) {
  if (schema_ < 8) return;
  const auto row = this->run(run);
  if (!row) return;
  if (totals) {
    Stmt del(db_, path_, "DELETE FROM step_totals WHERE run_id = ?1");
    del.bind(1, run).run();
    Stmt ins(db_, path_, (std::string("INSERT INTO step_totals SELECT ?1, * FROM (") + kTotalsSelect + ")").c_str());
    ins.bind(1, run).run();
  }
  const RunSummary sum = summarize(db_, path_, *row, 0, read_totals(db_, path_, run, true));
  Stmt put(db_, path_, "INSERT OR REPLACE INTO run_summaries(run_id, definition, summary) VALUES(?1, ?2, ?3)");
  put.bind(1, run).bind(2, kSummaryDefinition).bind(3, summary_json(sum).dump()).run();
}

std::optional<std::int64_t> Store::latest_measured(const std::string& scenario, const std::string& strategy) const {
  pending_->flush(db_, path_);
  Stmt s(db_, path_,
         "SELECT id FROM runs WHERE scenario = ?1 AND strategy = ?2 AND source = 'measured' "
         "AND status = 'completed' ORDER BY id DESC LIMIT 1");
  s.bind(1, scenario).bind(2, strategy);
  if (!s.step()) return std::nullopt;
  return s.i64(0);
}

}  // namespace ddplab
