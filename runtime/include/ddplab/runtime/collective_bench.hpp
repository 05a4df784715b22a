// Collective benchmark in the manner of nccl-tests' all_reduce_perf: for each schedule and buffer size,
// a correctness pass against an exact reference, warmup iterations, then timed iterations.
//
// Metrics (as nccl-tests defines them):
//   time   = max over ranks of the mean time per iteration (each rank times `iters` back-to-back
//            collectives after a barrier)
//   algbw  = bytes / time                      (bytes = the buffer each rank reduces)
//   busbw  = algbw * 2(n-1)/n for allreduce   (the bandwidth each link needs: comparable across n,
//            and against the hardware's peak; (n-1)/n for reduce-scatter and all-gather)
//   #wrong = elements differing from the exact sum, summed over ranks
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json.hpp>

#include "ddplab/core/metrics.hpp"  // bus_factor, set_bandwidths
#include "ddplab/core/store.hpp"
#include "ddplab/runtime/communicator.hpp"
#include "ddplab/runtime/fault_injection.hpp"

namespace ddplab {

class Ops;

struct CollectiveBenchOptions {
  std::vector<std::uint64_t> sizes;    // bytes of float32 data per rank (count = bytes / 4)
  std::vector<std::string> schedules;  // allreduce schedules from the registry, or "native"
  int iters = 20, warmup = 5;
  int ranks_per_node = 1;  // for hierarchical schedules
  bool check = true;       // run the correctness pass
  // Where the reduced buffer lives: null, host memory (MPI); else this backend's memory, which a
  // communicator with ChunkMemory (NCCL) needs. Inputs are uploaded and results read back through it,
  // outside the timed iterations.
  Ops* device = nullptr;
  std::string backend = "mpi";  // the transport, as stored (bench_runs.backend): "mpi" or "nccl"
  FaultInjection fault;         // a test's: wrong (fault_injection.hpp); none by default
};

// "1KiB:256MiB" (lo, 2 lo, 4 lo, ... up to hi, like nccl-tests -b/-e -f 2) or "4KiB,1MiB,64MiB".
// Each size is a whole number of floats, at least one. Throws InputError naming the problem.
std::vector<std::uint64_t> parse_size_list(std::string_view text);

// Before a (schedule, size) is measured: for a progress display.
using BenchProgress =
    std::function<void(const std::string& schedule, std::uint64_t bytes, std::size_t done, std::size_t total)>;
// After it: the same row on every rank (times and #wrong are already reduced over ranks).
using BenchRowSink = std::function<void(const CollectiveBenchRow& row)>;

// Rank 0: records a bench of these options at this world size in the store (options.backend, config JSON of
// the options plus `extra` entries, e.g. {"calibration": NAME} or {"testbed": {...}}). Returns its id.
// (collective_bench_store.cpp: the rest needs no store, and builds where SQLite is missing.)
std::int64_t begin_collective_bench(Store& store, const CollectiveBenchOptions& options, int world_size,
                                    const nlohmann::json& extra);

// Collective: every rank calls it with the same options. Schedules are measured one after another,
// each over every size in order. Throws InternalError when the communicator needs device buffers
// (it has ChunkMemory) and options.device is null.
void run_collective_bench(Communicator& comm, const CollectiveBenchOptions& options, const BenchRowSink& on_row,
                          const BenchProgress& on_progress = {});

}  // namespace ddplab
