// Running ip / tc for the test bed: fork/exec with an argument vector (never a shell), capturing stdout and
// stderr, so that errors can quote the exact command line, its exit status and what it printed.
#pragma once
#include <stdexcept>
#include <string>
#include <vector>

namespace ddplab::cli::testbed {

struct CommandResult {
  int status = 0;  // exit status, or 128 + signal
  std::string out, err;
};

struct CommandError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// Runs argv[0] (looked up in PATH) and waits. Throws CommandError only when it cannot be started.
CommandResult run_command(const std::vector<std::string>& argv);

// Runs argv and throws CommandError naming the command line, exit status and stderr unless it exits 0.
std::string check_command(const std::vector<std::string>& argv);

// "`ip link add ...` failed (exit 2): <stderr>" for messages.
std::string describe_failure(const std::vector<std::string>& argv, const CommandResult& r);

}  // namespace ddplab::cli::testbed
