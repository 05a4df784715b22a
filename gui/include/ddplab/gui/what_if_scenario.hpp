// The scenario the What-if view opens on: the one whose runs the store holds, newest first.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ddplab/core/scenario.hpp"
#include "ddplab/core/store.hpp"

namespace ddplab::gui {

// The scenario of the store's newest run, rebuilt from what the store holds: the model, training and cluster
// of the newest completed measured run of that scenario (measured_scenario), one strategy per strategy name
// among its completed measured runs (the newest run of each, in the order they first ran), and, as its
// [cluster] calibration, the newest calibration in the store that measured the run's transport.
struct StoredScenario {
  Scenario scenario;
  std::int64_t run = 0;     // the newest measured run it was rebuilt from
  std::size_t runs = 0;     // the completed measured runs of that scenario
  std::string calibration;  // "" when the store has none of that transport
};
// nullopt when the newest run's scenario has no completed measured run (nothing to rebuild it from).
// `runs` oldest first (Store::runs); `calibrations` oldest first (Store::calibrations).
std::optional<StoredScenario> newest_stored_scenario(const std::vector<RunRow>& runs,
                                                     const std::vector<CalibrationRecord>& calibrations);

}  // namespace ddplab::gui
