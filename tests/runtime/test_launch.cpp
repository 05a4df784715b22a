// Launch retries (runtime/launch.hpp's retry_unstarted): a launch that fails before any rank started is tried again, up
// to its attempts; one in which a rank started, or that was interrupted, is not. A shell command stands in for
// mpirun, counting its attempts and marking a start the way a rank does (mark_rank_started). Also the exit code
// a launch ends with, by the kind of error that ended the job.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <algorithm>
#include <csignal>
#include <fstream>
#include <string>
#include <vector>

#include "ddplab/runtime/launch.hpp"
#include "temp_dir.hpp"

using namespace ddplab;
using ddplab::test::TempDir;

namespace {

// A "job" that records each attempt in $COUNT, then runs `then` (shell) with $n = the attempts before it.
LaunchPlan job(const std::string& then, int attempts) {
  LaunchPlan p;
  p.argv = {"/bin/sh", "-c", "n=$(cat \"$COUNT\" 2>/dev/null || echo 0); echo $((n + 1)) >\"$COUNT\"; " + then};
  p.attempts = attempts;
  return p;
}

int attempts_made(const TempDir& dir) {
  std::ifstream in(dir.file("count"));
  int n = 0;
  in >> n;
  return n;
}

struct Launch : testing::Test {
  TempDir dir;
  void SetUp() override { ::setenv("COUNT", dir.file("count").c_str(), 1); }
  void TearDown() override { ::unsetenv("COUNT"); }
};

constexpr const char* kRankStarts = "touch \"$DDPLAB_JOB_DIR/started-rank-0\"; ";

}  // namespace

TEST_F(Launch, AFailureBeforeAnyRankStartedIsTriedAgain) {
  // Fails twice without starting a rank (as Open MPI's daemons racing on their session directory), then works.
  const JobEnd end = execute(job(std::string("[ $n -ge 2 ] || exit 3; ") + kRankStarts + "exit 0", 3));
  EXPECT_EQ(end.rc, 0);
  EXPECT_EQ(attempts_made(dir), 3);
}

TEST_F(Launch, GivesUpAfterItsAttemptsWithTheLastExitCode) {
  const JobEnd end = execute(job("exit 3", 3));
  EXPECT_EQ(end.rc, 3);
  EXPECT_EQ(attempts_made(dir), 3);
}

TEST_F(Launch, AJobInWhichARankStartedIsNotRepeated) {
  const JobEnd end = execute(job(std::string(kRankStarts) + "exit 5", 3));  // a rank ran, then failed
  EXPECT_EQ(end.rc, 5);
  EXPECT_EQ(attempts_made(dir), 1);
}

TEST_F(Launch, WithoutRetriesALaunchIsTriedOnce) {
  EXPECT_EQ(execute(job("exit 3", 1)).rc, 3);
  EXPECT_EQ(attempts_made(dir), 1);
}

TEST_F(Launch, ThePlanPassesTheJobFolderToTheRanksBeforeTheExecutable) {
  LaunchPlan p = plan_launch(2, {"run", "x.toml"});
  const auto exe = std::find(p.argv.begin(), p.argv.end(), self_executable());
  ASSERT_NE(exe, p.argv.end());
  ASSERT_GE(exe - p.argv.begin(), 2);
  EXPECT_EQ(*(exe - 2), "-x");
  EXPECT_EQ(*(exe - 1), "DDPLAB_JOB_DIR");
  EXPECT_EQ(*(exe + 1), "run");
  retry_unstarted(p, 3);
  EXPECT_EQ(p.attempts, 3);
  EXPECT_EQ(std::count(p.argv.begin(), p.argv.end(), "DDPLAB_JOB_DIR"), 1);
}

TEST_F(Launch, TheRanksFailureNotesComeBackInRankOrderAndTheFolderGoes) {
  const JobEnd end =
      execute(job("echo \"$DDPLAB_JOB_DIR\" >\"$COUNT.dir\"; for r in 10 2; do printf 'rank %s failed' $r "
                  ">\"$DDPLAB_JOB_DIR/failure-rank-$r\"; done; "
                  "exit 1",
                  1));
  EXPECT_EQ(end.rc, 1);
  EXPECT_EQ(end.failures, (std::vector<std::string>{"rank 2 failed", "rank 10 failed"}));
  std::string folder;
  std::getline(std::ifstream(dir.file("count.dir")), folder);
  ASSERT_FALSE(folder.empty());
  EXPECT_FALSE(std::ifstream(folder + "/failure-rank-2").good());  // removed with the job
}

TEST_F(Launch, ARankMarksItsStartByItsRank) {
  ::setenv("DDPLAB_JOB_DIR", dir.path().c_str(), 1);
  ::setenv("OMPI_COMM_WORLD_RANK", "3", 1);
  mark_rank_started();
  ::unsetenv("DDPLAB_JOB_DIR");
  ::unsetenv("OMPI_COMM_WORLD_RANK");
  EXPECT_TRUE(std::ifstream(dir.file("started-rank-3")).good());
}

TEST(JobEnd, TheLauncherExitsWithTheKindOfErrorTheJobEndedWith) {
  auto code = [](int rc, int signal = 0) {
    JobEnd end;
    end.rc = rc;
    end.signal = signal;
    return end.exit_code();
  };
  EXPECT_EQ(code(0), 0);
  EXPECT_EQ(code(2), 2);            // a rank refused its input (error.hpp's InputError), passed on by mpirun
  EXPECT_EQ(code(70), 70);          // a rank hit a bug (InternalError)
  EXPECT_EQ(code(1), 1);            // a rank's run fault
  EXPECT_EQ(code(3), 1);            // a rank that exited (--inject-fault exit) or a watchdog's timeout
  EXPECT_EQ(code(137), 1);          // a rank, or mpirun, killed
  EXPECT_EQ(code(1, SIGINT), 130);  // the launcher interrupted: 128 + its signal
}
