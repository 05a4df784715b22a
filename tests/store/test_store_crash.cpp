// Crash safety: a writer killed with SIGKILL in the middle of writing leaves a sound file holding
// exactly the batches it committed.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>

#include "ddplab/core/store.hpp"
#include "store_test_util.hpp"

using namespace ddplab;
using ddplab::test::RawDb;
using ddplab::test::sample_info;
using ddplab::test::TempDir;

namespace {

constexpr int kCrashBatch = 50;  // rows per transaction
constexpr int kKillAfter = 8;    // committed batches the parent waits for before SIGKILL
constexpr int kCrashRanks = 2;

// The child: begins a run, reports its id, then writes steps forever, sending one byte on the pipe
// after each committed batch. It never returns; any error exits with a non-zero status.
[[noreturn]] void writer_child(const std::string& file, int out_fd) {
  try {
    Store store(file, kCrashBatch);
    std::int64_t id = store.begin_run(sample_info());
    if (write(out_fd, &id, sizeof id) != static_cast<ssize_t>(sizeof id)) _exit(3);
    std::int64_t rows = 0;
    for (std::int64_t step = 0;; ++step)
      for (int rank = 0; rank < kCrashRanks; ++rank) {
        StepMetrics m;
        m.step = step;
        m.rank = rank;
        m.step_s = 0.01;
        m.samples = 32;
        m.bytes_sent = 4096;
        m.loss = 1.0 / static_cast<double>(step + 1);
        store.add_step(id, m);  // commits by itself every kCrashBatch rows
        if (++rows % kCrashBatch == 0) {
          char c = 'b';
          if (write(out_fd, &c, 1) != 1) _exit(4);
        }
      }
  } catch (...) {
    _exit(2);
  }
}

}  // namespace

TEST(StoreCrash, SigkillMidRunKeepsCommittedBatches) {
  TempDir dir;
  const auto file = dir.file("crash.db");
  int fds[2];
  ASSERT_EQ(pipe(fds), 0);
  std::fflush(nullptr);  // no duplicated stdio buffers in the child
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    close(fds[0]);
    writer_child(file, fds[1]);
  }
  close(fds[1]);

  std::int64_t id = 0;
  bool ok = read(fds[0], &id, sizeof id) == static_cast<ssize_t>(sizeof id);
  int batches = 0;
  for (char c; ok && batches < kKillAfter; ++batches) ok = read(fds[0], &c, 1) == 1;
  // While its writer lives, the run reads as running.
  std::string status_alive;
  try {
    status_alive = to_string(Store(file, Store::Access::ReadOnly).run(id).value().status);
  } catch (const std::exception& e) {
    status_alive = e.what();
  }
  // The child is now writing its next batches: kill it without warning.
  kill(pid, SIGKILL);
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  close(fds[0]);
  ASSERT_TRUE(ok) << "the writer stopped early (exit status " << WEXITSTATUS(status) << ")";
  ASSERT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGKILL);
  EXPECT_EQ(status_alive, "running");

  {
    RawDb raw(file);
    EXPECT_EQ(raw.text("PRAGMA integrity_check"), "ok");
  }
  Store store(file);
  auto run = store.run(id);
  ASSERT_TRUE(run);
  EXPECT_EQ(run->status, RunStatus::Abandoned);  // stored running, by a writer that is gone
  EXPECT_EQ(RawDb(file).text("SELECT status FROM runs WHERE id = " + std::to_string(id)), "running");
  EXPECT_TRUE(run->ended_at.empty());

  // At least every batch it reported, and only whole batches: rows 0..n-1 in write order.
  auto steps = store.steps(id);
  EXPECT_GE(steps.size(), static_cast<std::size_t>(kKillAfter * kCrashBatch));
  EXPECT_EQ(steps.size() % kCrashBatch, 0u) << "a partial batch survived";
  for (std::size_t i = 0; i < steps.size(); ++i) {
    ASSERT_EQ(steps[i].step, static_cast<std::int64_t>(i / kCrashRanks)) << i;
    ASSERT_EQ(steps[i].rank, static_cast<int>(i % kCrashRanks)) << i;
    ASSERT_DOUBLE_EQ(steps[i].loss, 1.0 / static_cast<double>(steps[i].step + 1));
  }

  // The store stays writable: the run can be closed as failed and summarised.
  store.finish_run(id, RunStatus::Failed);
  auto s = store.summary(id);
  EXPECT_EQ(s.run.status, RunStatus::Failed);
  EXPECT_EQ(s.steps, static_cast<std::int64_t>(steps.size() / kCrashRanks));
}

// The same, many times over, with the kill landing at different points of a transaction.
TEST(StoreCrash, RepeatedKillsNeverCorrupt) {
  TempDir dir;
  const auto file = dir.file("repeat.db");
  for (int round = 0; round < 5; ++round) {
    int fds[2];
    ASSERT_EQ(pipe(fds), 0);
    std::fflush(nullptr);
    pid_t pid = fork();
    ASSERT_GE(pid, 0);
    if (pid == 0) {
      close(fds[0]);
      writer_child(file, fds[1]);
    }
    close(fds[1]);
    std::int64_t id = 0;
    bool ok = read(fds[0], &id, sizeof id) == static_cast<ssize_t>(sizeof id);
    for (int b = 0; ok && b < 1 + round; ++b) {
      char c;
      ok = read(fds[0], &c, 1) == 1;
    }
    if (round % 2) usleep(200 * round);  // vary where in the next batch the kill lands
    kill(pid, SIGKILL);
    int status = 0;
    ASSERT_EQ(waitpid(pid, &status, 0), pid);
    close(fds[0]);
    ASSERT_TRUE(ok) << "round " << round;

    RawDb raw(file);
    ASSERT_EQ(raw.text("PRAGMA integrity_check"), "ok") << "round " << round;
    auto n = raw.integer("SELECT COUNT(*) FROM steps WHERE run_id = " + std::to_string(id));
    EXPECT_GE(n, (1 + round) * kCrashBatch) << "round " << round;
    EXPECT_EQ(n % kCrashBatch, 0) << "round " << round;
  }
  Store store(file);
  EXPECT_EQ(store.runs().size(), 5u);
}
