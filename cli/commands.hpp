// The ddplab subcommands. Each returns the process exit code.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ddplab/runtime/fault_injection.hpp"

namespace CLI {
class App;
}

namespace ddplab::cli {

inline const char* kDefaultDb = "results/ddplab.db";
inline int g_exit_code = 0;  // set by the subcommand that ran

void add_run(CLI::App& app);
void add_simulate(CLI::App& app);
void add_report(CLI::App& app);
void add_runs(CLI::App& app);
void add_demo(CLI::App& app);
void add_bench(CLI::App& app);
void add_bench_published(CLI::App& bench);  // `bench published` (cmd_published.cpp)
void add_import(CLI::App& app);
void add_testbed(CLI::App& app);
void add_calibrate(CLI::App& app);
void add_validate(CLI::App& app);
void add_predict(CLI::App& app);
void add_reference(CLI::App& app);  // cmd_reference.cpp

// Shared by run and demo.
struct RunRequest {
  std::string scenario;
  std::string db = kDefaultDb;
  std::optional<int> np;
  std::optional<int> max_steps;
  std::optional<int> batch_size;       // overrides train.batch_size (a sweep over global batches)
  std::optional<std::uint64_t> seed;   // overrides train.seed (repeats of one configuration)
  std::optional<std::string> backend;  // overrides train.backend: cpu | cuda | cuda+mpi
  bool progress = false;               // set on the worker command line by the launcher
  std::string trace;                   // Chrome trace of steps [trace_first, trace_last)
  std::int64_t trace_first = 10, trace_last = 13;
  bool testbed = false;  // one rank per host of the emulated cluster (`ddplab testbed up`)
  // --resume [RUN_ID]: continue a run from its newest checkpoint; 0 = the scenario's newest resumable run.
  std::optional<std::int64_t> resume;
  FaultInjection fault;  // --inject-fault: a test's exit, perturb or bitflip, passed on to every rank
};
int run_scenario(const RunRequest& req);
// The highest run id in the store (0 when empty): runs written later have larger ids.
std::int64_t last_run_id(const std::string& db);

// --network-model's help, the same in simulate, validate and bench --simulate.
inline constexpr const char* kNetworkModelHelp =
    "SimGrid network model: auto (the cluster's network_model: CM02 on the dgx presets' RDMA fabrics, LV08 "
    "elsewhere), LV08 (TCP's latency and bandwidth factors: Ethernet) or CM02 (latency + size / bandwidth: "
    "InfiniBand, NVLink)";

struct SimulateRequest {
  std::string scenario;
  std::string db = kDefaultDb;
  std::vector<int> worlds;  // empty: the scenario's cluster.simulate_world
  std::string strategy;     // empty: every strategy of the scenario
  std::string network_model = "auto";
  std::string compute = "auto";  // compute_source.hpp
  bool allow_oversubscribed = false;
  bool search = false;       // every [parallel] layout of the one world size, ranked (layout_search.hpp)
  bool zero_stages = false;  // --search: each layout under the strategy's ZeRO stages too
};
int simulate_scenario(const SimulateRequest& req);

}  // namespace ddplab::cli
