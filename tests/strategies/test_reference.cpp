// docs/reference.md is what `ddplab reference` prints, and that names every registry entry.
#include <fstream>
#include <sstream>

#include <gtest/gtest.h>

#include "ddplab/core/scenario.hpp"
#include "ddplab/strategies/codec.hpp"
#include "ddplab/strategies/optimizer.hpp"
#include "ddplab/strategies/pipeline.hpp"
#include "ddplab/strategies/reference.hpp"
#include "ddplab/strategies/schedule.hpp"
#include "ddplab/strategies/strategy.hpp"

namespace ddplab {
namespace {

TEST(Reference, CommittedPageIsWhatTheCommandPrints) {
  const std::string path = std::string(DDPLAB_SOURCE_DIR) + "/docs/reference.md";
  std::ifstream f(path, std::ios::binary);
  ASSERT_TRUE(f) << "cannot read " << path;
  std::stringstream committed;
  committed << f.rdbuf();
  EXPECT_TRUE(committed.str() == reference_markdown())
      << path << " differs from what the registries give: regenerate it with "
      << "`build/release/cli/ddplab reference -o docs/reference.md` and commit it";
}

// Each entry has its heading (or its table row), and each option its row.
TEST(Reference, NamesEveryEntryAndOption) {
  const std::string page = reference_markdown();
  auto has = [&](const std::string& text) { return page.find(text) != std::string::npos; };
  auto options = [&](const std::vector<OptionSpec>& specs, const std::string& entry) {
    for (const OptionSpec& s : specs)
      EXPECT_TRUE(has("| `" + s.name + "` | " + s.requirement() + " | `" + s.fallback + "` |"))
          << entry << "." << s.name;
  };
  auto entries = [&](const auto& registry) {
    for (const auto& e : registry) {
      EXPECT_TRUE(has("### `" + e.name + "`\n")) << e.name;
      options(e.options, e.name);
    }
  };
  entries(policies());
  entries(codecs());
  entries(optimizers());
  entries(lr_schedules());
  for (const ScheduleInfo& s : schedules())
    EXPECT_TRUE(has("| `" + s.name + "` | " + to_string(s.collective) + " |")) << s.name;
  for (const PipelineInfo& p : pipeline_schedules()) EXPECT_TRUE(has("| `" + p.name + "` |")) << p.name;
  for (std::string_view preset : kClusterPresets) EXPECT_TRUE(has("| `" + std::string(preset) + "` |")) << preset;
  for (const char* anchor : {"## Sync policies\n", "## Codecs\n", "## Schedules\n", "## Optimizers\n",
                             "## Learning-rate schedules\n", "## Pipeline schedules\n", "## Cluster presets\n"})
    EXPECT_TRUE(has(anchor)) << anchor;
}

}  // namespace
}  // namespace ddplab
