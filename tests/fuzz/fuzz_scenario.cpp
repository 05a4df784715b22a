// The scenario reader as `ddplab run` uses it: TOML parsing, every section's checks, the strategies'
// registries (validate_strategies), [parallel] at 4 ranks (layout.hpp), then each strategy built on a 4-rank world
// (on each pipeline stage when pp > 1: stages.hpp) and its first plans.
// Documented outcomes: ScenarioError naming the file; a world-dependent refusal from Strategy
// (ddplab::InputError), which `ddplab run` reports with the world it was given.
#include <algorithm>
#include <string>

#include "ddplab/core/error.hpp"
#include "ddplab/strategies/layout.hpp"
#include "ddplab/strategies/model_library.hpp"
#include "ddplab/strategies/stages.hpp"
#include "ddplab/strategies/strategy.hpp"
#include "fuzz_check.hpp"

namespace {

// A table named by path would read an arbitrary file (/dev/zero), so only built-in tables are built.
bool buildable(const ddplab::ModelConfig& m) {
  return m.type != ddplab::ModelType::Table ||
         std::find(ddplab::kBuiltinModelTables.begin(), ddplab::kBuiltinModelTables.end(), m.table) !=
             ddplab::kBuiltinModelTables.end();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string path = "fuzz.toml";
  const std::string text(reinterpret_cast<const char*>(data), size);
  ddplab::fuzz::expect_clear_error<ddplab::ScenarioError>(path, [&] {
    const ddplab::Scenario sc = ddplab::parse_scenario(text, path);
    ddplab::validate_strategies(sc);
    ddplab::validate_parallel(sc);
    const ddplab::ParallelLayout layout = ddplab::scenario_layout(sc, 4, "4 ranks");
    if (!buildable(sc.model)) return;
    const ddplab::ModelSpec model = ddplab::model_spec_for(sc.model);
    // One Strategy per pipeline stage, of a TP rank's share (the whole model without [parallel]), as
    // `simulate` builds them.
    for (const ddplab::StageSpec& stage : ddplab::stage_specs(sc, model, layout, 2))
      for (const auto& config : sc.strategies) {
        try {
          const ddplab::Strategy strategy(config, stage.model, stage.context);
          for (std::int64_t step = 0; step < 2; ++step) (void)strategy.plan(step);
          (void)strategy.finish_plan(2);
        } catch (const ddplab::InputError& e) {
          if (std::string_view(e.what()).empty()) ddplab::fuzz::report("a refusal without a message");
        }
      }
  });
  return 0;
}
