// Internal: runs one simulation in a forked child process and brings its result back as JSON.
//
// SimGrid 3.32 allows one engine per process: a second Engine keeps the first one's clock and aborts on
// any model change ("Cannot change the model after the initialization"; checked here). A sweep over
// world sizes therefore forks one child per simulation. The parent never touches SimGrid.
#pragma once
#include <functional>
#include <string>

#include <nlohmann/json.hpp>

#include "ddplab/simulator/simulator.hpp"

namespace ddplab::sim {

// Forks, runs `fn` in the child, returns its JSON. `what` names the simulation in errors ("world size
// 64"). Throws the child's error, of its kind (error.hpp), when it throws, and RunFault when it crashes
// (signal) or exits without a result; unless `keep_stderr`, the child's stderr is captured and its tail is
// quoted in the error.
nlohmann::json run_in_child(const std::string& what, const std::function<nlohmann::json()>& fn, bool keep_stderr);

nlohmann::json result_to_json(const SimStepResult& r);
SimStepResult result_from_json(const nlohmann::json& j);

}  // namespace ddplab::sim
