// Comparison of runs in a store: a text table for the terminal, and CSV / JSON exports.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ddplab/core/store.hpp"

namespace ddplab {

// What a run took to reach a test accuracy: at its first evaluation at or above it, the wall seconds since
// its start, the steps done, and the samples all ranks trained on in them.
struct TimeToAccuracy {
  double wall_s = 0;
  std::int64_t steps = 0, samples = 0;
};
// nullopt when no evaluation reached `target`.
std::optional<TimeToAccuracy> time_to_accuracy(const Store& store, std::int64_t run, double target);

// Aligned columns, one row per run. With a target accuracy, columns of time_to_accuracy per run: seconds,
// steps and samples.
std::string report_table(const std::vector<RunSummary>& runs, std::optional<double> target = {},
                         const std::vector<std::optional<TimeToAccuracy>>& time_to_target = {});
// Header + one row per run (RFC 4180 quoting); time_to_target_s, steps_to_target and samples_to_target when a
// target is given.
std::string report_csv(const std::vector<RunSummary>& runs, std::optional<double> target = {},
                       const std::vector<std::optional<TimeToAccuracy>>& time_to_target = {});
std::string report_json(const Store& store, const std::vector<RunSummary>& runs);  // runs with steps/evals

// `ddplab runs list`: one row per run about its life: id, status, scenario, strategy, source, backend, world,
// steps averaged, started and ended (UTC).
std::string runs_table(const std::vector<RunSummary>& runs);
// `ddplab runs show`: one run in full: identity, status and times, what is stored of it (steps, evaluations,
// timeline), its summary, and its host and configuration JSON. Throws StoreError when there is no such run.
std::string run_details(const Store& store, std::int64_t run);

// `ddplab predict`'s stored predictions (Store::predictions): aligned columns with the error against the
// measured counterpart where there is one (100 (predicted - measured) / measured), or CSV with every column
// (the fit and the measured runs as JSON text).
std::string predictions_table(const std::vector<PredictionRow>& rows);
std::string predictions_csv(const std::vector<PredictionRow>& rows);

}  // namespace ddplab
