// What each rank of `ddplab bench collectives` runs: the job's transport (MPI, or NCCL bootstrapped over it,
// transport.hpp), the nccl-tests-style tables of collective_bench.hpp, and rank 0's record of them in the
// results store; and what its launcher does with the store once the job has ended.
#pragma once
#include <cstdint>
#include <functional>
#include <optional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ddplab/core/store.hpp"
#include "ddplab/runtime/collective_bench.hpp"
#include "ddplab/runtime/communicator.hpp"

namespace ddplab {

// The consecutive ranks per node that hierarchical schedules assume: `given`, else those the launcher put on
// rank 0's node (OMPI_COMM_WORLD_LOCAL_SIZE: all of them on one machine), else every rank. Rank 0's answer on
// every rank. Collective.
int job_ranks_per_node(Communicator& comm, std::optional<int> given = std::nullopt);

struct CollectiveBenchJob {
  CollectiveBenchOptions options;                   // backend names the transport ("mpi" or "nccl"); the job sets
                                                    // ranks_per_node and device
  std::optional<int> ranks_per_node;                // job_ranks_per_node's `given`
  double comm_timeout_s = 300;                      // nccl: the watchdog's limit per collective
  std::string db;                                   // the results store rank 0 records the bench in
  nlohmann::json extra = nlohmann::json::object();  // more config entries to store, e.g. {"testbed": {...}}
};

// What rank 0 is told as the bench goes, to print it; the other ranks are told nothing. Each may be empty.
struct CollectiveBenchHooks {
  std::function<void(int world, int ranks_per_node)> begin;  // the bench is recorded, no row measured yet
  BenchRowSink row;                                          // a row, once stored
  BenchProgress progress;
  // The bench is stored finished: its id and the rows with elements wrong, in the order measured.
  std::function<void(std::int64_t bench_id, const std::vector<CollectiveBenchRow>& wrong)> end;
  std::function<void()> failing;  // an error is about to be printed and the job aborted
};

// Every rank calls it with the same job. Measures every schedule over job.options.backend's transport over
// `mpi`, and records the bench on rank 0: "completed", or "failed" when any row had elements wrong. Returns 0,
// or 1 on every rank when any row had elements wrong (the rows are the same on every rank). An error on any
// rank is printed with the rank, marks rank 0's bench failed and aborts the job with the error's exit code
// (rank_exit_code): the other ranks may be waiting in a collective. Its NCCL communicator is never torn
// down before that abort, which could wait for them.
int run_collective_bench_job(Communicator& mpi, const CollectiveBenchJob& job, const CollectiveBenchHooks& hooks = {});

// The highest bench id in the store at `db`; 0 when there is no store there or no bench in it. The benches a
// job stores later have larger ids.
std::int64_t last_bench_id(const std::string& db);

// After a job that failed: marks "failed" every bench above `after_id` still "running" (rank 0 died, or was
// killed, before it recorded the outcome). Returns their ids, ascending.
std::vector<std::int64_t> fail_unfinished_benches(Store& store, std::int64_t after_id);

}  // namespace ddplab
