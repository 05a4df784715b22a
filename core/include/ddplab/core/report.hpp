// Comparison of runs in a store: a text table for the terminal, and CSV / JSON exports.
#pragma once
#include <string>
#include <vector>

#include "ddplab/core/store.hpp"

namespace ddplab {

std::string report_table(const std::vector<RunSummary>& runs);  // aligned columns, one row per run
std::string report_csv(const std::vector<RunSummary>& runs);    // header + one row per run (RFC 4180 quoting)
std::string report_json(const Store& store, const std::vector<RunSummary>& runs);  // runs with steps/evals

}  // namespace ddplab
