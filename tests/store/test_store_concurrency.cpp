// The store under load: processes that open a new file at once, write runs side by side and read while others
// write lose no row and see no error; a writer that finds the file locked waits for it rather than failing.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "ddplab/core/store.hpp"
#include "store_test_util.hpp"

using namespace ddplab;
using ddplab::test::RawDb;
using ddplab::test::sample_info;
using ddplab::test::TempDir;

namespace {

constexpr int kRunsPerWriter = 3, kSteps = 200, kRanks = 4, kBatch = 16;

// Runs `body` in a child process; its exit status says whether it threw (1) or not (0).
pid_t spawn(const std::function<void()>& body) {
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid == 0) {
    try {
      body();
    } catch (const std::exception& e) {
      std::fprintf(stderr, "child %d: %s\n", ::getpid(), e.what());
      ::_exit(1);
    }
    ::_exit(0);
  }
  return pid;
}

int wait_exit(pid_t pid) {
  int status = 0;
  if (::waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

// A writer like a training run's rank 0: runs one after another, small batches, an evaluation per run.
void write_runs(const std::string& file, const std::string& strategy) {
  Store store(file, kBatch);
  for (int r = 0; r < kRunsPerWriter; ++r) {
    const std::int64_t id = store.begin_run(sample_info(strategy));
    for (int step = 0; step < kSteps; ++step)
      for (int rank = 0; rank < kRanks; ++rank)
        store.add_step(id, {step, rank, 0.01, 0.002, 0.001, 0.001, 0.015, 32, 4096, 1.0});
    store.add_evaluation(id, {kSteps, 1.0, 0.5, 0.8, 0.8, 0.8, 0, {}});
    store.finish_run(id, RunStatus::Completed);
  }
}

}  // namespace

// Three writers (two "runs" and a "simulate") start on a file that does not exist yet, while a viewer polls
// it as the GUI does: every process succeeds and every row is there.
TEST(StoreConcurrency, WritersAndAReaderAtOnceLoseNoRow) {
  TempDir dir;
  const std::string file = dir.file("shared.db");
  std::vector<pid_t> writers;
  for (const char* strategy : {"ring", "tree", "simulated"})
    writers.push_back(spawn([&, strategy] { write_runs(file, strategy); }));
  const pid_t reader = spawn([&] {
    int polls = 0;
    for (auto until = std::chrono::steady_clock::now() + std::chrono::seconds(60);
         std::chrono::steady_clock::now() < until;) {
      if (::access(file.c_str(), F_OK) == 0) {
        try {
          const Store viewer(file, Store::Access::ReadOnly);
          for (const RunSummary& s : viewer.summaries())
            if (s.run.status == RunStatus::Completed && s.steps + s.skipped != kSteps)
              throw std::runtime_error("a completed run read with " + std::to_string(s.steps + s.skipped) + " steps");
          ++polls;
          if (viewer.runs().size() == 3u * kRunsPerWriter && polls > 3) return;
        } catch (const StoreError& e) {
          // Only a file still being created (no schema yet) may be refused.
          if (std::string(e.what()).find("not a ddplab results store") == std::string::npos) throw;
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    }
    throw std::runtime_error("the writers did not finish within 60 s");
  });
  for (pid_t w : writers) EXPECT_EQ(wait_exit(w), 0);
  EXPECT_EQ(wait_exit(reader), 0);

  RawDb raw(file);
  EXPECT_EQ(raw.integer("SELECT COUNT(*) FROM runs WHERE status = 'completed'"), 3 * kRunsPerWriter);
  EXPECT_EQ(raw.integer("SELECT COUNT(*) FROM steps"), 3LL * kRunsPerWriter * kSteps * kRanks);
  EXPECT_EQ(raw.integer("SELECT COUNT(*) FROM evaluations"), 3 * kRunsPerWriter);
  EXPECT_EQ(raw.integer("SELECT COUNT(*) FROM step_totals"), 3LL * kRunsPerWriter * kSteps);
  EXPECT_EQ(raw.integer("SELECT COUNT(*) FROM schema_version"), 1);
  EXPECT_EQ(raw.text("PRAGMA integrity_check"), "ok");
}

// Another process holds the write lock for a second (a long transaction): opening the store and writing to it
// wait for the lock (busy timeout) instead of failing with "database is locked".
TEST(StoreConcurrency, OpeningAndWritingWaitForAWriteLockHeldElsewhere) {
  TempDir dir;
  const std::string file = dir.file("locked.db");
  { Store create(file); }
  int fds[2];
  ASSERT_EQ(::pipe(fds), 0);
  const pid_t holder = spawn([&] {
    ::close(fds[0]);
    RawDb raw(file);
    raw.exec("BEGIN IMMEDIATE; INSERT INTO schema_version(version) SELECT version FROM schema_version WHERE 0");
    if (::write(fds[1], "L", 1) != 1) throw std::runtime_error("pipe");
    std::this_thread::sleep_for(std::chrono::milliseconds(1000));
    raw.exec("COMMIT");
  });
  ::close(fds[1]);
  char c = 0;
  ASSERT_EQ(::read(fds[0], &c, 1), 1);  // the lock is held now
  ::close(fds[0]);
  const auto start = std::chrono::steady_clock::now();
  std::int64_t id = 0;
  EXPECT_NO_THROW({
    Store store(file);
    id = store.begin_run(sample_info());
    store.finish_run(id, RunStatus::Completed);
  });
  const double waited = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_EQ(wait_exit(holder), 0);
  EXPECT_GT(waited, 0.5);  // it did wait for the holder
  EXPECT_EQ(RawDb(file).integer("SELECT COUNT(*) FROM runs"), 1);
}
