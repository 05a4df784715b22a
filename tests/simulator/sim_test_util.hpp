// Shared by the simulator tests: the pure alpha-beta network (for analytic checks) and a small MLP scenario.
#pragma once
#include <string>

#include "ddplab/core/scenario.hpp"
#include "ddplab/simulator/simulator.hpp"

namespace ddplab::test {

// CM02 without cross-traffic: no latency or bandwidth factors and no ack load on the reverse path, so a
// transfer takes exactly size / bandwidth + route latency (SimGrid 3.32's CM02 model).
inline SimOptions alpha_beta() {
  SimOptions o;
  o.network_model = "CM02";
  o.crosstraffic = false;
  return o;
}

// A [[strategy]] of a registered policy on a schedule, named "policy".
inline StrategyConfig strategy_config(const std::string& policy, const std::string& schedule) {
  StrategyConfig c;
  c.name = c.policy = policy;
  c.schedule = schedule;
  return c;
}

// A 784-256-128-10 MLP at batch 32: a few buckets, quick to simulate.
inline Scenario small_mlp_scenario(const std::string& name) {
  Scenario s;
  s.name = name;
  s.model.layers = {784, 256, 128, 10};
  s.train.batch_size = 32;
  return s;
}

}  // namespace ddplab::test
