// What the GUI shows, read from the results store: a snapshot of every run's summary (and the store's
// validations, predictions and benchmarks), read in one go, and each measured run's curves, read apart
// (read_curves; the window reads them in the background, curve_loader.hpp), since they are most of a
// large store and only the Convergence view draws them.
// The store is opened read-only (Store::Access::ReadOnly), read and closed again, so the GUI never writes
// or locks a file that `ddplab run` or `ddplab simulate` may be writing; F5 and live follow read a fresh
// snapshot. Only deleting runs writes (delete_runs, after the user confirms).
#pragma once
#include <cstdint>
#include <set>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "ddplab/core/error.hpp"
#include "ddplab/core/rank_report.hpp"
#include "ddplab/core/step_totals.hpp"
#include "ddplab/core/store.hpp"

namespace ddplab::gui {

// Thrown when the file is missing or cannot be read as a ddplab store; what() is user-facing.
struct LoadError : InputError {
  using InputError::InputError;
};

// What a step spends outside compute, exposed communication and the optimizer (data loading, hand-offs):
// step - compute - exposed comm - optimizer, never below 0.
inline double other_s(double step_s, double compute_s, double exposed_comm_s, double optimizer_s) {
  return step_s - compute_s - exposed_comm_s - optimizer_s > 0 ? step_s - compute_s - exposed_comm_s - optimizer_s
                                                               : 0.0;
}

struct RunRecord {
  RunSummary summary;

  std::int64_t id() const { return summary.run.id; }
  const RunInfo& info() const { return summary.run.info; }
  bool measured() const { return summary.run.info.source == RunSource::Measured; }
  bool simulated() const { return summary.run.info.source == RunSource::Simulated; }
  // Failed, interrupted, abandoned and running runs are drawn greyed: their figures are partial.
  bool finished() const { return summary.run.status == RunStatus::Completed; }
  // Still being written (by a live writer, or one on another machine): its steps may still grow.
  bool running() const { return summary.run.status == RunStatus::Running; }
  // The model the run trained (config "model", e.g. "mlp 784-256-256-10", "gpt 4x128" or "resnet50"): charts never
  // share an axis between runs of different models or backends.
  std::string model() const;
};

// A measured run's curves (simulated runs have no loss): its steps collapsed over ranks, with the mean
// loss (the x axes: samples, training time), and its evaluations, both ordered by step.
struct RunCurves {
  RunRow run;  // as it was when read: curves of a run that has finished since are read again
  std::vector<StepTotals> totals;
  std::vector<Evaluation> evaluations;  // confusion matrices dropped
};

// One collective benchmark (`ddplab bench collectives`, or an imported nccl-tests log) with its rows.
struct BenchRecord {
  BenchRunRow bench;
  std::vector<CollectiveBenchRow> rows;
};

// One `ddplab validate` invocation: the comparisons it stored together (table validations).
struct ValidationBatch {
  std::string created_at;           // ISO-8601 UTC, as stored
  std::string calibration;          // empty: each scenario's own [cluster] links
  std::vector<ValidationRow> rows;  // in store order
};

struct StoreSnapshot {
  std::string path;
  int schema = 0;                          // the file's schema version (Store::schema)
  std::vector<RunRecord> runs;             // oldest first, as Store::summaries() returns them
  std::vector<ValidationRow> validations;  // oldest first, as Store::validations() returns them
  std::vector<PredictionRow> predictions;  // oldest first (`ddplab predict`)
  std::vector<BenchRecord> benches;        // oldest first
  std::set<std::int64_t> traced;           // runs with a stored timeline (read on demand: read_trace)

  const RunRecord* find(std::int64_t id) const;
};

// Groups validation rows, in store order, into the invocations that wrote them: a batch ends where
// created_at or the calibration changes, or where a comparison (kind, ref, label, size, metric) repeats
// (two `ddplab validate` runs within one second). Oldest first.
std::vector<ValidationBatch> validation_batches(const std::vector<ValidationRow>& rows);

// 100 (predicted - measured) / measured, as `ddplab validate` defines it; NaN when measured is not > 0
// or either value is not finite.
double validation_error_pct(double predicted, double measured);

// Each rank's means over a run's steps from `skipped` on (its summary's steady window) and the slowest rank
// (core/rank_report.hpp, as `ddplab report --ranks` gives them), read on demand; no ranks when it has no
// steps. Throws LoadError naming the file.
RankReport read_rank_report(const std::string& path, std::int64_t run, std::int64_t skipped);

// A run's stored timeline (Store::trace_events), read-only; throws LoadError naming the file.
std::vector<TraceEvent> read_trace(const std::string& path, std::int64_t run);

// Reads every run's summary, and the rest but curves, of the store at `path`, read-only. A missing,
// foreign or unreadable file is a LoadError that names it and says why.
StoreSnapshot load_snapshot(const std::string& path);

// A run's curves from an open store: Store::totals (cached for finished runs) and Store::evaluations, never
// its per-rank rows, which only the Breakdown's per-rank chart reads, for one run (read_rank_report).
RunCurves read_curves(const Store& store, const RunRow& run);

}  // namespace ddplab::gui
