// Internal to the results store (store.cpp, store_bench.cpp, store_calibration.cpp, store_prediction.cpp): the
// prepared-statement wrapper, helpers, and the batch of rows waiting for the next transaction.
#pragma once
#include <sqlite3.h>

#include <chrono>
#include <cmath>
#include <ctime>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ddplab/core/class_metrics.hpp"
#include "ddplab/core/store.hpp"

namespace ddplab {
namespace store_detail {

// Every error names the file and carries SQLite's own message.
[[noreturn]] inline void fail(const std::string& path, const std::string& what, sqlite3* db) {
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
  Stmt& bind(int i, const std::optional<std::int64_t>& v) { return v ? bind(i, *v) : bind_null(i); }
  Stmt& bind_null(int i) { return check(sqlite3_bind_null(st_, i)); }
  template <class E>
  requires requires { ChoiceNames<E>::names; }
  Stmt& bind(int i, E v) { return bind(i, to_string(v)); }

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
  // A choice stored by name (choices.hpp); a name this version does not know is a store it cannot read.
  template <class E>
  E choice(int c) const {
    return stored_choice<E, StoreError>(text(c), "results store " + *path_);
  }
  // NULL reads back as NaN.
  double real(int c) const {
    return null(c) ? std::numeric_limits<double>::quiet_NaN() : sqlite3_column_double(st_, c);
  }
  std::optional<double> opt(int c) const {
    return null(c) ? std::nullopt : std::optional(sqlite3_column_double(st_, c));
  }
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

inline void exec(sqlite3* db, const std::string& path, const char* sql, const char* what) {
  char* err = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &err) != SQLITE_OK) {
    std::string msg = err ? err : sqlite3_errmsg(db);
    sqlite3_free(err);
    throw StoreError(fmt::format("results store {}: {}: {}", path, what, msg));
  }
}

// Runs `body` inside one transaction: all rows or none.
template <class F>
void in_transaction(sqlite3* db, const std::string& path, const char* what, F&& body) {
  exec(db, path, "BEGIN IMMEDIATE", what);
  try {
    body();
    exec(db, path, "COMMIT", what);
  } catch (...) {
    sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
    throw;
  }
}

// UTC, ISO-8601, second resolution: "2024-05-01T12:34:56Z".
inline std::string utc_now() {
  std::time_t t = std::chrono::system_clock::to_time_t(std::chrono::system_clock::now());
  std::tm tm{};
  gmtime_r(&t, &tm);
  char buf[32];
  std::strftime(buf, sizeof buf, "%Y-%m-%dT%H:%M:%SZ", &tm);
  return buf;
}

}  // namespace store_detail
using namespace store_detail;

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
  // later finish_run(run, RunStatus::Failed) can still record the outcome instead of failing on the same rows.
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
        ins_eval.bind(6, e.macro_precision).bind(7, e.macro_recall);
        if (e.confusion.empty()) {
          ins_eval.bind_null(8);
        } else {
          ins_eval.bind(8, nlohmann::json(confusion_rows(e)).dump());
        }
        ins_eval.run();
      }
      for (auto& [run, r] : res) {
        ins_res.reset();
        ins_res.bind(1, run)
            .bind(2, r.rank)
            .bind(3, r.peak_rss_bytes)
            .bind(4, r.cpu_s)
            .bind(5, r.wall_s)
            .bind(6, r.peak_device_bytes)
            .run();
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

}  // namespace ddplab
