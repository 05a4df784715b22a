// The MPI watchdog (watchdog.hpp) on real ranks: a call held up by a late rank is reported once the timeout
// passes, naming this rank, the step, the plan op and the call, and for a point-to-point wait the rank it
// receives from; a call that completes in time reports nothing. The reports are collected here instead of
// aborting the job; the abort itself is checked end to end by train_checks.sh's hang check.
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ddplab/core/job_notes.hpp"
#include "ddplab/runtime/watchdog.hpp"
#include "mpi_test_main.hpp"

using namespace ddplab;

namespace {

struct Reports {
  std::mutex mu;
  std::vector<std::string> seen;
  WatchedCommunicator::OnTimeout sink() {
    return [this](const std::string& r) {
      std::lock_guard<std::mutex> lock(mu);
      seen.push_back(r);
    };
  }
  std::vector<std::string> take() {
    std::lock_guard<std::mutex> lock(mu);
    return seen;
  }
};

// A job folder every rank shares for as long as it lives ($DDPLAB_JOB_DIR), as the launcher gives one.
class SharedJobDir {
 public:
  SharedJobDir() {
    if (g_comm->rank() == 0) {
      std::snprintf(dir_, sizeof dir_, "%s", "/tmp/ddplab-watchdog-XXXXXX");
      if (!::mkdtemp(dir_)) dir_[0] = '\0';
    }
    g_comm->broadcast(dir_, sizeof dir_, 0);
    if (dir_[0]) ::setenv("DDPLAB_JOB_DIR", dir_, 1);
  }
  ~SharedJobDir() {
    ::unsetenv("DDPLAB_JOB_DIR");
    g_comm->barrier();
    if (g_comm->rank() == 0 && dir_[0]) std::filesystem::remove_all(dir_);
  }
  bool ok() const { return dir_[0] != '\0'; }
  std::string path() const { return dir_; }

 private:
  char dir_[256] = {};
};

void late(int rank, double seconds) {
  if (g_comm->rank() == rank) std::this_thread::sleep_for(std::chrono::duration<double>(seconds));
}

}  // namespace

TEST(Watchdog, ACollectiveHeldUpByALateRankIsReportedWithItsStepAndOp) {
  if (g_comm->size() < 2) GTEST_SKIP() << "needs a second rank to be late";
  Reports reports;
  WatchedCommunicator comm(*g_comm, 0.3, reports.sink());
  comm.set_step(7);
  comm.annotate("sync_grads #2 on native");
  float x = 1;
  late(1, 1.0);
  comm.allreduce_sum(&x, 1);
  EXPECT_EQ(x, static_cast<float>(g_comm->size()));
  const auto seen = reports.take();
  if (comm.rank() == 1) {
    EXPECT_TRUE(seen.empty()) << seen.front();  // the late rank itself waited for nobody
  } else {
    ASSERT_EQ(seen.size(), 1u);  // reported once, not once per check
    const std::string want = "rank " + std::to_string(comm.rank()) +
                             " step 7: sync_grads #2 on native: allreduce of 1 floats not complete after";
    EXPECT_EQ(seen[0].rfind(want, 0), 0u) << seen[0];
    EXPECT_NE(seen[0].find("(train.comm_timeout_s = 0.3); a rank did not arrive; aborting the job"), std::string::npos)
        << seen[0];
  }
  g_comm->barrier();
}

TEST(Watchdog, APointToPointWaitNamesTheRankItReceivesFrom) {
  if (g_comm->size() < 2) GTEST_SKIP() << "needs two ranks";
  Reports reports;
  WatchedCommunicator comm(*g_comm, 0.3, reports.sink());
  comm.set_step(3);
  // Rank 0 receives from rank 1, which sends late; the others take no part.
  int v = 0;
  if (comm.rank() == 0) {
    comm.irecv(&v, sizeof v, 1, 5);
    comm.wait_all();
    EXPECT_EQ(v, 42);
  } else if (comm.rank() == 1) {
    v = 42;
    late(1, 1.0);
    comm.isend(&v, sizeof v, 0, 5);
    comm.wait_all();
  }
  const auto seen = reports.take();
  if (comm.rank() == 0) {
    ASSERT_EQ(seen.size(), 1u);
    EXPECT_NE(seen[0].find("rank 0 step 3: point-to-point wait (schedule step 5), receiving from rank 1 not complete"),
              std::string::npos)
        << seen[0];
    EXPECT_NE(seen[0].find("rank 1 did not arrive"), std::string::npos) << seen[0];
  } else {
    EXPECT_TRUE(seen.empty());
  }
  g_comm->barrier();
}

// With a job folder, the ranks' heartbeats say who did not arrive and why: here rank 1, alive at step 7
// but in no call.
TEST(Watchdog, HeartbeatsInTheJobFolderNameTheRankThatDidNotArrive) {
  if (g_comm->size() < 2) GTEST_SKIP() << "needs a second rank to be late";
  const SharedJobDir dir;
  ASSERT_TRUE(dir.ok());
  Reports reports;
  {
    WatchedCommunicator comm(*g_comm, 0.3, reports.sink());
    comm.set_step(7);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));  // every rank has left a heartbeat
    float x = 1;
    late(1, 1.0);
    comm.allreduce_sum(&x, 1);
  }
  const auto seen = reports.take();
  if (g_comm->rank() != 1) {
    ASSERT_EQ(seen.size(), 1u);
    EXPECT_NE(seen[0].find("; did not arrive: rank 1 (at step 7, in no call); aborting the job"), std::string::npos)
        << seen[0];
    if (g_comm->size() > 2) {
      EXPECT_EQ(seen[0].find("rank 2 ("), std::string::npos) << seen[0];  // it did arrive
    }
  }
}

// The first heartbeat is left as the rank is watched, not a tick later: a rank stopped within its first
// steps is then reported as silent, not as one that never left a heartbeat.
TEST(Watchdog, ARankLeavesItsFirstHeartbeatAsItIsWatched) {
  if (g_comm->size() < 2) GTEST_SKIP() << "heartbeats are left by ranks of a job of two or more";
  const SharedJobDir dir;
  ASSERT_TRUE(dir.ok());
  Reports reports;
  WatchedCommunicator comm(*g_comm, 30, reports.sink());  // ticks every 0.2 s
  const std::string name = "heartbeat-rank-" + std::to_string(g_comm->rank());
  const auto notes = read_job_notes(dir.path(), name);
  ASSERT_FALSE(notes.empty()) << "no " << name << " right after the watchdog started";
  EXPECT_EQ(notes.front().name, name);
}

TEST(Watchdog, CallsThatCompleteInTimeReportNothing) {
  Reports reports;
  WatchedCommunicator comm(*g_comm, 5.0, reports.sink());
  for (int i = 0; i < 50; ++i) {
    double x = 1;
    comm.allreduce_sum(&x, 1);
    ASSERT_EQ(x, static_cast<double>(g_comm->size()));
  }
  comm.barrier();
  EXPECT_TRUE(reports.take().empty());
}

// The flight recorder keeps the last calls in order with their bytes, and SIGUSR1 dumps them into the job
// folder, where the launcher would find them.
TEST(Watchdog, TheFlightRecorderKeepsTheLastCallsAndDumpsThemOnSigusr1) {
  const SharedJobDir dir;
  ASSERT_TRUE(dir.ok());
  {
    Reports reports;
    WatchedCommunicator comm(*g_comm, 5.0, reports.sink());
    for (int i = 0; i < 300; ++i) {
      comm.set_step(i);
      double x = 1;
      comm.allreduce_sum(&x, 1);
    }
    comm.barrier();
    const auto calls = comm.flight();
    ASSERT_EQ(calls.size(), WatchedCommunicator::kFlightRecords);  // the oldest ones dropped
    EXPECT_EQ(calls.front().seq, 301 - static_cast<std::int64_t>(WatchedCommunicator::kFlightRecords));
    EXPECT_EQ(calls.back().seq, 300);
    EXPECT_EQ(calls.back().call, "MPI barrier");
    EXPECT_EQ(calls.front().call, "allreduce of 1 doubles");
    EXPECT_EQ(calls.front().bytes, 8);
    EXPECT_EQ(calls.front().step, calls.front().seq);
    for (const FlightRecord& c : calls) {
      EXPECT_FALSE(c.in_flight());
      EXPECT_FALSE(c.failed);
      EXPECT_EQ(c.rank, g_comm->rank());
    }
    const std::string dump = dir.path() + "/flight-rank-" + std::to_string(g_comm->rank());
    EXPECT_FALSE(std::filesystem::exists(dump));
    ::raise(SIGUSR1);
    for (int i = 0; i < 100 && !std::filesystem::exists(dump); ++i)
      std::this_thread::sleep_for(std::chrono::milliseconds(10));
    ASSERT_TRUE(std::filesystem::exists(dump)) << "no dump 1 s after SIGUSR1";
    std::ifstream in(dump);
    const std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    EXPECT_EQ(flight_from_json(text).size(), WatchedCommunicator::kFlightRecords);
  }
}

// A split of a watched communicator is watched too, and reports through the same sink.
TEST(Watchdog, ASplitIsWatchedToo) {
  if (g_comm->size() < 2) GTEST_SKIP() << "needs a second rank to be late";
  Reports reports;
  WatchedCommunicator comm(*g_comm, 0.3, reports.sink());
  const std::unique_ptr<Communicator> sub = comm.split(0);
  ASSERT_TRUE(sub);
  float x = 1;
  late(1, 1.0);
  sub->allreduce_sum(&x, 1);
  EXPECT_EQ(x, static_cast<float>(g_comm->size()));
  const auto seen = reports.take();
  if (g_comm->rank() != 1) {
    ASSERT_EQ(seen.size(), 1u);
    EXPECT_NE(seen[0].find("allreduce of 1 floats not complete after"), std::string::npos) << seen[0];
  }
  g_comm->barrier();
}
