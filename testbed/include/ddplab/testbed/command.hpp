// Running ip / tc for the test bed: fork/exec with an argument vector (never a shell), capturing stdout and
// stderr, so that errors can quote the exact command line, its exit status and what it printed.
#pragma once
#include <stdexcept>
#include <string>
#include <vector>

#include "ddplab/core/error.hpp"

namespace ddplab::testbed {

struct CommandResult {
  int status = 0;  // exit status, or 128 + signal
  std::string out, err;
};

// A command the test bed needs (ip, tc) that could not start or failed: a fault of the run (exit 1).
struct CommandError : RunFault {
  using RunFault::RunFault;
};

// Runs argv[0] (looked up in PATH) and waits. Throws CommandError only when it cannot be started.
CommandResult run_command(const std::vector<std::string>& argv);

// Runs argv and throws CommandError naming the command line, exit status and stderr unless it exits 0.
std::string check_command(const std::vector<std::string>& argv);

// "`ip link add ...` failed (exit 2): <stderr>" for messages.
std::string describe_failure(const std::vector<std::string>& argv, const CommandResult& r);

}  // namespace ddplab::testbed
