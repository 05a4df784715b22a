#include "isolate.hpp"

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include <poll.h>
#include <sys/wait.h>
#include <unistd.h>

#include <fmt/format.h>

#include "ddplab/core/error.hpp"

namespace ddplab::sim {
namespace {

constexpr std::size_t kStderrTail = 4096;  // bytes of the child's stderr quoted in an error

void write_all(int fd, const std::string& data) {
  std::size_t done = 0;
  while (done < data.size()) {
    const ssize_t w = ::write(fd, data.data() + done, data.size() - done);
    if (w < 0 && errno == EINTR) continue;
    if (w <= 0) return;  // the parent is gone; nothing useful left to do
    done += static_cast<std::size_t>(w);
  }
}

[[noreturn]] void child_main(int out_fd, int err_fd, const std::function<nlohmann::json()>& fn) {
  if (err_fd >= 0) ::dup2(err_fd, STDERR_FILENO);
  std::string payload;
  int code = 0;
  try {
    payload = fn().dump();
  } catch (const InputError& e) {  // its kind and location go back with it (rethrown by run_in_child)
    const InputLocation& at = e.where();
    payload = nlohmann::json{{"error", e.what()},
                             {"exit_code", e.exit_code()},
                             {"file", at.file},
                             {"line", at.line.value_or(-1)},
                             {"column", at.column.value_or(-1)},
                             {"field", at.field}}
                  .dump();
    code = 1;
  } catch (const Error& e) {
    payload = nlohmann::json{{"error", e.what()}, {"exit_code", e.exit_code()}}.dump();
    code = 1;
  } catch (const std::exception& e) {
    payload = nlohmann::json{{"error", e.what()}}.dump();
    code = 1;
  } catch (...) {
    payload = nlohmann::json{{"error", "unknown exception"}}.dump();
    code = 1;
  }
  write_all(out_fd, payload);
  // _exit, not exit: the child must not run the parent's atexit handlers or destructors (an open Store
  // would flush into the parent's database, a test framework would report twice).
  ::_exit(code);
}

std::string describe_status(int status) {
  if (WIFSIGNALED(status)) {
    const int sig = WTERMSIG(status);
    const char* name = ::strsignal(sig);
    return fmt::format("crashed (signal {}, {})", sig, name ? name : "?");
  }
  if (WIFEXITED(status)) return fmt::format("exited with status {}", WEXITSTATUS(status));
  return "ended abnormally";
}

// What a child wrote to its result pipe, and the tail of its stderr (without keep_stderr).
struct ChildOutput {
  std::string result, errors;
};

// Reads both pipes together until the child closes them, so a chatty child cannot block on a full stderr pipe.
// `err_fd` < 0: none. Closes both.
ChildOutput drain(int out_fd, int err_fd) {
  ChildOutput got;
  std::vector<pollfd> fds{{out_fd, POLLIN, 0}};
  if (err_fd >= 0) fds.push_back({err_fd, POLLIN, 0});
  char buf[65536];
  while (!fds.empty()) {
    if (::poll(fds.data(), fds.size(), -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (std::size_t i = 0; i < fds.size();) {
      if (fds[i].revents == 0) {
        ++i;
        continue;
      }
      const ssize_t r = ::read(fds[i].fd, buf, sizeof buf);
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0) {
        ::close(fds[i].fd);
        fds.erase(fds.begin() + static_cast<std::ptrdiff_t>(i));
        continue;
      }
      if (fds[i].fd == out_fd) {
        got.result.append(buf, static_cast<std::size_t>(r));
      } else {
        got.errors.append(buf, static_cast<std::size_t>(r));
        if (got.errors.size() > 2 * kStderrTail) got.errors.erase(0, got.errors.size() - kStderrTail);
      }
      fds[i].revents = 0;
      ++i;
    }
  }
  return got;
}

// The child's result, or its error rethrown as the kind it was there; a child that was killed or said nothing
// readable is a RunFault naming its status and the tail of its stderr.
nlohmann::json child_outcome(const std::string& what, int status, ChildOutput got) {
  std::string& errors = got.errors;
  if (errors.size() > kStderrTail) errors.erase(0, errors.size() - kStderrTail);
  const std::string tail = errors.empty() ? "" : fmt::format("; its stderr ended with:\n{}", errors);
  nlohmann::json j = nlohmann::json::parse(got.result, nullptr, /*allow_exceptions=*/false);
  if (WIFEXITED(status) && j.is_object() && j.contains("error")) {
    const std::string message = fmt::format("simulation of {} failed: {}{}", what, j["error"].get<std::string>(), tail);
    const int kind = j.value("exit_code", InternalError::kExitCode);
    if (kind == InputError::kExitCode) {
      InputLocation at{j.value("file", ""), std::nullopt, std::nullopt, j.value("field", "")};
      if (const int line = j.value("line", -1); line >= 0) at.line = line;
      if (const int column = j.value("column", -1); column >= 0) at.column = column;
      throw InputError(message, at);
    }
    if (kind == RunFault::kExitCode) throw RunFault(message);
    throw InternalError(message);
  }
  // Killed (out of memory, a signal) or gone without a word: the simulation failed to run.
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
    throw RunFault(fmt::format("simulation of {} {}{}", what, describe_status(status), tail));
  if (j.is_discarded() || !j.is_object())
    throw RunFault(fmt::format("simulation of {} returned no readable result{}", what, tail));
  return j;
}

}  // namespace

nlohmann::json run_in_child(const std::string& what, const std::function<nlohmann::json()>& fn, bool keep_stderr) {
  int out[2], err[2] = {-1, -1};
  auto fail = [&](const char* call) {
    return RunFault(fmt::format("simulation of {}: {} failed: {}", what, call, std::strerror(errno)));
  };
  if (::pipe(out) != 0) throw fail("pipe");
  if (!keep_stderr && ::pipe(err) != 0) {
    ::close(out[0]);
    ::close(out[1]);
    throw fail("pipe");
  }
  std::fflush(nullptr);  // nothing buffered may be written twice
  const pid_t pid = ::fork();
  if (pid < 0) {
    for (int fd : {out[0], out[1], err[0], err[1]})
      if (fd >= 0) ::close(fd);
    throw fail("fork");
  }
  if (pid == 0) {
    ::close(out[0]);
    if (err[0] >= 0) ::close(err[0]);
    child_main(out[1], err[1], fn);
  }
  ::close(out[1]);
  if (err[1] >= 0) ::close(err[1]);
  ChildOutput got = drain(out[0], err[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return child_outcome(what, status, std::move(got));
}

nlohmann::json result_to_json(const SimStepResult& r) {
  nlohmann::json ranks = nlohmann::json::array();
  for (const auto& t : r.ranks) {
    nlohmann::json trace = nlohmann::json::array();
    for (const auto& op : t.trace) trace.push_back({op.stream, op.name, op.start_s, op.end_s, op.bytes});
    ranks.push_back({t.compute_s, t.comm_s, t.exposed_comm_s, t.optimizer_s, t.step_s, std::move(trace), t.start_s});
  }
  nlohmann::json between = nlohmann::json::array();
  for (const auto& [pair, bytes] : r.bytes_between) between.push_back({pair.first, pair.second, bytes});
  return {{"world_size", r.world_size},
          {"step", r.step},
          {"step_s", r.step_s},
          {"compute_s", r.compute_s},
          {"comm_s", r.comm_s},
          {"exposed_comm_s", r.exposed_comm_s},
          {"optimizer_s", r.optimizer_s},
          {"bytes_sent", r.bytes_sent},
          {"bytes_between", between},
          {"wall_s", r.wall_s},
          {"comms", r.comms},
          {"ranks", ranks},
          {"schedule", r.schedule}};
}

SimStepResult result_from_json(const nlohmann::json& j) {
  SimStepResult r;
  r.world_size = j.at("world_size").get<int>();
  r.step = j.at("step").get<std::int64_t>();
  r.step_s = j.at("step_s").get<double>();
  r.compute_s = j.at("compute_s").get<double>();
  r.comm_s = j.at("comm_s").get<double>();
  r.exposed_comm_s = j.at("exposed_comm_s").get<double>();
  r.optimizer_s = j.at("optimizer_s").get<double>();
  r.bytes_sent = j.at("bytes_sent").get<std::vector<std::uint64_t>>();
  for (const auto& e : j.at("bytes_between"))
    r.bytes_between[{e.at(0).get<int>(), e.at(1).get<int>()}] = e.at(2).get<std::uint64_t>();
  r.wall_s = j.at("wall_s").get<double>();
  r.comms = j.at("comms").get<std::uint64_t>();
  for (const auto& t : j.at("ranks")) {
    SimRankTimes& times = r.ranks.emplace_back();
    times.compute_s = t.at(0).get<double>();
    times.comm_s = t.at(1).get<double>();
    times.exposed_comm_s = t.at(2).get<double>();
    times.optimizer_s = t.at(3).get<double>();
    times.step_s = t.at(4).get<double>();
    times.start_s = t.at(6).get<double>();
    for (const auto& op : t.at(5))
      times.trace.push_back({op.at(0).get<std::string>(), op.at(1).get<std::string>(), op.at(2).get<double>(),
                             op.at(3).get<double>(), op.at(4).get<std::uint64_t>()});
  }
  r.schedule = j.at("schedule").get<std::string>();
  return r;
}

}  // namespace ddplab::sim
