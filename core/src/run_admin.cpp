// See run_admin.hpp.
#include "ddplab/core/run_admin.hpp"

#include <algorithm>
#include <set>
#include <stdexcept>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace ddplab {

const std::vector<std::string>& run_statuses() {
  static const std::vector<std::string> statuses{"running", "completed", "failed", "interrupted", "abandoned"};
  return statuses;
}

std::vector<RunRow> runs_with_status(const Store& store, const std::vector<std::string>& statuses) {
  const auto& known = run_statuses();
  for (const std::string& s : statuses)
    if (std::find(known.begin(), known.end(), s) == known.end())
      throw std::invalid_argument(fmt::format("unknown run status \"{}\" (one of: {})", s, fmt::join(known, ", ")));
  const std::set<std::string> wanted(statuses.begin(), statuses.end());
  std::vector<RunRow> out;
  for (RunRow& r : store.runs())
    if (wanted.count(r.status)) out.push_back(std::move(r));
  return out;
}

std::vector<RunRow> delete_runs_checked(Store& store, const std::vector<std::int64_t>& ids) {
  std::vector<RunRow> rows;
  std::vector<std::int64_t> missing, running;
  for (std::int64_t id : std::set<std::int64_t>(ids.begin(), ids.end())) {
    std::optional<RunRow> row = store.run(id);
    if (!row) missing.push_back(id);
    else if (row->status == "running") running.push_back(id);
    else rows.push_back(std::move(*row));
  }
  std::vector<std::string> why;
  if (!missing.empty())
    why.push_back(fmt::format("no run {} in {}", fmt::join(missing, ", "), store.path()));
  if (!running.empty())
    why.push_back(fmt::format("run {} still marked running (its launcher may be writing it; stop it first)",
                              fmt::join(running, ", ")));
  if (!why.empty()) throw std::invalid_argument(fmt::format("nothing deleted: {}", fmt::join(why, "; ")));
  std::vector<std::int64_t> checked;
  for (const RunRow& r : rows) checked.push_back(r.id);
  if (!checked.empty()) store.delete_runs(checked);
  return rows;
}

}  // namespace ddplab
