// Results store: one SQLite file (WAL) holding measured and simulated runs with the same schema.
// Writes are batched in transactions; a crash loses at most the unflushed batch, never the file.
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

struct sqlite3;

namespace ddplab {

struct StoreError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct RunInfo {
  std::string scenario;     // scenario name
  std::string strategy;     // strategy name
  std::string backend;      // "cpu", "cuda", "simgrid"
  int world_size = 1;
  std::string source;       // "measured" | "simulated"
  std::string config_json;  // full resolved config (scenario + strategy + anything else)
  std::string host_info;    // JSON: hostname, cpu, cores, mpi, ...
  int batch_size = 0;       // per rank, so throughput can be derived
};

struct StepMetrics {
  std::int64_t step = 0;
  int rank = 0;
  double compute_s = 0, comm_s = 0, exposed_comm_s = 0, optimizer_s = 0, step_s = 0;
  std::int64_t samples = 0;
  std::int64_t bytes_sent = 0;
  double loss = 0;
};

struct Evaluation {
  std::int64_t step = 0;
  double wall_s = 0;  // since run start
  double test_loss = 0, test_accuracy = 0, macro_precision = 0, macro_recall = 0;
};

struct Resources {
  int rank = 0;
  std::int64_t peak_rss_bytes = 0;
  double cpu_s = 0, wall_s = 0;
};

struct RunRow {
  std::int64_t id = 0;
  RunInfo info;
  std::string version;       // ddplab version that wrote it
  std::string started_at, ended_at;  // ISO-8601 UTC; ended_at empty while running
  std::string status;        // "running" | "completed" | "failed"
};

// Per-run aggregate used by report, simulate and the GUI.
struct RunSummary {
  RunRow run;
  std::int64_t steps = 0;
  double samples_per_s = 0;      // total samples / sum over steps of the slowest rank's step_s
  double step_s = 0;             // mean over steps of the slowest rank's step_s
  double compute_s = 0, comm_s = 0, exposed_comm_s = 0, optimizer_s = 0;  // means over steps and ranks
  double bytes_per_step = 0;     // mean bytes sent per rank per step
  std::optional<double> final_loss;      // mean over ranks at the last step
  std::optional<double> final_accuracy;  // last evaluation
};

class Store {
 public:
  // Opens or creates the file (and its parent folder), applies the schema, enables WAL.
  // A file with a newer schema version than this build knows is refused with StoreError.
  explicit Store(const std::string& path, int batch_rows = 256);
  ~Store();  // flushes what is pending
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  const std::string& path() const { return path_; }

  std::int64_t begin_run(const RunInfo& info);                   // status "running"
  void add_step(std::int64_t run, const StepMetrics& m);         // batched
  void add_evaluation(std::int64_t run, const Evaluation& e);    // batched
  void add_resources(std::int64_t run, const Resources& r);      // batched
  void flush();                                                  // commits pending rows in one transaction
  void finish_run(std::int64_t run, const std::string& status);  // flushes, sets status and ended_at

  std::vector<RunRow> runs() const;
  std::optional<RunRow> run(std::int64_t id) const;
  std::vector<StepMetrics> steps(std::int64_t run) const;        // ordered by step, rank
  std::vector<Evaluation> evaluations(std::int64_t run) const;   // ordered by step
  std::vector<Resources> resources(std::int64_t run) const;      // ordered by rank
  RunSummary summary(std::int64_t run) const;
  std::vector<RunSummary> summaries() const;                     // every run, oldest first

  // Latest completed measured run of this scenario+strategy (any world size), if any.
  std::optional<std::int64_t> latest_measured(const std::string& scenario, const std::string& strategy) const;

  static constexpr int kSchemaVersion = 1;

 private:
  struct Pending;
  std::string path_;
  sqlite3* db_ = nullptr;
  int batch_rows_;
  std::unique_ptr<Pending> pending_;
};

}  // namespace ddplab
