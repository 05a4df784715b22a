// What the GUI shows, read from the results store in one go.
// The store is opened, read and closed again, so the GUI never holds a lock on a file
// that `ddplab run` or `ddplab simulate` may be writing; F5 simply reads a fresh snapshot.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "ddplab/core/store.hpp"

namespace ddplab::gui {

// Thrown when the file is missing or cannot be read as a ddplab store; what() is user-facing.
struct LoadError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

struct RunRecord {
  RunSummary summary;
  // (step, mean loss over the ranks that reported a finite loss), ordered by step.
  // Filled for measured runs only: simulated runs carry no loss (NaN).
  std::vector<std::pair<std::int64_t, double>> mean_loss;

  std::int64_t id() const { return summary.run.id; }
  bool measured() const { return summary.run.info.source == "measured"; }
  bool simulated() const { return summary.run.info.source == "simulated"; }
};

// One `ddplab validate` invocation: the comparisons it stored together (table validations).
struct ValidationBatch {
  std::string created_at;   // ISO-8601 UTC, as stored
  std::string calibration;  // empty: each scenario's own [cluster] links
  std::vector<ValidationRow> rows;  // in store order
};

struct StoreSnapshot {
  std::string path;
  std::vector<RunRecord> runs;  // oldest first, as Store::summaries() returns them
  std::vector<ValidationRow> validations;  // oldest first, as Store::validations() returns them

  const RunRecord* find(std::int64_t id) const;
};

// Groups validation rows, in store order, into the invocations that wrote them: a batch ends where
// created_at or the calibration changes, or where a comparison (kind, ref, label, size, metric) repeats
// (two `ddplab validate` runs within one second). Oldest first.
std::vector<ValidationBatch> validation_batches(const std::vector<ValidationRow>& rows);

// 100 (predicted - measured) / measured, as `ddplab validate` defines it; NaN when measured is not > 0
// or either value is not finite.
double validation_error_pct(double predicted, double measured);

// Mean loss over ranks per step; rows whose loss is not finite are ignored, and steps
// with no finite loss at all are left out.
std::vector<std::pair<std::int64_t, double>> mean_loss_per_step(const std::vector<StepMetrics>& steps);

// Reads every run of the store at `path`. A missing file is an error (Store would create it).
StoreSnapshot load_snapshot(const std::string& path);

}  // namespace ddplab::gui
