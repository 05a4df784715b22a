// What each rank of `ddplab bench collectives` runs (collective_bench_job.hpp) and the transports it measures
// on (transport.hpp), on one rank without MPI: the bench and its rows reach the store, rank 0's hooks see them
// in order, wrong elements fail the bench, an error aborts with its kind's exit code; and what the launcher
// does with the store after a job that failed.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ddplab/core/error.hpp"
#include "ddplab/core/store.hpp"
#include "ddplab/runtime/collective_bench_job.hpp"
#include "ddplab/runtime/communicator.hpp"
#include "ddplab/runtime/ops.hpp"
#include "ddplab/runtime/transport.hpp"
#include "temp_dir.hpp"

namespace ddplab {
namespace {

using test::TempDir;

CollectiveBenchJob small_job(const std::string& db) {
  CollectiveBenchJob job;
  job.options.sizes = {4096, 8192};
  job.options.schedules = {"native", "ring"};
  job.options.iters = 1;
  job.options.warmup = 0;
  job.db = db;
  return job;
}

// Restores an environment variable when the test ends.
struct EnvVar {
  std::string name;
  EnvVar(std::string n, const char* value) : name(std::move(n)) {
    if (value)
      ::setenv(name.c_str(), value, 1);
    else
      ::unsetenv(name.c_str());
  }
  ~EnvVar() { ::unsetenv(name.c_str()); }
};

TEST(TransportComm, MpiIsTheJobsOwnCommunicator) {
  auto comm = make_single_process_communicator();
  const TransportComm t = open_transport(*comm, "mpi", 10);
  EXPECT_EQ(t.name, "mpi");
  EXPECT_EQ(t.comm, comm.get());
  EXPECT_EQ(t.device_ops(), nullptr);
  try {
    open_transport(*comm, "tcp", 10);
    FAIL() << "an unknown transport was accepted";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("unknown transport \"tcp\" (known: mpi, nccl)"), std::string::npos)
        << e.what();
  }
}

TEST(TransportComm, OnlyGpuBackendsNeedCuda) {
  EXPECT_NO_THROW(require_gpu_backend("--backend", "cpu"));
  EXPECT_NO_THROW(require_gpu_backend("--backend", "mpi"));
  if (cuda_unavailable_reason().empty()) {
    EXPECT_NO_THROW(require_gpu_backend("--backend", "cuda"));
  } else {
    try {
      require_gpu_backend("x.toml: train.backend", "cuda+mpi");
      FAIL() << "cuda+mpi accepted without CUDA";
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()).rfind("x.toml: train.backend \"cuda+mpi\" cannot run here: ", 0), 0u) << e.what();
    }
  }
}

TEST(CollectiveBenchJob, RanksPerNodeAreGivenOrTheLaunchersOrEveryRank) {
  auto comm = make_single_process_communicator();
  {
    EnvVar unset("OMPI_COMM_WORLD_LOCAL_SIZE", nullptr);
    EXPECT_EQ(job_ranks_per_node(*comm), 1);
    EXPECT_EQ(job_ranks_per_node(*comm, 4), 4);
  }
  EnvVar local("OMPI_COMM_WORLD_LOCAL_SIZE", "3");
  EXPECT_EQ(job_ranks_per_node(*comm), 3);
  EXPECT_EQ(job_ranks_per_node(*comm, 2), 2);
}

TEST(CollectiveBenchJob, StoresTheBenchAndTellsRankZeroInOrder) {
  TempDir dir;
  auto comm = make_single_process_communicator();
  CollectiveBenchJob job = small_job(dir.file("r.db"));
  job.extra["testbed"] = {{"hosts", 1}};
  std::vector<std::string> seen;
  CollectiveBenchHooks hooks;
  hooks.begin = [&](int world, int rpn) {
    seen.push_back("begin " + std::to_string(world) + " " + std::to_string(rpn));
  };
  hooks.row = [&](const CollectiveBenchRow& r) { seen.push_back(r.schedule + " " + std::to_string(r.bytes)); };
  hooks.end = [&](std::int64_t id, const std::vector<CollectiveBenchRow>& wrong) {
    seen.push_back("end " + std::to_string(id) + " " + std::to_string(wrong.size()));
  };
  int progress = 0;
  hooks.progress = [&](const std::string&, std::uint64_t, std::size_t, std::size_t) { ++progress; };
  EnvVar unset("OMPI_COMM_WORLD_LOCAL_SIZE", nullptr);
  EXPECT_EQ(run_collective_bench_job(*comm, job, hooks), 0);

  Store store(dir.file("r.db"));
  const auto benches = store.benches();
  ASSERT_EQ(benches.size(), 1u);
  const auto& b = benches[0];
  EXPECT_EQ(b.status, RunStatus::Completed);
  EXPECT_EQ(b.info.world_size, 1);
  EXPECT_EQ(b.info.backend, "mpi");
  EXPECT_EQ(nlohmann::json::parse(b.info.config_json)["testbed"]["hosts"], 1);
  const std::vector<std::string> expected = {"begin 1 1", "native 4096", "native 8192",
                                             "ring 4096", "ring 8192",   "end " + std::to_string(b.id) + " 0"};
  EXPECT_EQ(seen, expected);
  EXPECT_EQ(progress, 4);
  const auto rows = store.bench_rows(b.id);
  ASSERT_EQ(rows.size(), 4u);
  for (const auto& r : rows) EXPECT_EQ(r.wrong.value_or(-1), 0) << r.schedule << " " << r.bytes;
  // Without hooks it runs the same.
  EXPECT_EQ(run_collective_bench_job(*comm, job), 0);
  EXPECT_EQ(store.benches().size(), 2u);
}

TEST(CollectiveBenchJob, WrongElementsFailTheBenchOnEveryRank) {
  TempDir dir;
  auto comm = make_single_process_communicator();
  CollectiveBenchJob job = small_job(dir.file("r.db"));
  job.options.fault = parse_fault_injection("wrong:ring:8192", "--inject-fault", {FaultKind::Wrong});
  std::vector<CollectiveBenchRow> told;
  CollectiveBenchHooks hooks;
  hooks.end = [&](std::int64_t, const std::vector<CollectiveBenchRow>& wrong) { told = wrong; };
  EXPECT_EQ(run_collective_bench_job(*comm, job, hooks), 1);
  ASSERT_EQ(told.size(), 1u);
  EXPECT_EQ(told[0].schedule, "ring");
  EXPECT_EQ(told[0].bytes, 8192);
  Store store(dir.file("r.db"));
  EXPECT_EQ(store.benches().at(0).status, RunStatus::Failed);
}

TEST(CollectiveBenchJobDeathTest, AnErrorMarksTheBenchFailedAndAbortsWithItsKind) {
  TempDir dir;
  CollectiveBenchJob job = small_job(dir.file("r.db"));
  job.options.schedules = {"native", "no_such_schedule"};
  // Bad input (2): the rows measured before it stay, the bench is failed, and the rank says which it is.
  EXPECT_EXIT(
      {
        auto comm = make_single_process_communicator();
        CollectiveBenchHooks hooks;
        hooks.failing = [] { std::fprintf(stderr, "failing hook\n"); };
        run_collective_bench_job(*comm, job, hooks);
      },
      testing::ExitedWithCode(InputError::kExitCode), "failing hook\nerror: rank 0: .*no_such_schedule");
  Store store(dir.file("r.db"));
  ASSERT_EQ(store.benches().size(), 1u);
  EXPECT_EQ(store.benches()[0].status, RunStatus::Failed);
  EXPECT_EQ(store.bench_rows(store.benches()[0].id).size(), 2u);  // native's sizes
}

TEST(CollectiveBenchJob, TheLauncherFailsWhatItsJobLeftRunning) {
  TempDir dir;
  const std::string db = dir.file("r.db");
  EXPECT_EQ(last_bench_id(db), 0);  // no store yet: nothing to compare with, and none created
  EXPECT_FALSE(std::filesystem::exists(db));
  Store store(db);
  EXPECT_EQ(last_bench_id(db), 0);
  BenchInfo info;
  const std::int64_t old_running = store.begin_bench(info);  // another job's, still going
  const std::int64_t done = store.begin_bench(info);
  store.finish_bench(done, RunStatus::Completed);
  const std::int64_t ours1 = store.begin_bench(info);
  const std::int64_t ours2 = store.begin_bench(info);
  store.finish_bench(ours2, RunStatus::Completed);
  const std::int64_t ours3 = store.begin_bench(info);
  EXPECT_EQ(last_bench_id(db), ours3);
  EXPECT_EQ(fail_unfinished_benches(store, done), (std::vector<std::int64_t>{ours1, ours3}));
  for (const auto& b : store.benches()) {
    const RunStatus want = b.id == old_running              ? RunStatus::Running
                           : b.id == ours1 || b.id == ours3 ? RunStatus::Failed
                                                            : RunStatus::Completed;
    EXPECT_EQ(b.status, want) << "bench " << b.id;
  }
  EXPECT_TRUE(fail_unfinished_benches(store, done).empty());
}

}  // namespace
}  // namespace ddplab
