#include "ddplab/testbed/command.hpp"

#include <fcntl.h>
#include <poll.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "ddplab/runtime/launch.hpp"

extern char** environ;

namespace ddplab::testbed {

namespace {

struct Pipe {
  int fd[2] = {-1, -1};
  Pipe() {
    if (pipe2(fd, O_CLOEXEC) != 0) throw CommandError(std::string("pipe: ") + std::strerror(errno));
  }
  ~Pipe() {
    for (int f : fd)
      if (f >= 0) close(f);
  }
  void close_end(int i) {
    if (fd[i] >= 0) close(fd[i]);
    fd[i] = -1;
  }
};

std::string trimmed(std::string s) {
  while (!s.empty() && (s.back() == '\n' || s.back() == ' ')) s.pop_back();
  return s;
}

}  // namespace

CommandResult run_command(const std::vector<std::string>& args) {
  if (args.empty()) throw CommandError("run_command: empty command");
  std::vector<char*> argv;
  for (const auto& a : args) argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);

  Pipe out, err;
  posix_spawn_file_actions_t fa;
  posix_spawn_file_actions_init(&fa);
  posix_spawn_file_actions_addopen(&fa, STDIN_FILENO, "/dev/null", O_RDONLY, 0);
  posix_spawn_file_actions_adddup2(&fa, out.fd[1], STDOUT_FILENO);
  posix_spawn_file_actions_adddup2(&fa, err.fd[1], STDERR_FILENO);
  pid_t pid = 0;
  const int rc = posix_spawnp(&pid, argv[0], &fa, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&fa);
  if (rc != 0) {
    std::string msg = "cannot start `";
    msg.append(shell_join(args)).append("`: ").append(std::strerror(rc));
    if (rc == ENOENT) msg.append(" (install iproute2)");
    throw CommandError(msg);
  }
  out.close_end(1);
  err.close_end(1);

  // Drain both pipes together so that neither can fill up and block the child.
  CommandResult r;
  pollfd fds[2] = {{out.fd[0], POLLIN, 0}, {err.fd[0], POLLIN, 0}};
  std::string* sinks[2] = {&r.out, &r.err};
  int open_fds = 2;
  char buf[4096];
  while (open_fds > 0) {
    if (poll(fds, 2, -1) < 0) {
      if (errno == EINTR) continue;
      break;
    }
    for (int i = 0; i < 2; ++i) {
      if (fds[i].fd < 0 || fds[i].revents == 0) continue;
      const ssize_t n = read(fds[i].fd, buf, sizeof buf);
      if (n > 0) {
        sinks[i]->append(buf, static_cast<std::size_t>(n));
      } else if (n == 0 || errno != EINTR) {
        fds[i].fd = -1;
        --open_fds;
      }
    }
  }
  int status = 0;
  while (waitpid(pid, &status, 0) < 0)
    if (errno != EINTR) throw CommandError(std::string("waitpid: ") + std::strerror(errno));
  r.status = WIFEXITED(status) ? WEXITSTATUS(status) : WIFSIGNALED(status) ? 128 + WTERMSIG(status) : 1;
  return r;
}

std::string describe_failure(const std::vector<std::string>& argv, const CommandResult& r) {
  std::string msg = "`";
  msg.append(shell_join(argv)).append("` failed (exit ").append(std::to_string(r.status)).append(")");
  const std::string err = trimmed(r.err.empty() ? r.out : r.err);
  if (!err.empty()) msg.append(": ").append(err);
  return msg;
}

std::string check_command(const std::vector<std::string>& argv) {
  CommandResult r = run_command(argv);
  if (r.status != 0) throw CommandError(describe_failure(argv, r));
  return r.out;
}

}  // namespace ddplab::testbed
