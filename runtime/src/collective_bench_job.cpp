#include "ddplab/runtime/collective_bench_job.hpp"

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <memory>

#include "ddplab/core/error.hpp"
#include "ddplab/runtime/transport.hpp"

namespace ddplab {

int job_ranks_per_node(Communicator& comm, std::optional<int> given) {
  const char* local = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
  int rpn = given.value_or(local ? std::max(1, std::atoi(local)) : comm.size());
  comm.broadcast(&rpn, sizeof rpn, 0);
  return rpn;
}

int run_collective_bench_job(Communicator& mpi, const CollectiveBenchJob& job, const CollectiveBenchHooks& hooks) {
  const int n = mpi.size(), me = mpi.rank();
  CollectiveBenchOptions opt = job.options;
  opt.ranks_per_node = job_ranks_per_node(mpi, job.ranks_per_node);

  std::unique_ptr<Store> store;
  std::int64_t bench_id = 0;
  std::vector<CollectiveBenchRow> wrong;
  TransportComm transport;  // outside the try: an error aborts the job below before NCCL is torn down, which
                            // could wait for peers still inside a collective
  try {
    transport = open_transport(mpi, opt.backend, job.comm_timeout_s);
    opt.device = transport.device_ops();
    if (me == 0) {
      store = std::make_unique<Store>(job.db);
      bench_id = begin_collective_bench(*store, opt, n, job.extra);
      if (hooks.begin) hooks.begin(n, opt.ranks_per_node);
    }
    run_collective_bench(
        *transport.comm, opt,
        [&](const CollectiveBenchRow& row) {
          if (row.wrong.value_or(0) > 0) wrong.push_back(row);
          if (me != 0) return;
          store->add_bench_row(bench_id, row);
          if (hooks.row) hooks.row(row);
        },
        [&](const std::string& s, std::uint64_t bytes, std::size_t done, std::size_t total) {
          if (me == 0 && hooks.progress) hooks.progress(s, bytes, done, total);
        });
    if (me == 0) {
      store->finish_bench(bench_id, wrong.empty() ? RunStatus::Completed : RunStatus::Failed);
      if (hooks.end) hooks.end(bench_id, wrong);
    }
  } catch (const std::exception& e) {
    if (me == 0 && hooks.failing) hooks.failing();
    std::fprintf(stderr, "error: rank %d: %s\n", me, e.what());
    if (store && bench_id) {
      try {
        store->finish_bench(bench_id, RunStatus::Failed);
      } catch (...) {
      }
    }
    std::fflush(stderr);
    mpi.abort(rank_exit_code(e));  // the others may be waiting in a collective
  }
  return wrong.empty() ? 0 : 1;
}

std::int64_t last_bench_id(const std::string& db) {
  if (access(db.c_str(), F_OK) != 0) return 0;
  const Store store(db);
  std::int64_t id = 0;
  for (const auto& b : store.benches()) id = std::max(id, b.id);
  return id;
}

std::vector<std::int64_t> fail_unfinished_benches(Store& store, std::int64_t after_id) {
  std::vector<std::int64_t> ids;
  for (const auto& b : store.benches())
    if (b.id > after_id && b.status == RunStatus::Running) {
      store.finish_bench(b.id, RunStatus::Failed);
      ids.push_back(b.id);
    }
  std::sort(ids.begin(), ids.end());
  return ids;
}

}  // namespace ddplab
