// `ddplab demo`: measure the default scenario on 4 CPU ranks, extrapolate it to 1024, summarise.
#include <chrono>
#include <cstdio>
#include <filesystem>

#include <CLI/CLI.hpp>

#include "commands.hpp"
#include "ddplab/core/error.hpp"
#include "ddplab/core/report.hpp"
#include "ddplab/core/store.hpp"
#include "ddplab/simulator/compute_source.hpp"
#include "ddplab/runtime/launch.hpp"

namespace ddplab::cli {
namespace fs = std::filesystem;

namespace {

std::string find_default_scenario() {
  for (const fs::path& p : {fs::path("scenarios/default.toml"), fs::path(DDPLAB_SOURCE_DIR) / "scenarios/default.toml"})
    if (fs::exists(p)) return p.string();
  throw InputError("cannot find scenarios/default.toml (run from the ddplab folder, or pass --scenario)");
}

std::string gui_command(const std::string& db) {
  const fs::path gui = fs::path(self_executable()).parent_path().parent_path() / "gui" / "ddplab-gui";
  if (!fs::exists(gui)) return "ddplab-gui " + db;
  const fs::path rel = fs::relative(gui);
  // A path that climbs out of the current folder reads worse than the absolute one.
  const bool climbs = !rel.empty() && *rel.begin() == "..";
  return (climbs || rel.empty() ? gui.lexically_normal() : rel).string() + " " + db;
}

}  // namespace

void add_demo(CLI::App& app) {
  struct Args {
    std::string scenario, db = kDefaultDb;
  };
  auto a = std::make_shared<Args>();
  auto* cmd =
      app.add_subcommand("demo", "Run the default scenario on 4 ranks, simulate 2..1024 ranks, print a summary");
  cmd->add_option("--scenario", a->scenario, "Scenario (default: scenarios/default.toml)");
  cmd->add_option("--db", a->db, "Results store (SQLite)")->capture_default_str();
  cmd->callback([a] {
    const auto t0 = std::chrono::steady_clock::now();
    const std::string scenario = a->scenario.empty() ? find_default_scenario() : a->scenario;
    const std::int64_t before = last_run_id(a->db);
    std::printf("== 1/3 measure: %s on real data over MPI\n", scenario.c_str());
    std::fflush(stdout);
    RunRequest run;
    run.scenario = scenario;
    run.db = a->db;
    if (const int rc = run_scenario(run); rc != 0) {
      g_exit_code = rc;
      return;
    }
    std::printf("\n== 2/3 simulate: the same step on larger clusters (SimGrid)\n");
    std::fflush(stdout);
    SimulateRequest sim;
    sim.scenario = scenario;
    sim.db = a->db;
    // The demo extrapolates the run it just made even on a machine with fewer cores than ranks; each table
    // names the run and its ranks per core, and the note says what that does to compute.
    sim.allow_oversubscribed = true;
    for (const RunRow& r : Store(a->db).runs())
      if (const std::string over = oversubscription(r.info.host_info); r.id > before && !over.empty()) {
        std::printf(
            "note: run #%lld had %s, so its compute is inflated, and the simulated steps with it; set "
            "[cluster].compute_s in the scenario, or pass `ddplab simulate --compute TIME`, to correct it\n",
            static_cast<long long>(r.id), over.c_str());
        break;
      }
    g_exit_code = simulate_scenario(sim);

    std::printf("\n== 3/3 summary: runs written by this demo\n");
    Store store(a->db);
    std::vector<RunSummary> mine;
    for (auto& s : store.summaries())
      if (s.run.id > before) mine.push_back(std::move(s));
    std::fputs(report_table(mine).c_str(), stdout);
    const double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    std::printf("\nDone in %.0f s. Results: %s\n", took, a->db.c_str());
    std::printf("Compare them:   ddplab report --db %s\n", a->db.c_str());
    std::printf("Look at them:   %s   (add --screenshot out.png without a display)\n", gui_command(a->db).c_str());
  });
}

}  // namespace ddplab::cli
