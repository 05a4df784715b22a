// The ddplab command: run, simulate, predict, report, runs, demo, bench, testbed, calibrate, validate, import.
#include <cstdio>
#include <exception>

#include <CLI/CLI.hpp>

#include "commands.hpp"
#include "launch.hpp"
#include "ddplab/core/version.hpp"

int main(int argc, char** argv) {
  if (ddplab::cli::under_mpi_launcher()) ddplab::cli::mark_rank_started();  // the launch worked (retry_unstarted)
  CLI::App app{"ddplab: measure, simulate and compare gradient-sync strategies for data-parallel training"};
  app.set_version_flag("--version", std::string("ddplab ") + ddplab::version());
  app.require_subcommand(1);
  ddplab::cli::add_run(app);
  ddplab::cli::add_simulate(app);
  ddplab::cli::add_report(app);
  ddplab::cli::add_runs(app);
  ddplab::cli::add_demo(app);
  ddplab::cli::add_bench(app);
  ddplab::cli::add_testbed(app);
  ddplab::cli::add_calibrate(app);
  ddplab::cli::add_validate(app);
  ddplab::cli::add_predict(app);
  ddplab::cli::add_import(app);
  ddplab::cli::add_reference(app);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: %s\n", e.what());
    return 2;
  }
  return ddplab::cli::g_exit_code;
}
