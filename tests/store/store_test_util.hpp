// Shared by the store tests: a temporary folder, raw SQLite access, and a sample run.
#pragma once
#include <sqlite3.h>
#include <stdlib.h>

#include <filesystem>
#include <stdexcept>
#include <string>

#include "ddplab/core/store.hpp"
#include "temp_dir.hpp"

namespace ddplab::test {

// Direct SQLite connection, to inspect or tamper with a store file behind the Store's back.
class RawDb {
 public:
  explicit RawDb(const std::string& path) {
    if (sqlite3_open(path.c_str(), &db_) != SQLITE_OK) throw std::runtime_error(sqlite3_errmsg(db_));
    sqlite3_busy_timeout(db_, 5000);
  }
  ~RawDb() { sqlite3_close(db_); }
  RawDb(const RawDb&) = delete;
  RawDb& operator=(const RawDb&) = delete;

  void exec(const std::string& sql) {
    char* err = nullptr;
    if (sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &err) != SQLITE_OK) {
      std::string msg = err ? err : "?";
      sqlite3_free(err);
      throw std::runtime_error(msg);
    }
  }
  // First column of the first row as text ("" for NULL or no row).
  std::string text(const std::string& sql) {
    sqlite3_stmt* st = nullptr;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &st, nullptr) != SQLITE_OK)
      throw std::runtime_error(sqlite3_errmsg(db_));
    std::string out;
    if (sqlite3_step(st) == SQLITE_ROW && sqlite3_column_text(st, 0))
      out = reinterpret_cast<const char*>(sqlite3_column_text(st, 0));
    sqlite3_finalize(st);
    return out;
  }
  long long integer(const std::string& sql) { return std::stoll(text(sql)); }

 private:
  sqlite3* db_ = nullptr;
};

inline RunInfo sample_info(const std::string& strategy = "ring", RunSource source = RunSource::Measured) {
  RunInfo info;
  info.scenario = "default";
  info.strategy = strategy;
  info.backend = source == RunSource::Measured ? "cpu" : "simgrid";
  info.world_size = 2;
  info.source = source;
  info.config_json = R"({"model":"mlp","lr":0.1})";
  info.host_info = R"({"hostname":"node0","cores":8})";
  info.batch_size = 32;
  return info;
}

}  // namespace ddplab::test
