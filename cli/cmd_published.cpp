// `ddplab bench published`: the GPU presets' predictions against public measurements (published.hpp).
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <memory>
#include <string>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "commands.hpp"
#include "ddplab/core/stats.hpp"
#include "ddplab/core/units.hpp"
#include "ddplab/simulator/published.hpp"

namespace ddplab::cli {
namespace {

struct PublishedArgs {
  std::string points;
  std::string network_model = "auto";
};

std::string default_points() {
  namespace fs = std::filesystem;
  for (const fs::path& p :
       {fs::path("bench/published/points.toml"), fs::path(DDPLAB_SOURCE_DIR) / "bench/published/points.toml"})
    if (fs::exists(p)) return p.string();
  return "bench/published/points.toml";
}

// What a point is of, for its row and the summary: the layout, the model or the message size.
std::string point_size(const PublishedPoint& p) {
  if (p.kind == "layout") return fmt::format("tp{} pp{}", p.tp, p.pp);
  return p.kind == "efficiency" ? p.model : format_bytes(static_cast<double>(p.bytes));
}

int bench_published(const PublishedArgs& a) {
  const std::string path = a.points.empty() ? default_points() : a.points;
  const auto points = load_published_points(path);
  SimOptions opt;
  opt.network_model = a.network_model;
  std::printf("# %s: %zu published points, each simulated on its preset (network model %s, NCCL's own allreduce)\n",
              path.c_str(), points.size(), a.network_model == "auto" ? "the preset's" : a.network_model.c_str());
  std::printf(
      "# error = (predicted - published) / published; busbw in GB/s, time in us, efficiency as a fraction, layout "
      "in TFLOP/s per GPU (the model's FLOPs and the recomputed forward, as the sources count them)\n");
  std::printf("%-4s  %-34s  %-8s  %5s  %9s  %-10s  %9s  %9s  %7s  %s\n", "id", "case", "preset", "world", "size",
              "kind", "published", "predicted", "error", "replayed");
  std::fflush(stdout);
  const auto results = compare_published(points, opt, [](const PublishedResult& r) {
    const PublishedPoint& p = r.point;
    const std::string size = point_size(p);
    std::printf("%-4s  %-34s  %-8s  %5d  %9s  %-10s  %9.3g  %9.3g  %+6.1f%%  %s\n", p.id.c_str(), p.case_name.c_str(),
                p.preset.c_str(), p.world, size.c_str(), p.kind.c_str(), p.published, r.predicted, r.error_pct,
                r.detail.c_str());
    std::fflush(stdout);
  });
  std::vector<double> abs_errors;
  const PublishedResult* worst = nullptr;
  for (const auto& r : results) {
    abs_errors.push_back(std::fabs(r.error_pct));
    if (!worst || std::fabs(r.error_pct) > std::fabs(worst->error_pct)) worst = &r;
  }
  std::printf("# %zu points: median |error| %.1f%%, max |error| %.1f%% (%s, %s)\n", results.size(), median(abs_errors),
              std::fabs(worst->error_pct), worst->point.case_name.c_str(), point_size(worst->point).c_str());
  return 0;
}

}  // namespace

void add_bench_published(CLI::App& bench) {
  auto a = std::make_shared<PublishedArgs>();
  auto* cmd = bench.add_subcommand(
      "published",
      "Simulate the public measurements in bench/published/points.toml on their presets: published, predicted, error");
  cmd->add_option("--points", a->points, "Points file (default: bench/published/points.toml of the source tree)");
  cmd->add_option("--network-model", a->network_model, kNetworkModelHelp)
      ->check(CLI::IsMember({"auto", "LV08", "CM02"}))
      ->capture_default_str();
  cmd->callback([a] { g_exit_code = bench_published(*a); });
}

}  // namespace ddplab::cli
