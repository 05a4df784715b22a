// Results store: one SQLite file (WAL) holding measured and simulated runs with the same schema.
// Writes are batched in transactions; a crash loses at most the unflushed batch, never the file.
#pragma once
#include "ddplab/core/flight.hpp"
#include "ddplab/core/stats.hpp"
#include "ddplab/core/trace.hpp"
#include <cmath>
#include <cstdint>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>
#include "ddplab/core/choices.hpp"
#include "ddplab/core/error.hpp"

struct sqlite3;

namespace ddplab {

struct StepTotals;  // step_totals.hpp

// The results store the user named: missing, not a store, of another schema version, without the run asked for,
// or refusing a write (read-only, locked, full: SQLite's message says which). Input (exit 2) in every case: the
// file is the user's to fix, and nothing in a run or in ddplab is broken when SQLite refuses it.
struct StoreError : InputError {
  using InputError::InputError;
};

struct RunInfo {
  std::string scenario;  // scenario name
  std::string strategy;  // strategy name
  std::string backend;   // what computed: "cpu", "cuda", "cuda-tf32", "cuda+mpi", "simgrid"
  int world_size = 1;
  RunSource source = RunSource::Measured;
  std::string config_json;  // full resolved config (scenario + strategy + anything else)
  std::string host_info;    // JSON: hostname, cpu, cores, mpi, ...
  int batch_size = 0;       // per rank, so throughput can be derived
  // What carried a measured run's collectives: NCCL on backend cuda (and cuda-tf32), MPI otherwise.
  Transport transport() const;
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
  // classes x classes counts, row = true class, column = prediction (class_metrics.hpp derives the rest);
  // empty in stores older than schema version 5.
  int classes = 0;
  std::vector<std::int64_t> confusion;
};

struct Resources {
  int rank = 0;
  std::int64_t peak_rss_bytes = 0;
  double cpu_s = 0, wall_s = 0;
  std::optional<std::int64_t> peak_device_bytes;  // high-water mark of device allocations (GPU backends)
};

struct RunRow {
  std::int64_t id = 0;
  RunInfo info;
  std::string version;               // ddplab version that wrote it
  std::string started_at, ended_at;  // ISO-8601 UTC; ended_at empty while running
  // As stored, or Abandoned: stored "running" by a writer that is gone (liveness(writer) == Gone,
  // process_identity.hpp), so nothing will finish it (run_admin.hpp).
  RunStatus status = RunStatus::Running;
  std::string writer;  // JSON ProcessIdentity of the process that began it; empty before schema version 10
  std::string reason;  // why it did not complete (a watchdog report, a rank's error); often empty
};

// Per-run aggregate used by report, simulate and the GUI (definitions: step_totals.hpp). A run that stored
// its step pattern (config "pattern", step_pattern.hpp) is averaged over its steady state: a measured run
// over the whole blocks after the pattern's warm-up and its first step (set-up), at least skip_steps in; a
// simulated run over the steady block it simulated. Its warm-up is summed apart (warmup_s). A run without
// one is averaged over every step after the first skip_steps (the last step always counts).
struct RunSummary {
  RunRow run;
  std::int64_t steps = 0;    // steps averaged over
  std::int64_t skipped = 0;  // steps before them (warm-up, or summaries(skip_steps))
  std::int64_t period = 1;   // micro-steps per steady block of the run's step pattern
  std::int64_t warmup_steps =
      0;                     // steps a run goes through before its steady state (a simulated run's repeats counted)
  double warmup_s = 0;       // their time (sum of the slowest ranks' step times)
  double samples_per_s = 0;  // samples / sum over steps of the slowest rank's step_s
  double step_s = 0;         // mean over steps of the slowest rank's step_s
  double compute_s = 0, comm_s = 0, exposed_comm_s = 0, optimizer_s = 0;  // means over steps and ranks
  double bytes_per_step = 0;                                              // mean bytes sent per rank per step
  std::optional<double> final_loss;                                       // mean over ranks at the last step
  std::optional<double> final_accuracy;                                   // last evaluation
};

// One `ddplab bench collectives` invocation (table bench_runs). Kept apart from `runs`, which holds training
// runs: a bench has no steps or losses, and mixing them would skew report and GUI comparisons.
struct BenchInfo {
  std::string kind = "collectives";  // what was benchmarked
  std::string backend;               // measured: the transport, "mpi" or "nccl"; simulated: "simgrid"
  int world_size = 1;
  int ranks_per_node = 1;
  int iters = 0, warmup = 0;    // timed and untimed iterations per size
  std::string config_json;      // resolved options (sizes, schedules, check, ...)
  std::string host_info;        // JSON: hostname, cpu, cores, ...
  bool simulated() const;       // `bench collectives --simulate`: a prediction, not a measurement
  Transport transport() const;  // a measured bench's
};

struct BenchRunRow {
  std::int64_t id = 0;
  BenchInfo info;
  std::string version, started_at, ended_at;  // ISO-8601 UTC; ended_at empty while running
  RunStatus status = RunStatus::Running;      // running, completed or failed
};

// One line of a collective benchmark table (table collective_bench), as nccl-tests prints it:
// algbw = bytes / time, busbw = algbw * factor (allreduce 2(n-1)/n, reduce-scatter and all-gather (n-1)/n).
struct CollectiveBenchRow {
  std::string schedule;  // "ring", ..., "native"
  Collective collective = Collective::Allreduce;
  std::string type = "float";           // element type
  std::int64_t bytes = 0, count = 0;    // buffer size and elements
  double time_us = 0;                   // max over ranks of the mean time per iteration
  double algbw_gbs = 0, busbw_gbs = 0;  // GB/s (10^9 bytes per second)
  std::optional<std::int64_t> wrong;    // elements differing from the exact sum, over all ranks; none if unchecked
};

// A named `ddplab calibrate` fit (table calibrations); fit_json is the simulator's Calibration::to_json.
struct CalibrationRecord {
  std::int64_t id = 0;
  std::string name, created_at;  // ISO-8601 UTC
  std::string host_info;         // JSON
  std::string fit_json;
};

// One ping-pong measurement of a calibration (table calibration_pingpong): one-way = half the median round trip.
struct PingPongRow {
  int src = 0, dst = 1;
  std::int64_t bytes = 0;
  int iters = 0;
  double one_way_s = 0;
};

// One predicted-vs-measured comparison of `ddplab validate` (table validations).
struct ValidationRow {
  std::int64_t id = 0;
  std::string created_at;
  std::string calibration;  // empty: the scenario's own links
  std::string kind;         // "run" | "collective"
  std::int64_t ref_id = 0;  // run id, or bench id
  std::string label;        // strategy, or schedule
  int world_size = 0;
  std::int64_t bytes = 0;                             // collective buffer size (0 for runs)
  std::string metric;                                 // "step_s" | "comm_s" | "busbw_gbs"
  double measured = 0, predicted = 0, error_pct = 0;  // error_pct = 100 (predicted - measured) / measured

  // A comparison, its error_pct computed (NaN when nothing positive was measured).
  static ValidationRow compare(const std::string& calibration, const std::string& kind, std::int64_t ref_id,
                               const std::string& label, int world_size, std::int64_t bytes, const std::string& metric,
                               double measured, double predicted) {
    ValidationRow v;
    v.calibration = calibration, v.kind = kind, v.ref_id = ref_id, v.label = label, v.world_size = world_size;
    v.bytes = bytes, v.metric = metric, v.measured = measured, v.predicted = predicted;
    v.error_pct = ddplab::error_pct(measured, predicted);
    return v;
  }
};

// One time-to-accuracy prediction of `ddplab predict` (table predictions): a strategy at a world size.
struct PredictionRow {
  std::int64_t id = 0;
  std::string created_at;
  std::string scenario, strategy;
  double target_accuracy = 0;
  int world_size = 0;
  double global_batch = 0;                 // samples per update
  double updates = 0;                      // to the target, from the fit
  double step_s = 0;                       // simulated steady time per micro-step
  double time_s = 0;                       // predicted training time to the target (warm-up included, evaluation not)
  std::optional<std::int64_t> sim_run_id;  // the simulated run it took its step time from
  std::string fit_json;                    // the statistical-efficiency fit and the measured points behind it
  std::optional<double> measured_s;        // the mean training time to the target of measured_runs
  std::string measured_runs_json = "[]";   // measured runs at this world size and batch, outside the fit
  std::string version;                     // ddplab build
};

// One checkpoint of a measured run (table checkpoints, schema version 11): the folder holding each rank's
// file (checkpoint.hpp) after `step` steps. A final one is taken at the end of a completed run.
struct CheckpointRow {
  std::int64_t run_id = 0;
  std::int64_t step = 0;
  std::string path;  // folder: rank-R.ckpt for every rank
  int ranks = 0;
  std::int64_t bytes = 0;  // all ranks' files
  double write_s = 0;      // the slowest rank's write, fsync and rename
  bool final = false;      // taken at the end of the run (after the policy's end-of-run work)
  std::string created_at;  // ISO-8601 UTC
};

class Store {
 public:
  // Opens or creates the file (and its parent folder), applies the schema, enables WAL.
  // A file with a newer schema version than this build knows is refused with StoreError.
  explicit Store(const std::string& path, int batch_rows = 256);
  // Opens an existing store for reading only (a viewer): nothing is created, migrated or written, and the
  // file may be read while `ddplab run` writes it (WAL). Refused with StoreError, naming the file and the
  // reason, when it is missing, not SQLite, not a ddplab store, or at another schema version than this build's.
  // One thread at a time may use it (SQLite's multi-thread mode); another thread opens its own.
  enum class Access { ReadOnly };
  Store(const std::string& path, Access access);
  ~Store();  // flushes what is pending
  Store(const Store&) = delete;
  Store& operator=(const Store&) = delete;

  const std::string& path() const { return path_; }

  std::int64_t begin_run(const RunInfo& info);                 // status "running", this process its writer
  void add_step(std::int64_t run, const StepMetrics& m);       // batched
  void add_evaluation(std::int64_t run, const Evaluation& e);  // batched
  void add_resources(std::int64_t run, const Resources& r);    // batched
  void flush();                                                // commits pending rows in one transaction
  // Flushes, sets status, ended_at and the reason (empty: none).
  void finish_run(std::int64_t run, RunStatus status, const std::string& reason = "");
  void set_run_reason(std::int64_t run, const std::string& reason);  // a finished run's, learnt later by its launcher
  // Replaces a run's config JSON, for launchers that learn where the run ran only after it was begun.
  void set_run_config(std::int64_t run, const std::string& config_json);
  // Deletes runs with their steps, evaluations and resources, in one transaction (all or none); predictions
  // that took their step time from one keep their figures and lose the link. Throws StoreError naming the
  // first id that is not in the store, before anything is deleted.
  void delete_runs(const std::vector<std::int64_t>& ids);

  std::vector<RunRow> runs() const;
  std::optional<RunRow> run(std::int64_t id) const;
  std::vector<StepMetrics> steps(std::int64_t run) const;       // ordered by step, rank
  std::vector<Evaluation> evaluations(std::int64_t run) const;  // ordered by step
  std::vector<Resources> resources(std::int64_t run) const;     // ordered by rank
  // skip_steps: leave each run's first steps (warm-up) out of the time and byte averages; the last step
  // always counts, and so does the final loss and accuracy.
  // A finished run's summary at skip_steps 0 is read from the cache finish_run wrote (schema version 8).
  RunSummary summary(std::int64_t run, int skip_steps = 0) const;
  std::vector<RunSummary> summaries(int skip_steps = 0) const;  // every run, oldest first
  // A run's steps collapsed over ranks (step_totals.hpp), ascending by step: a finished run's from the cache
  // finish_run wrote, a running one's (or an older store's) from its step rows.
  std::vector<StepTotals> totals(std::int64_t run) const;

  // Latest completed measured run of this scenario+strategy (any world size), if any.
  std::optional<std::int64_t> latest_measured(const std::string& scenario, const std::string& strategy) const;

  // Collective benchmarks (schema version 2).
  std::int64_t begin_bench(const BenchInfo& info);                        // status "running"
  void add_bench_row(std::int64_t bench, const CollectiveBenchRow& row);  // batched
  void finish_bench(std::int64_t bench, RunStatus status);                // flushes, sets status and ended_at
  std::vector<BenchRunRow> benches() const;                               // oldest first
  std::vector<CollectiveBenchRow> bench_rows(std::int64_t bench) const;   // in insertion order

  // Calibrations and validations (schema version 3). add_calibration writes the fit and its ping-pong rows in
  // one transaction; calibration(name) is the latest stored under that name.
  std::int64_t add_calibration(const CalibrationRecord& rec, const std::vector<PingPongRow>& pingpong);
  std::vector<CalibrationRecord> calibrations() const;  // oldest first
  std::optional<CalibrationRecord> calibration(const std::string& name) const;
  std::vector<PingPongRow> pingpong_rows(std::int64_t calibration) const;  // by src, dst, bytes
  void add_validations(const std::vector<ValidationRow>& rows);            // one transaction; created_at set here
  std::vector<ValidationRow> validations() const;                          // oldest first

  // Time-to-accuracy predictions (schema version 6).
  void add_predictions(const std::vector<PredictionRow>& rows);  // one transaction; created_at, version set here
  std::vector<PredictionRow> predictions() const;                // oldest first

  // Timelines (schema version 7): a run's traced steps, every op of every rank. add_trace writes them in one
  // transaction, each event's step taken from its args ("step"); trace_events reads them ordered by step,
  // rank and start (none for a read-only store of version 6).
  void add_trace(std::int64_t run, const std::vector<TraceEvent>& events);
  std::vector<TraceEvent> trace_events(std::int64_t run) const;
  std::vector<std::int64_t> traced_runs() const;  // runs with a stored timeline, ascending

  // Flight recorder dumps (schema version 10): the ranks' last calls, stored by the launcher of a failed job.
  void add_flight(std::int64_t run, const std::vector<FlightRecord>& records);  // one transaction
  std::vector<FlightRecord> flight(std::int64_t run) const;                     // by rank, seq

  // Checkpoints (schema version 11). add_checkpoint commits the row at once, after the pending rows: a
  // stored checkpoint never has steps before it still unwritten.
  void add_checkpoint(const CheckpointRow& row);
  void delete_checkpoint(std::int64_t run, std::int64_t step);
  std::vector<CheckpointRow> checkpoints(std::int64_t run) const;  // ascending by step
  // Reopens a failed, interrupted or abandoned run to continue from its checkpoint at `step`, in one
  // transaction: its steps from `step` on, its evaluations after it, its checkpoints after it, its timeline,
  // resources, flight records, reason and cached totals are deleted, and it reads "running" again with this
  // process as its writer and `host_info` (the resuming job's, with its launch id) as its host; its config
  // JSON's "resumed" list gains {from_step, status, reason, at} of the stop it continues from. Throws
  // StoreError when the run is missing, completed, still running, or has no checkpoint at that step.
  void resume_run(std::int64_t run, std::int64_t step, const std::string& host_info);

  // 1: runs, steps, evaluations, resources. 2: + bench_runs, collective_bench. 3: + calibrations,
  // calibration_pingpong, validations. 4: + resources.peak_device_bytes. 5: + evaluations.confusion. 6: + predictions.
  // 7: + trace_events. 8: + step_totals, run_summaries (caches of finished runs). 9: runs may end "interrupted".
  // 10: + runs.writer, runs.reason, flight_records. 11: + checkpoints. Older files are migrated in place when opened
  // (in one transaction); newer ones are refused. A read-only Store reads files from kOldestReadable on without
  // migrating them (what they lack reads as empty).
  static constexpr int kSchemaVersion = 11;
  static constexpr int kOldestReadable = 6;
  bool read_only() const { return read_only_; }
  int schema() const { return schema_; }

 private:
  struct Pending;
  std::string path_;
  sqlite3* db_ = nullptr;
  int batch_rows_;
  bool read_only_ = false;
  int schema_ = kSchemaVersion;
  std::unique_ptr<Pending> pending_;

  void prepare_inserts();
  bool cached(const RunRow& run) const;  // its totals and summary may be in the caches
  std::vector<StepTotals> totals_of(const RunRow& run) const;
  RunSummary summary_of(RunRow run, int skip_steps) const;
  // Writes a finished run's run_summaries row, and with `totals` first its step_totals rows (call inside a
  // transaction).
  void cache_run(std::int64_t run, bool totals);
};

}  // namespace ddplab
