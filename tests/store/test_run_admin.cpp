// Managing a store's runs (`ddplab runs`): choosing by status, checked deletes that refuse before touching
// anything, and the list and show texts.
#include <gtest/gtest.h>

#include <csignal>
#include <sstream>
#include <stdexcept>

#include "ddplab/core/error.hpp"
#include "ddplab/core/flight.hpp"
#include "ddplab/core/process_identity.hpp"
#include "ddplab/core/report.hpp"
#include "ddplab/core/run_admin.hpp"
#include "ddplab/core/store.hpp"
#include "store_test_util.hpp"

using namespace ddplab;
using ddplab::test::RawDb;
using ddplab::test::sample_info;
using ddplab::test::TempDir;

namespace {

// Three finished runs (completed, failed, completed) of 3 steps x 2 ranks, and one left running.
struct Runs {
  TempDir dir;
  std::string path = dir.file("runs.db");
  Store store{path};
  std::int64_t done = 0, failed = 0, done2 = 0, running = 0;

  std::int64_t add(const std::string& strategy, std::optional<RunStatus> status) {
    const std::int64_t id = store.begin_run(sample_info(strategy));
    for (int step = 0; step < 3; ++step)
      for (int rank = 0; rank < 2; ++rank)
        store.add_step(id, {step, rank, 0.01, 0.004, 0.002, 0.001, 0.02, 32, 1000, 1.0});
    store.add_evaluation(id, {3, 1.0, 0.5, 0.7, 0.7, 0.7, 0, {}});
    if (status)
      store.finish_run(id, *status);
    else
      store.flush();
    return id;
  }
  Runs() {
    done = add("ring", RunStatus::Completed);
    failed = add("tree", RunStatus::Failed);
    done2 = add("ring", RunStatus::Completed);
    running = add("overlap", std::nullopt);
  }
  // A run left running by a writer that is gone: this process's pid with another start time, as after the
  // pid was reused.
  std::int64_t add_abandoned(const std::string& strategy) {
    ProcessIdentity gone = ProcessIdentity::current();
    gone.start_ticks += 1;
    const std::int64_t id = add(strategy, std::nullopt);
    RawDb(path).exec("UPDATE runs SET writer = '" + gone.to_json() + "' WHERE id = " + std::to_string(id));
    return id;
  }
  long long rows(const std::string& table, std::int64_t run) {
    return RawDb(path).integer("SELECT COUNT(*) FROM " + table + " WHERE run_id = " + std::to_string(run));
  }
};

std::vector<std::int64_t> ids(const std::vector<RunRow>& rows) {
  std::vector<std::int64_t> out;
  for (const RunRow& r : rows) out.push_back(r.id);
  return out;
}

}  // namespace

TEST(RunAdmin, ChoosesRunsByStatusAndNamesAnUnknownOne) {
  Runs r;
  EXPECT_EQ(ids(runs_with_status(r.store, {"completed"})), (std::vector<std::int64_t>{r.done, r.done2}));
  EXPECT_EQ(ids(runs_with_status(r.store, {"failed", "running"})), (std::vector<std::int64_t>{r.failed, r.running}));
  EXPECT_TRUE(runs_with_status(r.store, {}).empty());
  try {
    runs_with_status(r.store, {"failed", "faild"});
    FAIL() << "an unknown status was accepted";
  } catch (const ddplab::InputError& e) {
    EXPECT_NE(std::string(e.what()).find(
                  "unknown run status \"faild\" (one of: running, completed, failed, interrupted, abandoned)"),
              std::string::npos)
        << e.what();
  }
}

TEST(RunAdmin, DeletesCheckedRunsWithTheirRowsAndLeavesTheOthers) {
  Runs r;
  ASSERT_EQ(r.rows("steps", r.failed), 6);
  const std::vector<RunRow> gone = delete_runs_checked(r.store, {r.failed, r.done, r.failed});  // repeats count once
  EXPECT_EQ(ids(gone), (std::vector<std::int64_t>{r.done, r.failed}));
  EXPECT_EQ(gone[1].status, RunStatus::Failed);
  for (std::int64_t id : {r.done, r.failed}) {
    EXPECT_FALSE(r.store.run(id)) << id;
    for (const char* table : {"steps", "evaluations", "step_totals"})
      EXPECT_EQ(r.rows(table, id), 0) << table << " " << id;
  }
  EXPECT_EQ(r.rows("steps", r.done2), 6);
  EXPECT_EQ(r.rows("evaluations", r.done2), 1);
  EXPECT_EQ(r.store.summary(r.done2).steps + r.store.summary(r.done2).skipped, 3);
}

TEST(RunAdmin, RefusesMissingAndRunningRunsBeforeDeletingAnything) {
  Runs r;
  try {
    delete_runs_checked(r.store, {r.done, 999, r.running, 998});
    FAIL() << "a missing and a running run were accepted";
  } catch (const ddplab::InputError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("nothing deleted"), std::string::npos) << what;
    EXPECT_NE(what.find("no run 998, 999 in " + r.path), std::string::npos) << what;
    EXPECT_NE(what.find(std::string("run ") + std::to_string(r.running) + " still marked running"), std::string::npos)
        << what;
  }
  EXPECT_TRUE(r.store.run(r.done));  // the valid id of the same call is still there
  EXPECT_EQ(r.rows("steps", r.done), 6);
  EXPECT_EQ(r.store.runs().size(), 4u);
  EXPECT_TRUE(delete_runs_checked(r.store, {}).empty());
}

TEST(RunAdmin, ListAndShowSayWhatIsStored) {
  Runs r;
  std::istringstream table(runs_table(r.store.summaries()));
  std::vector<std::string> lines;
  for (std::string line; std::getline(table, line);) lines.push_back(line);
  ASSERT_EQ(lines.size(), 6u);  // header, rule, four runs
  for (const char* title :
       {"id", "status", "scenario", "strategy", "source", "backend", "world", "steps", "started", "ended"})
    EXPECT_NE(lines[0].find(title), std::string::npos) << title;
  EXPECT_NE(lines[3].find("failed"), std::string::npos) << lines[3];
  EXPECT_NE(lines[5].find("running"), std::string::npos) << lines[5];
  EXPECT_EQ(lines[5].substr(lines[5].size() - 1), "-");  // no end yet

  const std::string shown = run_details(r.store, r.failed);
  for (const std::string& want :
       {std::string("run ") + std::to_string(r.failed) + ": default / tree, measured on cpu, 2 ranks",
        std::string("status      failed"), std::string("stored      3 steps, 1 evaluation, no timeline"),
        std::string("final       loss 1.0000, accuracy 0.7000")})
    EXPECT_NE(shown.find(want), std::string::npos) << want << "\n" << shown;
  EXPECT_THROW(run_details(r.store, 999), StoreError);
}

// A run whose writer is gone (Runs::add_abandoned) reads as abandoned everywhere, is chosen as such, and may be
// deleted; one whose writer lives may not.
TEST(RunAdmin, ARunWhoseWriterIsGoneIsAbandonedAndMayBeDeleted) {
  Runs r;
  const std::int64_t abandoned = r.add_abandoned("local_sgd");
  EXPECT_EQ(r.store.run(r.running)->status, RunStatus::Running);  // its writer, this process, lives
  EXPECT_EQ(r.store.run(abandoned)->status, RunStatus::Abandoned);
  EXPECT_EQ(ids(runs_with_status(r.store, {"abandoned"})), (std::vector<std::int64_t>{abandoned}));
  EXPECT_EQ(ids(runs_with_status(r.store, {"running"})), (std::vector<std::int64_t>{r.running}));
  EXPECT_NE(runs_table(r.store.summaries()).find("abandoned"), std::string::npos);
  EXPECT_NE(run_details(r.store, abandoned).find("status      abandoned"), std::string::npos);
  EXPECT_EQ(r.store.summary(abandoned).steps + r.store.summary(abandoned).skipped, 3);  // from its rows
  EXPECT_THROW(delete_runs_checked(r.store, {r.running}), ddplab::InputError);
  EXPECT_EQ(ids(delete_runs_checked(r.store, {abandoned})), (std::vector<std::int64_t>{abandoned}));
  EXPECT_EQ(r.rows("steps", abandoned), 0);
  // Its launcher may still close it: the stored status is running.
  const std::int64_t late = r.add_abandoned("local_sgd");
  r.store.finish_run(late, RunStatus::Failed);
  EXPECT_EQ(r.store.run(late)->status, RunStatus::Failed);
}

// Why a run did not complete is stored with it (finish_run, or its launcher later) and shown.
TEST(RunAdmin, AFailedRunKeepsItsReasonAndShowShowsIt) {
  Runs r;
  EXPECT_TRUE(r.store.run(r.failed)->reason.empty());
  EXPECT_EQ(run_details(r.store, r.failed).find("reason"), std::string::npos);
  const std::int64_t hung = r.add("ring", std::nullopt);
  r.store.finish_run(hung, RunStatus::Failed,
                     "rank 0 step 2: allreduce not complete after 3.0 s; did not arrive: rank 1");
  EXPECT_EQ(r.store.run(hung)->reason, "rank 0 step 2: allreduce not complete after 3.0 s; did not arrive: rank 1");
  EXPECT_NE(run_details(r.store, hung).find("reason      rank 0 step 2: allreduce not complete"), std::string::npos);
  r.store.set_run_reason(r.failed, "rank 1 step 5: exiting on purpose");
  EXPECT_EQ(r.store.run(r.failed)->reason, "rank 1 step 5: exiting on purpose");
  EXPECT_EQ(r.store.run(r.failed)->status, RunStatus::Failed);
  EXPECT_THROW(r.store.set_run_reason(999, "x"), StoreError);
}

TEST(RunAdmin, AJobsReasonIsEachDistinctNoteOnceElseTheSignal) {
  EXPECT_EQ(job_failure_reason({0, {"rank 1: x", "rank 0: y", "rank 1: x"}, {}}), "rank 1: x; rank 0: y");
  EXPECT_EQ(job_failure_reason({SIGINT, {}, {}}), "SIGINT to the launcher");
  EXPECT_EQ(job_failure_reason({SIGTERM, {"rank 0: z"}, {}}), "rank 0: z");
  EXPECT_EQ(job_failure_reason({}), "");
}

// What `ddplab run` records when its job ends badly: runs left running (or abandoned) are finished with the
// reason, a run already failed gets the ranks' reason, finished ones are left alone, the flight dumps go
// with the last run, and an unreadable dump is left out and said so.
TEST(RunAdmin, RecordingABadJobEndMarksItsRunsAndKeepsTheFlightDumps) {
  Runs r;
  const std::int64_t abandoned = r.add_abandoned("local_sgd");
  std::vector<RunRow> launch;
  for (std::int64_t id : {r.done, r.failed, r.running, abandoned}) launch.push_back(*r.store.run(id));
  const std::string dump = flight_to_json({{0, 7, 3, "", "MPI barrier", 0, 10.0, -1, false}});
  const JobEndRecord rec = record_job_end(r.store, launch, {0, {"rank 1 step 3: stuck"}, {dump, "not json"}});
  EXPECT_EQ(ids(rec.marked), (std::vector<std::int64_t>{r.running, abandoned}));
  for (std::int64_t id : {r.running, abandoned, r.failed}) {
    EXPECT_EQ(r.store.run(id)->status, RunStatus::Failed) << id;
    EXPECT_EQ(r.store.run(id)->reason, "rank 1 step 3: stuck") << id;
  }
  EXPECT_EQ(r.store.run(r.done)->status, RunStatus::Completed);
  EXPECT_TRUE(r.store.run(r.done)->reason.empty());
  EXPECT_EQ(rec.flight_run, abandoned);
  ASSERT_EQ(r.store.flight(abandoned).size(), 1u);
  EXPECT_TRUE(r.store.flight(abandoned)[0].in_flight());
  ASSERT_EQ(rec.unreadable.size(), 1u);
  // Interrupted: the signal is the reason.
  const std::int64_t stopped = r.add("ring", std::nullopt);
  const JobEndRecord sig = record_job_end(r.store, {*r.store.run(stopped)}, {SIGTERM, {}, {"not json"}});
  EXPECT_EQ(sig.unreadable.size(), 1u);  // nothing readable: nothing stored, nothing announced
  EXPECT_EQ(ids(sig.marked), (std::vector<std::int64_t>{stopped}));
  EXPECT_EQ(r.store.run(stopped)->status, RunStatus::Interrupted);
  EXPECT_EQ(r.store.run(stopped)->reason, "SIGTERM to the launcher");
  EXPECT_EQ(sig.flight_run, 0);
  EXPECT_TRUE(sig.stopped.empty());
  // A run its ranks stored interrupted themselves (a stop on request) is left as it is, and said.
  const JobEndRecord again = record_job_end(r.store, {*r.store.run(stopped)}, {SIGINT, {}, {}});
  EXPECT_TRUE(again.marked.empty());
  EXPECT_EQ(ids(again.stopped), (std::vector<std::int64_t>{stopped}));
  EXPECT_EQ(r.store.run(stopped)->reason, "SIGTERM to the launcher");
}
