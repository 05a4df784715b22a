// Reads a results store into a StoreSnapshot (see run_data.hpp).
#include "ddplab/gui/run_data.hpp"

#include "ddplab/core/stats.hpp"

#include <cmath>
#include <filesystem>
#include <limits>
#include <map>
#include <set>
#include <tuple>
#include <system_error>

namespace ddplab::gui {

const RunRecord* StoreSnapshot::find(std::int64_t id) const {
  for (const auto& r : runs)
    if (r.id() == id) return &r;
  return nullptr;
}

std::vector<std::pair<std::int64_t, double>> mean_loss_per_step(const std::vector<StepMetrics>& steps) {
  std::map<std::int64_t, std::pair<double, int>> acc;  // step -> (sum, count)
  for (const auto& m : steps) {
    if (!std::isfinite(m.loss)) continue;
    auto& a = acc[m.step];
    a.first += m.loss;
    a.second += 1;
  }
  std::vector<std::pair<std::int64_t, double>> out;
  out.reserve(acc.size());
  for (const auto& [step, a] : acc) out.emplace_back(step, a.first / a.second);
  return out;
}

std::vector<ValidationBatch> validation_batches(const std::vector<ValidationRow>& rows) {
  std::vector<ValidationBatch> out;
  std::set<std::tuple<std::string, std::int64_t, std::string, std::int64_t, std::string>> seen;  // in the last batch
  for (const ValidationRow& v : rows) {
    auto key = std::make_tuple(v.kind, v.ref_id, v.label, v.bytes, v.metric);
    if (out.empty() || out.back().created_at != v.created_at || out.back().calibration != v.calibration ||
        seen.count(key)) {
      out.push_back({v.created_at, v.calibration, {}});
      seen.clear();
    }
    seen.insert(std::move(key));
    out.back().rows.push_back(v);
  }
  return out;
}

double validation_error_pct(double predicted, double measured) {
  if (!std::isfinite(predicted) || !std::isfinite(measured)) return std::numeric_limits<double>::quiet_NaN();
  return error_pct(measured, predicted);  // core/stats.hpp: the one definition
}

StoreSnapshot load_snapshot(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  // Store's constructor creates missing files; a viewer must not, so check first.
  if (!fs::exists(path, ec))
    throw LoadError("results store not found: " + path +
                    "\n(run `ddplab run` or `ddplab simulate` first, or open another file)");
  if (!fs::is_regular_file(path, ec)) throw LoadError("not a file: " + path);

  StoreSnapshot snap;
  snap.path = path;
  try {
    Store store(path);
    auto summaries = store.summaries();
    snap.runs.reserve(summaries.size());
    for (auto& s : summaries) {
      RunRecord rec;
      rec.summary = std::move(s);
      if (rec.measured()) rec.mean_loss = mean_loss_per_step(store.steps(rec.id()));
      snap.runs.push_back(std::move(rec));
    }
    snap.validations = store.validations();
  } catch (const std::exception& e) {
    throw LoadError("cannot read results store " + path + ":\n" + e.what());
  }
  return snap;
}

}  // namespace ddplab::gui
