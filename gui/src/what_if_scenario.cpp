#include "ddplab/gui/what_if_scenario.hpp"

#include <algorithm>
#include <map>

#include <nlohmann/json.hpp>

#include "ddplab/simulator/calibration.hpp"
#include "ddplab/simulator/compute_source.hpp"

namespace ddplab::gui {

std::optional<StoredScenario> newest_stored_scenario(const std::vector<RunRow>& runs,
                                                     const std::vector<CalibrationRecord>& calibrations) {
  if (runs.empty()) return std::nullopt;
  const auto newest =
      std::max_element(runs.begin(), runs.end(), [](const RunRow& a, const RunRow& b) { return a.id < b.id; });
  const std::string name = newest->info.scenario;
  StoredScenario out;
  std::vector<StrategyConfig> strategies;
  std::map<std::string, std::size_t> slot;  // strategy name -> its index in strategies
  const RunRow* base = nullptr;
  for (const RunRow& r : runs) {  // oldest first: a later run of a strategy replaces the earlier one
    if (r.info.scenario != name || r.info.source != RunSource::Measured || r.status != RunStatus::Completed) continue;
    Scenario sc;
    try {
      sc = measured_scenario(r);
    } catch (const InputError&) {
      continue;  // stored before its configuration was complete: nothing to rebuild from it
    }
    ++out.runs;
    base = &r;
    const StrategyConfig& st = sc.strategies.front();
    const auto [it, fresh] = slot.emplace(st.name, strategies.size());
    if (fresh)
      strategies.push_back(st);
    else
      strategies[it->second] = st;
    out.scenario = std::move(sc);  // the newest run's model, training and cluster
  }
  if (!base) return std::nullopt;
  out.scenario.strategies = std::move(strategies);
  out.run = base->id;
  const Transport transport = base->info.transport();
  for (auto c = calibrations.rbegin(); c != calibrations.rend(); ++c) {
    const auto fit = nlohmann::json::parse(c->fit_json, nullptr, false);
    if (!fit.is_object()) continue;
    try {
      if (Calibration::from_json(fit).transport() != transport) continue;
    } catch (const std::exception&) {
      continue;  // unreadable: the Calibration view says why
    }
    out.calibration = c->name;
    break;
  }
  out.scenario.cluster.calibration = out.calibration;
  return out;
}

}  // namespace ddplab::gui
