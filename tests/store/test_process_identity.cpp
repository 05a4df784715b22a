// A run's writer, checked for liveness from another process: alive while it runs, gone once it exits (reaped
// or a zombie), when its pid is reused, or when its host rebooted; unknown where /proc cannot tell.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

#include "ddplab/core/process_identity.hpp"

using namespace ddplab;

namespace {

// A child that exits at once; reaped by the caller when `reap`, else left a zombie until reap_later.
ProcessIdentity exited_child(bool reap, pid_t* pid_out) {
  int fds[2];
  EXPECT_EQ(::pipe(fds), 0);
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    const std::string id = ProcessIdentity::current().to_json();
    const ssize_t n = ::write(fds[1], id.data(), id.size());
    ::_exit(n == static_cast<ssize_t>(id.size()) ? 0 : 1);
  }
  ::close(fds[1]);
  std::string text;
  char buf[512];
  for (ssize_t n; (n = ::read(fds[0], buf, sizeof buf)) > 0;) text.append(buf, static_cast<std::size_t>(n));
  ::close(fds[0]);  // EOF: the child has written and is exiting
  if (reap) {
    int status = 0;
    EXPECT_EQ(::waitpid(pid, &status, 0), pid);
  } else {
    siginfo_t info{};
    EXPECT_EQ(::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT), 0);  // exited, still a zombie
  }
  *pid_out = pid;
  return ProcessIdentity::from_json(text);
}

}  // namespace

TEST(ProcessIdentity, DescribesThisProcessAndRoundTripsAsJson) {
  const ProcessIdentity me = ProcessIdentity::current();
  EXPECT_EQ(me.pid, ::getpid());
  EXPECT_GT(me.start_ticks, 0);
  EXPECT_EQ(me.boot_id.size(), 36u) << me.boot_id;  // a UUID
  EXPECT_EQ(me.pid_ns.rfind("pid:[", 0), 0u) << me.pid_ns;
  EXPECT_FALSE(me.host.empty());
  const ProcessIdentity back = ProcessIdentity::from_json(me.to_json());
  EXPECT_EQ(back.host, me.host);
  EXPECT_EQ(back.boot_id, me.boot_id);
  EXPECT_EQ(back.machine_id, me.machine_id);
  EXPECT_EQ(back.pid_ns, me.pid_ns);
  EXPECT_EQ(back.pid, me.pid);
  EXPECT_EQ(back.start_ticks, me.start_ticks);
  EXPECT_EQ(liveness(me), Liveness::Alive);
}

TEST(ProcessIdentity, AnExitedProcessIsGoneWhetherReapedOrAZombie) {
  pid_t pid = 0;
  const ProcessIdentity reaped = exited_child(true, &pid);
  ASSERT_EQ(reaped.pid, pid);
  EXPECT_EQ(liveness(reaped), Liveness::Gone);
  const ProcessIdentity zombie = exited_child(false, &pid);
  ASSERT_EQ(zombie.pid, pid);
  EXPECT_EQ(liveness(zombie), Liveness::Gone);
  int status = 0;
  EXPECT_EQ(::waitpid(pid, &status, 0), pid);
}

TEST(ProcessIdentity, AReusedPidIsNotTheSameProcess) {
  ProcessIdentity other = ProcessIdentity::current();
  other.start_ticks += 1;  // this pid, but a process started at another time
  EXPECT_EQ(liveness(other), Liveness::Gone);
}

TEST(ProcessIdentity, AnotherBootIsGoneOnThisMachineAndUnknownElsewhere) {
  ProcessIdentity p = ProcessIdentity::current();
  if (p.machine_id.empty()) GTEST_SKIP() << "no /etc/machine-id here: a reboot cannot be told from another machine";
  p.boot_id = "00000000-0000-0000-0000-000000000000";
  EXPECT_EQ(liveness(p), Liveness::Gone);  // this machine rebooted since
  p.host += "-elsewhere";
  EXPECT_EQ(liveness(p), Liveness::Gone);  // whatever its host name is now
  p = ProcessIdentity::current();
  p.boot_id = "00000000-0000-0000-0000-000000000000";
  p.machine_id = "0123456789abcdef0123456789abcdef";  // a clone with the same host name
  EXPECT_EQ(liveness(p), Liveness::Unknown);
  ProcessIdentity ns = ProcessIdentity::current();
  ns.pid_ns = "pid:[1]";  // a container's pids mean nothing in this /proc
  ns.start_ticks += 1;
  EXPECT_EQ(liveness(ns), Liveness::Unknown);
}

TEST(ProcessIdentity, NothingRecordedCannotBeChecked) {
  for (const char* text : {"", "not json", "[]", "{}", R"({"pid":"twelve","boot_id":1})"})
    EXPECT_EQ(liveness(ProcessIdentity::from_json(text)), Liveness::Unknown) << text;
}
