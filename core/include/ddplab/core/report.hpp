// Comparison of runs in a store: a text table for the terminal, and CSV / JSON exports.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ddplab/core/store.hpp"

namespace ddplab {

// Wall seconds from a run's start to its first evaluation with test accuracy >= target; nullopt if none.
std::optional<double> time_to_accuracy(const Store& store, std::int64_t run, double target);

// Aligned columns, one row per run. With a target accuracy, a column of time_to_accuracy per run.
std::string report_table(const std::vector<RunSummary>& runs, std::optional<double> target = {},
                         const std::vector<std::optional<double>>& time_to_target = {});
// Header + one row per run (RFC 4180 quoting); time_to_target_s when a target is given.
std::string report_csv(const std::vector<RunSummary>& runs, std::optional<double> target = {},
                       const std::vector<std::optional<double>>& time_to_target = {});
std::string report_json(const Store& store, const std::vector<RunSummary>& runs);  // runs with steps/evals

}  // namespace ddplab
