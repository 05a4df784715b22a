// `ddplab reference`: the registries as Markdown (docs/reference.md is this command's output).
#include <cstdio>
#include <fstream>

#include <CLI/CLI.hpp>

#include "commands.hpp"
#include "ddplab/core/error.hpp"
#include "ddplab/strategies/reference.hpp"

namespace ddplab::cli {

void add_reference(CLI::App& app) {
  auto out = std::make_shared<std::string>();
  CLI::App* cmd = app.add_subcommand(
      "reference",
      "Print every sync policy, codec, schedule, optimizer, learning-rate schedule, pipeline schedule "
      "and cluster preset with its options and defaults, as Markdown (docs/reference.md)");
  cmd->add_option("-o,--output", *out, "Write the page to this file instead of standard output");
  cmd->callback([out] {
    const std::string page = reference_markdown();
    if (out->empty()) {
      std::fwrite(page.data(), 1, page.size(), stdout);
      return;
    }
    std::ofstream f(*out, std::ios::binary);
    f << page;
    if (!f) throw InputError("--output: cannot write " + *out, "--output");
  });
}

}  // namespace ddplab::cli
