// The ddplab command: run, simulate, predict, report, runs, demo, bench, testbed, calibrate, validate, import.
#include <cstdio>
#include <exception>

#include <CLI/CLI.hpp>

#include "commands.hpp"
#include "ddplab/core/error.hpp"
#include "ddplab/core/version.hpp"
#include "ddplab/runtime/launch.hpp"

int main(int argc, char** argv) {
  if (ddplab::under_mpi_launcher()) ddplab::mark_rank_started();  // the launch worked (retry_unstarted)
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
    // CLI11 prints it (help and --version are "errors" that exit 0); a refused command line is bad input.
    return app.exit(e) == 0 ? 0 : ddplab::InputError::kExitCode;
  } catch (const ddplab::InternalError& e) {
    std::fprintf(stderr, "internal error: %s\n", e.what());
    return e.exit_code();
  } catch (const ddplab::Error& e) {  // bad input (2) or a fault of the run (1)
    std::fprintf(stderr, "error: %s\n", e.what());
    return e.exit_code();
  } catch (const std::exception& e) {  // outside the hierarchy: a broken invariant
    std::fprintf(stderr, "internal error: %s\n", e.what());
    return ddplab::InternalError::kExitCode;
  }
  return ddplab::cli::g_exit_code;
}
