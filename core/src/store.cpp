// Results store over SQLite (WAL). Writers buffer rows and commit them in one transaction per batch,
// so a crash loses at most the rows not yet flushed; readers aggregate in SQL.
#include "ddplab/core/store.hpp"

#include <sqlite3.h>

#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <iterator>
#include <limits>
#include <utility>

#include <fmt/format.h>

#include "ddplab/core/version.hpp"

namespace ddplab {
namespace {

// Every error names the file and carries SQLite's own message.
[[noreturn]] void fail(const std::string& path, const std::string& what, sqlite3* db) {
  std::string msg = db ? sqlite3_errmsg(db) : "out of memory";
  throw StoreError(fmt::format("results store {}: {}: {}", path, what, msg));
}

// Owns one prepared statement; binds and reads by 1-based (bind) / 0-based (column) index.
class Stmt {
 public:
  Stmt() = default;
  Stmt(sqlite3* db, const std::string& path, const char* sql) : db_(db), path_(&path) {
    if (sqlite3_prepare_v2(db, sql, -1, &st_, nullptr) != SQLITE_OK) fail(path, "prepare", db);
  }
  Stmt(Stmt&& o) noexcept : db_(o.db_), path_(o.path_), st_(std::exchange(o.st_, nullptr)) {}
  Stmt& operator=(Stmt&& o) noexcept {
    std::swap(db_, o.db_);
    std::swap(path_, o.path_);
    std::swap(st_, o.st_);
    return *this;
  }
  ~Stmt() { sqlite3_finalize(st_); }

  Stmt& bind(int i, std::int64_t v) { return check(sqlite3_bind_int64(st_, i, v)); }
  Stmt& bind(int i, int v) { return check(sqlite3_bind_int64(st_, i, v)); }
  Stmt& bind(int i, const std::string& v) {
    return check(sqlite3_bind_text(st_, i, v.data(), static_cast<int>(v.size()), SQLITE_TRANSIENT));
  }
  // NaN (e.g. the loss of a simulated run) is stored as NULL.
  Stmt& bind(int i, double v) {
    return check(std::isnan(v) ? sqlite3_bind_null(st_, i) : sqlite3_bind_double(st_, i, v));
  }
  Stmt& bind(int i, const std::optional<std::int64_t>& v) { return v ? bind(i, *v) : check(sqlite3_bind_null(st_, i)); }

  // true while a row is available; throws on error.
  bool step() {
    int rc = sqlite3_step(st_);
    if (rc == SQLITE_ROW) return true;
    if (rc == SQLITE_DONE) return false;
    fail(*path_, "query", db_);
  }
  void run() {
    while (step()) {
    }
  }
  // Ready for the next set of bindings (cached insert statements).
  void reset() {
    sqlite3_reset(st_);
    sqlite3_clear_bindings(st_);
  }

  bool null(int c) const { return sqlite3_column_type(st_, c) == SQLITE_NULL; }
  std::int64_t i64(int c) const { return sqlite3_column_int64(st_, c); }
  int i32(int c) const { return sqlite3_column_int(st_, c); }
  // NULL reads back as NaN.
  double real(int c) const { return null(c) ? std::numeric_limits<double>::quiet_NaN() : sqlite3_column_double(st_, c); }
  std::optional<double> opt(int c) const { return null(c) ? std::nullopt : std::optional(sqlite3_column_double(st_, c)); }
  std::optional<std::int64_t> opt_i64(int c) const { return null(c) ? std::nullopt : std::optional(i64(c)); }
  std::string text(int c) const {
    auto p = reinterpret_cast<const char*>(sqlite3_column_text(st_, c));
    return p ? std::string(p, static_cast<std::size_t>(sqlite3_column_bytes(st_, c))) : std::string();
  }

 private:
  Stmt& check(int rc) {
    if (rc != SQLITE_OK) fail(*path_, "bind", db_);
    return *this;
  }
  sqlite3* db_ = nullptr;
  const std::string* path_ = nullptr;
  sqlite3_stmt* st_ = nullptr;
};

void exec(sqlite3* db, const std::string& path, const char* sql, const char* what) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errmsg(db);
    sqlite3_free(err);
    throw StoreError(fmt::format("results store {}: {}: {}", path, what, msg));
  }
}

// UTC, ISO-8601, second resolution: "2024-05-01T12:34:56Z".
std::string utc_now() {
  std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

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
  status TEXT NOT NULL CHECK(status IN ('running','completed','failed')));
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

// Migrations in order; migration i takes a file from version to - 1 to version `to`.
struct Migration {
  int to;
  const char* sql;
};
constexpr Migration kMigrations[] = {{2, kMigrateTo2}};
static_assert(std::size(kMigrations) == Store::kSchemaVersion - 1, "one migration per version after 1");

constexpr const char* kRunColumns =
    "id, scenario, strategy, backend, world_size, source, batch_size, config, host_info, version, "
    "started_at, ended_at, status";

RunRow read_run(const Stmt& s) {
  RunRow r;
  r.id = s.i64(0);
  r.info.scenario = s.text(1);
  r.info.strategy = s.text(2);
  r.info.backend = s.text(3);
  r.info.world_size = s.i32(4);
  r.info.source = s.text(5);
  r.info.batch_size = s.i32(6);
  r.info.config_json = s.text(7);
  r.info.host_info = s.text(8);
  r.version = s.text(9);
  r.started_at = s.text(10);
  r.ended_at = s.text(11);
  r.status = s.text(12);
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

}  // namespace

// Rows waiting for the next transaction, and the insert statements reused for them.
struct Store::Pending {
  std::vector<std::pair<std::int64_t, StepMetrics>> steps;
  std::vector<std::pair<std::int64_t, Evaluation>> evals;
  std::vector<std::pair<std::int64_t, Resources>> res;
  std::vector<std::pair<std::int64_t, CollectiveBenchRow>> bench;
  Stmt ins_step, ins_eval, ins_res, ins_bench;

  std::size_t size() const { return steps.size() + evals.size() + res.size() + bench.size(); }
  void clear() {
    steps.clear();
    evals.clear();
    res.clear();
    bench.clear();
  }

  // One transaction for everything pending. On failure it rolls back and drops the batch, so that a
  // later finish_run(run, "failed") can still record the outcome instead of failing on the same rows.
  void flush(sqlite3* db, const std::string& path) {
    if (size() == 0) return;
    const std::size_t n = size();
    exec(db, path, "BEGIN IMMEDIATE", "begin batch");
    try {
      for (auto& [run, m] : steps) {
        ins_step.reset();
        ins_step.bind(1, run).bind(2, m.step).bind(3, m.rank).bind(4, m.compute_s).bind(5, m.comm_s);
        ins_step.bind(6, m.exposed_comm_s).bind(7, m.optimizer_s).bind(8, m.step_s).bind(9, m.samples);
        ins_step.bind(10, m.bytes_sent).bind(11, m.loss).run();
      }
      for (auto& [run, e] : evals) {
        ins_eval.reset();
        ins_eval.bind(1, run).bind(2, e.step).bind(3, e.wall_s).bind(4, e.test_loss).bind(5, e.test_accuracy);
        ins_eval.bind(6, e.macro_precision).bind(7, e.macro_recall).run();
      }
      for (auto& [run, r] : res) {
        ins_res.reset();
        ins_res.bind(1, run).bind(2, r.rank).bind(3, r.peak_rss_bytes).bind(4, r.cpu_s).bind(5, r.wall_s).run();
      }
      for (auto& [id, b] : bench) {
        ins_bench.reset();
        ins_bench.bind(1, id).bind(2, b.schedule).bind(3, b.collective).bind(4, b.type).bind(5, b.bytes);
        ins_bench.bind(6, b.count).bind(7, b.time_us).bind(8, b.algbw_gbs).bind(9, b.busbw_gbs).bind(10, b.wrong).run();
      }
      exec(db, path, "COMMIT", "commit batch");
    } catch (const StoreError& e) {
      sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
      ins_step.reset();
      ins_eval.reset();
      ins_res.reset();
      ins_bench.reset();
      clear();
      throw StoreError(fmt::format("{} ({} pending rows dropped)", e.what(), n));
    }
    clear();
  }
};

Store::Store(const std::string& path, int batch_rows)
    : path_(path), batch_rows_(batch_rows < 1 ? 1 : batch_rows), pending_(std::make_unique<Pending>()) {
  namespace fs = std::filesystem;
  std::error_code ec;
  fs::path parent = fs::path(path).parent_path();
  if (!parent.empty() && !fs::exists(parent, ec)) {
    fs::create_directories(parent, ec);
    if (ec) throw StoreError(fmt::format("results store {}: cannot create folder {}: {}", path, parent.string(), ec.message()));
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
    if (stored && *stored > kSchemaVersion)
      throw StoreError(fmt::format(
          "results store {}: schema version {} is newer than version {} known to this build (ddplab {}); "
          "use a newer ddplab",
          path, *stored, kSchemaVersion, version()));
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
      Stmt s(db_, path_, "UPDATE schema_version SET version = ?1");
      s.bind(1, m.to).run();
    }
    exec(db_, path, "COMMIT", "commit schema");
  } catch (...) {
    sqlite3_exec(db_, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }

  pending_->ins_step = Stmt(db_, path_,
                            "INSERT INTO steps(run_id, step, rank, compute_s, comm_s, exposed_comm_s, optimizer_s, "
                            "step_s, samples, bytes_sent, loss) VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11)");
  pending_->ins_eval = Stmt(db_, path_,
                            "INSERT INTO evaluations(run_id, step, wall_s, test_loss, test_accuracy, "
                            "macro_precision, macro_recall) VALUES(?1,?2,?3,?4,?5,?6,?7)");
  pending_->ins_res = Stmt(db_, path_,
                           "INSERT INTO resources(run_id, rank, peak_rss_bytes, cpu_s, wall_s) VALUES(?1,?2,?3,?4,?5)");
  pending_->ins_bench = Stmt(db_, path_,
                             "INSERT INTO collective_bench(bench_id, schedule, collective, type, bytes, count, time_us, "
                             "algbw_gbs, busbw_gbs, wrong) VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10)");

  guard.released = true;  // the Store owns the connection now
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

std::int64_t Store::begin_run(const RunInfo& info) {
  Stmt s(db_, path_,
         "INSERT INTO runs(scenario, strategy, backend, world_size, source, batch_size, config, host_info, "
         "version, started_at, ended_at, status) VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,NULL,'running')");
  s.bind(1, info.scenario).bind(2, info.strategy).bind(3, info.backend).bind(4, info.world_size);
  s.bind(5, info.source).bind(6, info.batch_size).bind(7, info.config_json).bind(8, info.host_info);
  s.bind(9, std::string(version())).bind(10, utc_now()).run();  // autocommit: visible at once
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

void Store::finish_run(std::int64_t run, const std::string& status) {
  if (status != "completed" && status != "failed")
    throw StoreError(fmt::format("results store {}: finish_run({}): status must be \"completed\" or \"failed\", not \"{}\"",
                                 path_, run, status));
  std::optional<StoreError> flush_error;
  try {
    flush();
  } catch (const StoreError& e) {
    flush_error = e;  // still record the outcome, then report the lost rows
  }
  Stmt s(db_, path_, "UPDATE runs SET status = ?1, ended_at = ?2 WHERE id = ?3");
  s.bind(1, status).bind(2, utc_now()).bind(3, run).run();
  if (sqlite3_changes(db_) == 0) throw StoreError(fmt::format("results store {}: finish_run: no run with id {}", path_, run));
  if (flush_error) throw *flush_error;
}

// Reads first commit this Store's own pending rows, so a writer always sees what it wrote.
std::vector<RunRow> Store::runs() const {
  pending_->flush(db_, path_);
  std::vector<RunRow> out;
  Stmt s(db_, path_, fmt::format("SELECT {} FROM runs ORDER BY id", kRunColumns).c_str());
  while (s.step()) out.push_back(read_run(s));
  return out;
}

std::optional<RunRow> Store::run(std::int64_t id) const {
  pending_->flush(db_, path_);
  Stmt s(db_, path_, fmt::format("SELECT {} FROM runs WHERE id = ?1", kRunColumns).c_str());
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
         "SELECT step, wall_s, test_loss, test_accuracy, macro_precision, macro_recall "
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
    out.push_back(e);
  }
  return out;
}

std::vector<Resources> Store::resources(std::int64_t run) const {
  pending_->flush(db_, path_);
  std::vector<Resources> out;
  Stmt s(db_, path_,
         "SELECT rank, peak_rss_bytes, cpu_s, wall_s FROM resources WHERE run_id = ?1 ORDER BY rank, rowid");
  s.bind(1, run);
  while (s.step()) {
    Resources r;
    r.rank = s.i32(0);
    r.peak_rss_bytes = s.i64(1);
    r.cpu_s = s.real(2);
    r.wall_s = s.real(3);
    out.push_back(r);
  }
  return out;
}

namespace {

// The aggregates of one run; see RunSummary for the definitions.
RunSummary summarize(sqlite3* db, const std::string& path, RunRow row) {
  RunSummary sum;
  sum.run = std::move(row);
  const std::int64_t id = sum.run.id;
  {
    // Per step: the slowest rank sets the pace; samples add up over ranks.
    Stmt s(db, path,
           "WITH per_step AS (SELECT MAX(step_s) AS slowest, SUM(samples) AS samples "
           "                  FROM steps WHERE run_id = ?1 GROUP BY step) "
           "SELECT COUNT(*), TOTAL(samples), TOTAL(slowest), AVG(slowest) FROM per_step");
    s.bind(1, id);
    if (s.step()) {
      sum.steps = s.i64(0);
      const double samples = s.real(1), time = s.real(2);
      sum.samples_per_s = time > 0 ? samples / time : 0.0;
      sum.step_s = s.opt(3).value_or(0.0);
    }
  }
  {
    // Per row (step x rank) means; then the mean loss over ranks at the last step.
    Stmt s(db, path,
           "SELECT AVG(compute_s), AVG(comm_s), AVG(exposed_comm_s), AVG(optimizer_s), AVG(bytes_sent), "
           "       (SELECT AVG(loss) FROM steps WHERE run_id = ?1 "
           "          AND step = (SELECT MAX(step) FROM steps WHERE run_id = ?1)) "
           "FROM steps WHERE run_id = ?1");
    s.bind(1, id);
    if (s.step()) {
      sum.compute_s = s.opt(0).value_or(0.0);
      sum.comm_s = s.opt(1).value_or(0.0);
      sum.exposed_comm_s = s.opt(2).value_or(0.0);
      sum.optimizer_s = s.opt(3).value_or(0.0);
      sum.bytes_per_step = s.opt(4).value_or(0.0);
      sum.final_loss = s.opt(5);
    }
  }
  {
    Stmt s(db, path,
           "SELECT test_accuracy FROM evaluations WHERE run_id = ?1 ORDER BY step DESC, rowid DESC LIMIT 1");
    s.bind(1, id);
    if (s.step()) sum.final_accuracy = s.opt(0);
  }
  return sum;
}

}  // namespace

RunSummary Store::summary(std::int64_t id) const {
  auto row = run(id);  // flushes pending rows
  if (!row) throw StoreError(fmt::format("results store {}: no run with id {}", path_, id));
  return summarize(db_, path_, std::move(*row));
}

std::vector<RunSummary> Store::summaries() const {
  std::vector<RunSummary> out;
  for (auto& row : runs()) out.push_back(summarize(db_, path_, std::move(row)));
  return out;
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

std::int64_t Store::begin_bench(const BenchInfo& info) {
  Stmt s(db_, path_,
         "INSERT INTO bench_runs(kind, backend, world_size, ranks_per_node, iters, warmup, config, host_info, "
         "version, started_at, ended_at, status) VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,NULL,'running')");
  s.bind(1, info.kind).bind(2, info.backend).bind(3, info.world_size).bind(4, info.ranks_per_node);
  s.bind(5, info.iters).bind(6, info.warmup).bind(7, info.config_json).bind(8, info.host_info);
  s.bind(9, std::string(version())).bind(10, utc_now()).run();
  return sqlite3_last_insert_rowid(db_);
}

void Store::add_bench_row(std::int64_t bench, const CollectiveBenchRow& row) {
  pending_->bench.emplace_back(bench, row);
  if (pending_->size() >= static_cast<std::size_t>(batch_rows_)) flush();
}

void Store::finish_bench(std::int64_t bench, const std::string& status) {
  if (status != "completed" && status != "failed")
    throw StoreError(fmt::format(
        "results store {}: finish_bench({}): status must be \"completed\" or \"failed\", not \"{}\"", path_, bench, status));
  std::optional<StoreError> flush_error;
  try {
    flush();
  } catch (const StoreError& e) {
    flush_error = e;
  }
  Stmt s(db_, path_, "UPDATE bench_runs SET status = ?1, ended_at = ?2 WHERE id = ?3");
  s.bind(1, status).bind(2, utc_now()).bind(3, bench).run();
  if (sqlite3_changes(db_) == 0) throw StoreError(fmt::format("results store {}: finish_bench: no bench with id {}", path_, bench));
  if (flush_error) throw *flush_error;
}

std::vector<BenchRunRow> Store::benches() const {
  pending_->flush(db_, path_);
  std::vector<BenchRunRow> out;
  Stmt s(db_, path_,
         "SELECT id, kind, backend, world_size, ranks_per_node, iters, warmup, config, host_info, version, "
         "started_at, ended_at, status FROM bench_runs ORDER BY id");
  while (s.step()) {
    BenchRunRow b;
    b.id = s.i64(0);
    b.info.kind = s.text(1);
    b.info.backend = s.text(2);
    b.info.world_size = s.i32(3);
    b.info.ranks_per_node = s.i32(4);
    b.info.iters = s.i32(5);
    b.info.warmup = s.i32(6);
    b.info.config_json = s.text(7);
    b.info.host_info = s.text(8);
    b.version = s.text(9);
    b.started_at = s.text(10);
    b.ended_at = s.text(11);
    b.status = s.text(12);
    out.push_back(std::move(b));
  }
  return out;
}

std::vector<CollectiveBenchRow> Store::bench_rows(std::int64_t bench) const {
  pending_->flush(db_, path_);
  std::vector<CollectiveBenchRow> out;
  Stmt s(db_, path_,
         "SELECT schedule, collective, type, bytes, count, time_us, algbw_gbs, busbw_gbs, wrong "
         "FROM collective_bench WHERE bench_id = ?1 ORDER BY id");
  s.bind(1, bench);
  while (s.step()) {
    CollectiveBenchRow r;
    r.schedule = s.text(0);
    r.collective = s.text(1);
    r.type = s.text(2);
    r.bytes = s.i64(3);
    r.count = s.i64(4);
    r.time_us = s.real(5);
    r.algbw_gbs = s.real(6);
    r.busbw_gbs = s.real(7);
    r.wrong = s.opt_i64(8);
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace ddplab
