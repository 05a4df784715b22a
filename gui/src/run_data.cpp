// Reads a results store into a StoreSnapshot (see run_data.hpp).
#include "ddplab/gui/run_data.hpp"

#include "ddplab/core/stats.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
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

std::string RunRecord::model() const {
  const auto cfg = nlohmann::json::parse(summary.run.info.config_json, nullptr, false);
  if (!cfg.is_object() || !cfg.contains("model") || !cfg["model"].is_object()) return "model?";
  const auto& m = cfg["model"];
  const std::string type = m.value("type", "?");
  const auto known = choice_from<ModelType>(type);
  auto joined = [&](const char* key) {
    std::string out;
    if (m.contains(key) && m[key].is_array())
      for (const auto& v : m[key]) out.append(out.empty() ? "" : "-").append(v.dump());
    return out;
  };
  if (known == ModelType::Mlp) return std::string("mlp ").append(joined("layers"));
  if (known == ModelType::Cnn) return std::string("cnn ").append(joined("conv"));
  if (known == ModelType::Gpt)  // blocks x width
    return "gpt " + m.value("blocks", nlohmann::json()).dump() + "x" + m.value("dim", nlohmann::json()).dump();
  if (known == ModelType::Table) {
    std::string t = m.value("table", "?");
    const auto slash = t.find_last_of('/');
    return slash == std::string::npos ? t : t.substr(slash + 1);
  }
  return type;
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

std::vector<TraceEvent> read_trace(const std::string& path, std::int64_t run) {
  try {
    return Store(path, Store::Access::ReadOnly).trace_events(run);
  } catch (const std::exception& e) {
    throw LoadError("cannot read the timeline of run " + std::to_string(run) + " from " + path + ":\n" + e.what());
  }
}

RankReport read_rank_report(const std::string& path, std::int64_t run, std::int64_t skipped) {
  try {
    const std::vector<StepMetrics> steps = Store(path, Store::Access::ReadOnly).steps(run);
    return steps.empty() ? RankReport{} : rank_report(steps, skipped);
  } catch (const std::exception& e) {
    throw LoadError("cannot read the ranks of run " + std::to_string(run) + " from " + path + ":\n" + e.what());
  }
}

RunCurves read_curves(const Store& store, const RunRow& run) {
  RunCurves c{run, store.totals(run.id), store.evaluations(run.id)};
  for (Evaluation& e : c.evaluations) e.confusion.clear(), e.confusion.shrink_to_fit();
  return c;
}

StoreSnapshot load_snapshot(const std::string& path) {
  namespace fs = std::filesystem;
  std::error_code ec;
  if (!fs::exists(path, ec))
    throw LoadError("results store not found: " + path +
                    "\n(run `ddplab run` or `ddplab simulate` first, or open another file)");
  if (!fs::is_regular_file(path, ec)) throw LoadError("not a file: " + path);

  StoreSnapshot snap;
  snap.path = path;
  try {
    const Store store(path, Store::Access::ReadOnly);
    snap.schema = store.schema();
    auto summaries = store.summaries();
    snap.runs.reserve(summaries.size());
    for (auto& s : summaries) snap.runs.push_back({std::move(s)});
    snap.validations = store.validations();
    snap.predictions = store.predictions();
    for (std::int64_t id : store.traced_runs()) snap.traced.insert(id);
    for (BenchRunRow& b : store.benches()) {
      BenchRecord rec{std::move(b), {}};
      rec.rows = store.bench_rows(rec.bench.id);
      snap.benches.push_back(std::move(rec));
    }
  } catch (const std::exception& e) {
    throw LoadError("cannot read results store " + path + ":\n" + e.what());
  }
  return snap;
}

}  // namespace ddplab::gui
