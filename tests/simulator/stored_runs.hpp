// Runs stored as `ddplab run` stores them, for tests of what reads the store back (compute sources,
// statistical efficiency, goodput).
#pragma once
#include <cstdint>
#include <string>

#include <nlohmann/json.hpp>

#include "ddplab/core/scenario.hpp"
#include "ddplab/core/store.hpp"

namespace ddplab::test {

// The config JSON the trainer stores with a run (what measured_scenario reads): the scenario, the strategy
// as it ran, and the world size.
inline std::string run_config(const Scenario& sc, const StrategyConfig& st, int world) {
  nlohmann::json cfg = sc.to_json();
  cfg["strategy"] = st.to_json();
  cfg["world_size"] = world;
  return cfg.dump();
}

// An evaluation after `step` steps with this test accuracy.
inline Evaluation eval(std::int64_t step, double acc) {
  Evaluation e;
  e.step = step;
  e.test_accuracy = acc;
  return e;
}

}  // namespace ddplab::test
