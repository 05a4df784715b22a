// `ddplab bench collectives`: nccl-tests-style bandwidth and correctness tables of every allreduce schedule
// against the backend's native allreduce, over MPI or NCCL (--backend), stored in the results store;
// `ddplab bench results` reads them back.
//
// Metrics, as nccl-tests defines them (n ranks, each reducing a buffer of `size` bytes):
//   time_us = max over ranks of the mean time per iteration, over `iters` back-to-back timed iterations
//   algbw   = size / time                  (GB/s = 10^9 bytes per second)
//   busbw   = algbw * 2(n-1)/n             (per-link bandwidth an allreduce needs; compare it with the link's peak)
//   #wrong  = elements differing from the exact sum, summed over ranks (inputs are small integers)
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "validators.hpp"
#include "ddplab/core/error.hpp"
#include "ddplab/core/store.hpp"
#include "ddplab/core/units.hpp"
#include "ddplab/runtime/collective_bench.hpp"
#include "ddplab/runtime/collective_bench_job.hpp"
#include "ddplab/runtime/communicator.hpp"
#include "ddplab/runtime/launch.hpp"
#include "ddplab/runtime/transport.hpp"
#include "ddplab/simulator/collective_sim.hpp"
#include "ddplab/strategies/schedule.hpp"
#include "ddplab/testbed/testbed.hpp"

namespace ddplab::cli {

namespace {

constexpr const char* kMetricsHelp =
    "Metrics, as nccl-tests defines them (n ranks, each reducing a buffer of `size` bytes of float32):\n"
    "  time_us  max over ranks of the mean time per iteration (iters back-to-back iterations after a barrier)\n"
    "  algbw    size / time, in GB/s (10^9 bytes/s)\n"
    "  busbw    algbw * 2(n-1)/n: the bandwidth each link needs; compare it with the link's peak\n"
    "  #wrong   elements differing from the exact sum, over all ranks (inputs are small integers)\n"
    "\n"
    "On one machine this starts `mpirun -np N` of itself; under mpirun or srun it joins the job directly.\n"
    "--backend nccl bootstraps NCCL over that job (rank r of a node on its GPU r) and reduces device buffers;\n"
    "inputs are uploaded and checked outside the timed iterations, and each iteration waits for its transfers.\n"
    "Rows go to the results store (tables bench_runs and collective_bench); `ddplab bench results` lists them.\n"
    "Exits non-zero when any #wrong is above 0, naming the schedule and size.";

struct BenchRequest {
  int np = 4;
  std::string sizes = "1KiB:256MiB";
  std::vector<std::string> schedules;  // empty: every allreduce schedule + native
  int iters = 20, warmup = 5;
  std::optional<int> ranks_per_node;
  std::string db = kDefaultDb;
  bool check = true;
  bool progress = false;                   // set on the worker command line by the launcher
  bool testbed = false, np_given = false;  // one rank per test bed host; --np given explicitly
  std::string testbed_tag;                 // the test bed's run_tag JSON, passed to the ranks to store
  std::string backend = "mpi";             // mpi (host buffers) or nccl (device buffers, one rank per GPU)
  bool backend_given = false;
  double comm_timeout = 300;  // nccl: the watchdog's limit per collective
  // --simulate: predict the table on a modelled cluster instead of measuring (collective_sim.hpp).
  bool simulate = false;
  std::string scenario, preset;  // the cluster: a scenario's [cluster], or a preset; else the default star
  std::optional<int> world;      // the world size simulated (default --np)
  std::string network_model = "auto";
  FaultInjection fault;  // --inject-fault: a test's wrong result, passed on to every rank
};

std::vector<std::string> resolve_schedules(const BenchRequest& req) {
  std::vector<std::string> names = req.schedules.empty() ? allreduce_schedule_names() : req.schedules;
  for (const auto& s : names)
    if (!has_schedule(s, Collective::Allreduce)) {
      std::string known;
      for (const auto& k : allreduce_schedule_names()) known += (known.empty() ? "" : ", ") + k;
      throw InputError("--schedules: unknown allreduce schedule \"" + s + "\" (known: " + known + ")");
    }
  return names;
}

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ",") + s;
  return out;
}

// Rank 0's view of the job: prints each schedule's table as its rows arrive, shows progress on a terminal.
class TablePrinter {
 public:
  TablePrinter(int world, int ranks_per_node, const BenchRequest& req)
      : world_(world), rpn_(ranks_per_node), req_(req) {}
  // A simulated table names its cluster instead of iterations.
  void set_what(std::string what) { what_ = std::move(what); }

  void progress(const std::string& schedule, std::uint64_t bytes, std::size_t done, std::size_t total) {
    if (!req_.progress) return;
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start_).count();
    std::fprintf(stderr, "\r\033[K[bench] %s %s  (%zu/%zu done, %.0f s)", schedule.c_str(),
                 format_bytes(static_cast<double>(bytes)).c_str(), done, total, s);
    std::fflush(stderr);
  }

  void row(const CollectiveBenchRow& r) {
    clear_progress();
    if (r.schedule != current_) {
      end_table();
      current_ = r.schedule;
      const std::string what = what_.empty() ? fmt::format("iters {}  warmup {}", req_.iters, req_.warmup) : what_;
      std::printf("#\n# %s  schedule %s  world %d  ranks/node %d  %s\n#\n", to_string(r.collective).c_str(),
                  r.schedule.c_str(), world_, rpn_, what.c_str());
      std::printf("#%12s %12s %6s %11s %11s %11s %7s\n", "size (B)", "count", "type", "time_us", "algbw GB/s",
                  "busbw GB/s", "#wrong");
    }
    const std::string wrong = r.wrong ? std::to_string(*r.wrong) : "N/A";
    std::printf(" %12lld %12lld %6s %11.2f %11.3f %11.3f %7s\n", static_cast<long long>(r.bytes),
                static_cast<long long>(r.count), r.type.c_str(), r.time_us, r.algbw_gbs, r.busbw_gbs, wrong.c_str());
    busbw_sum_ += r.busbw_gbs;
    ++rows_;
    std::fflush(stdout);
  }

  void end_table() {
    if (rows_ > 0)
      std::printf("# %s: average busbw %.3f GB/s over %d sizes\n", current_.c_str(), busbw_sum_ / rows_, rows_);
    busbw_sum_ = 0;
    rows_ = 0;
    std::fflush(stdout);
  }

  void clear_progress() {
    if (!req_.progress) return;
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
  }

 private:
  int world_, rpn_;
  const BenchRequest& req_;
  std::string current_, what_;
  double busbw_sum_ = 0;
  int rows_ = 0;
  std::chrono::steady_clock::time_point start_ = std::chrono::steady_clock::now();
};

// One rank of the job (collective_bench_job.hpp); rank 0 prints the tables.
int bench_worker(const BenchRequest& req) {
  int argc = 0;
  char** argv = nullptr;
  auto comm = make_mpi_communicator(&argc, &argv);
  CollectiveBenchJob job;
  job.options.sizes = parse_size_list(req.sizes);
  job.options.schedules = resolve_schedules(req);
  job.options.iters = req.iters;
  job.options.warmup = req.warmup;
  job.options.check = req.check;
  job.options.backend = req.backend;
  job.options.fault = req.fault;
  job.ranks_per_node = req.ranks_per_node;
  job.comm_timeout_s = req.comm_timeout;
  job.db = req.db;
  if (!req.testbed_tag.empty()) job.extra["testbed"] = nlohmann::json::parse(req.testbed_tag);
  std::unique_ptr<TablePrinter> printer;
  CollectiveBenchHooks hooks;
  hooks.begin = [&](int world, int ranks_per_node) {
    printer = std::make_unique<TablePrinter>(world, ranks_per_node, req);
  };
  hooks.row = [&](const CollectiveBenchRow& row) { printer->row(row); };
  hooks.progress = [&](const std::string& s, std::uint64_t bytes, std::size_t done, std::size_t total) {
    if (printer) printer->progress(s, bytes, done, total);
  };
  hooks.end = [&](std::int64_t id, const std::vector<CollectiveBenchRow>& wrong) {
    printer->end_table();
    std::fprintf(stderr, "ddplab: bench %lld stored in %s\n", static_cast<long long>(id), req.db.c_str());
    for (const auto& r : wrong)
      std::fprintf(stderr, "error: schedule %s gives %lld wrong elements at size %lld B (%s)\n", r.schedule.c_str(),
                   static_cast<long long>(*r.wrong), static_cast<long long>(r.bytes),
                   format_bytes(static_cast<double>(r.bytes)).c_str());
  };
  hooks.failing = [&] {
    if (printer) printer->clear_progress();
  };
  return run_collective_bench_job(*comm, job, hooks);
}

// --simulate: the same table, predicted on the scenario's or preset's cluster, stored with backend simgrid.
int bench_simulated(const BenchRequest& req) {
  if (req.testbed) throw InputError("--simulate predicts a cluster; it does not run on the test bed");
  if (!req.scenario.empty() && !req.preset.empty()) throw InputError("give --scenario or --preset, not both");
  SimulatedBench bench = simulated_bench_cluster(req.scenario, req.preset, req.backend_given ? req.backend : "");
  CollectiveSimRequest& sim = bench.request;
  sim.world_size = req.world.value_or(req.np);
  if (req.ranks_per_node) sim.cluster.devices_per_node = *req.ranks_per_node;
  sim.schedules = resolve_schedules(req);
  try {
    sim.sizes = parse_size_list(req.sizes);
  } catch (const InputError& e) {
    throw InputError(std::string("--sizes: ") + e.what(), "--sizes");
  }
  bench.sizes = req.sizes;
  sim.options.network_model = req.network_model;
  require_writable_store(req.db);
  Store store(req.db);
  TablePrinter printer(sim.world_size, sim.cluster.devices_per_node, req);
  printer.set_what("simulated");
  const std::int64_t id = run_simulated_bench(
      store, bench,
      [&] {
        std::printf("# predicted on %s; network model %s; native as %s\n", bench.where.c_str(),
                    sim.options.network_model.c_str(),
                    sim.transport == ddplab::Transport::Mpi
                        ? "Open MPI 4.1 would run it"
                        : "NCCL would run it (ring, tree or NVLS; LL, LL128 or Simple)");
      },
      [&](const CollectiveBenchRow& row) { printer.row(row); });
  printer.end_table();
  std::fprintf(stderr, "ddplab: simulated bench %lld stored in %s\n", static_cast<long long>(id), req.db.c_str());
  return 0;
}

int bench_collectives(const BenchRequest& req) {
  if (req.simulate) return bench_simulated(req);
  if (!req.scenario.empty() || !req.preset.empty() || req.world)
    throw InputError("--scenario, --preset and --world describe what --simulate predicts; add --simulate");
  if (under_mpi_launcher()) return bench_worker(req);
  // Validate here, before starting any rank.
  std::optional<testbed::State> bed;
  if (req.testbed) bed = testbed::require_up(req.np_given ? std::optional<int>(req.np) : std::nullopt);
  const int np = bed ? bed->hosts : req.np;
  if (np < 1) throw InputError("--np must be at least 1, got " + std::to_string(np));
  try {
    parse_size_list(req.sizes);
  } catch (const InputError& e) {
    throw InputError(std::string("--sizes: ") + e.what(), "--sizes");
  }
  const auto names = resolve_schedules(req);
  require_gpu_backend("--backend", req.backend);
  require_writable_store(req.db);
  const std::int64_t before = last_bench_id(req.db);
  std::vector<std::string> args = {"bench",
                                   "collectives",
                                   "--np",
                                   std::to_string(np),
                                   "--sizes",
                                   req.sizes,
                                   "--schedules",
                                   join(names),
                                   "--iters",
                                   std::to_string(req.iters),
                                   "--warmup",
                                   std::to_string(req.warmup),
                                   "--db",
                                   req.db,
                                   req.check ? "--check" : "--no-check",
                                   "--backend",
                                   req.backend,
                                   "--comm-timeout",
                                   fmt::format("{}", req.comm_timeout)};
  if (req.ranks_per_node) args.insert(args.end(), {"--ranks-per-node", std::to_string(*req.ranks_per_node)});
  if (req.fault.kind != FaultKind::None) args.insert(args.end(), {"--inject-fault", fault_injection_text(req.fault)});
  if (isatty(STDERR_FILENO)) args.push_back("--progress");
  if (bed) args.insert(args.end(), {"--testbed-tag", testbed::run_tag(*bed).dump()});
  LaunchPlan plan = plan_launch(np, args, bed ? testbed::mpirun_args(*bed) : std::vector<std::string>{});
  if (bed) retry_unstarted(plan, testbed::kLaunchAttempts);
  std::fprintf(stderr, "ddplab: %s\n", shell_join(plan.argv).c_str());
  const JobEnd end = execute(plan);
  const int rc = end.exit_code();
  if (rc != 0) {
    // A rank that died (or an interrupt) took the job down; rank 0 may not have recorded the outcome.
    Store store(req.db);
    for (const std::int64_t id : fail_unfinished_benches(store, before))
      std::fprintf(stderr, "ddplab: bench %lld marked failed\n", static_cast<long long>(id));
    if (end.signal)
      std::fprintf(stderr, "ddplab: bench interrupted (%s)\n", strsignal(end.signal));
    else
      std::fprintf(stderr, "error: bench failed (mpirun exit %d)\n", rc);
  }
  return rc;
}

// The stored rows, one per (bench, schedule, size): an aligned table, or CSV for further processing.
int bench_results(const std::string& db, std::optional<std::int64_t> only, bool csv) {
  if (access(db.c_str(), F_OK) != 0)
    throw InputError(db + ": no results store here (run `ddplab bench collectives` first)");
  Store store(db);
  if (csv)
    std::printf(
        "bench_id,status,started_at,world_size,ranks_per_node,iters,schedule,collective,type,bytes,count,"
        "time_us,algbw_gbs,busbw_gbs,wrong,backend\n");
  else
    std::printf("%5s %-9s %-7s %5s %4s %-18s %12s %11s %11s %11s %7s\n", "bench", "status", "backend", "world", "rpn",
                "schedule", "size (B)", "time_us", "algbw GB/s", "busbw GB/s", "#wrong");
  std::size_t shown = 0;
  for (const auto& b : store.benches()) {
    if (only && b.id != *only) continue;
    for (const auto& r : store.bench_rows(b.id)) {
      ++shown;
      const std::string wrong = r.wrong ? std::to_string(*r.wrong) : (csv ? "" : "N/A");
      if (csv)
        std::printf("%lld,%s,%s,%d,%d,%d,%s,%s,%s,%lld,%lld,%.17g,%.17g,%.17g,%s,%s\n", static_cast<long long>(b.id),
                    to_string(b.status).c_str(), b.started_at.c_str(), b.info.world_size, b.info.ranks_per_node,
                    b.info.iters, r.schedule.c_str(), to_string(r.collective).c_str(), r.type.c_str(),
                    static_cast<long long>(r.bytes), static_cast<long long>(r.count), r.time_us, r.algbw_gbs,
                    r.busbw_gbs, wrong.c_str(), b.info.backend.c_str());
      else
        std::printf("%5lld %-9s %-7s %5d %4d %-18s %12lld %11.2f %11.3f %11.3f %7s\n", static_cast<long long>(b.id),
                    to_string(b.status).c_str(), b.info.backend.c_str(), b.info.world_size, b.info.ranks_per_node,
                    r.schedule.c_str(), static_cast<long long>(r.bytes), r.time_us, r.algbw_gbs, r.busbw_gbs,
                    wrong.c_str());
    }
  }
  if (shown == 0)  // the header alone would not say why
    std::fprintf(stderr, "%s has no %s: `ddplab bench collectives` measures some\n", db.c_str(),
                 only ? fmt::format("bench {}", *only).c_str() : "collective benches");
  return 0;
}

}  // namespace

void add_bench(CLI::App& app) {
  auto* bench = app.add_subcommand("bench", "Benchmark collectives (nccl-tests style) and list stored results");
  bench->require_subcommand(1);

  auto req = std::make_shared<BenchRequest>();
  auto* cmd = bench->add_subcommand(
      "collectives", "Allreduce bandwidth and correctness of every schedule vs the native collective, per buffer size");
  auto* np_opt = cmd->add_option("--np", req->np, "Ranks to start")->capture_default_str()->check(positive_int());
  cmd->add_option("--sizes", req->sizes,
                  "Bytes of float32 per rank: LO:HI doubling from LO (like nccl-tests -b LO -e HI -f 2), or a comma "
                  "list; rounded down to whole floats")
      ->capture_default_str();
  cmd->add_option("--schedules", req->schedules,
                  "Comma list of allreduce schedules (default: " + join(allreduce_schedule_names()) + ")")
      ->delimiter(',');
  cmd->add_option("--iters", req->iters, "Timed iterations per size")->capture_default_str()->check(positive_int());
  cmd->add_option("--warmup", req->warmup, "Untimed iterations per size before timing")
      ->capture_default_str()
      ->check(non_negative_int());
  cmd->add_option("--ranks-per-node", req->ranks_per_node,
                  "Consecutive ranks per node for hierarchical schedules (default: the ranks on rank 0's node)")
      ->check(positive_int());
  cmd->add_option("--db", req->db, "Results store (SQLite)")->capture_default_str();
  cmd->add_flag("--check,!--no-check", req->check, "Verify each result against the exact sum (#wrong; default on)");
  auto* backend_opt =
      cmd->add_option(
             "--backend", req->backend,
             "mpi (host buffers, the job's MPI) or nccl (device buffers, one rank per GPU; native is ncclAllReduce, "
             "schedules are grouped ncclSend/ncclRecv steps)")
          ->capture_default_str()
          ->check(CLI::IsMember({"mpi", "nccl"}));
  cmd->add_flag("--simulate", req->simulate,
                "Predict the table with the simulator instead of measuring: on --scenario's [cluster], a --preset, or "
                "the default star, at --world ranks; stored with backend simgrid");
  cmd->add_option("--scenario", req->scenario, "--simulate: the scenario whose [cluster] (and calibration) to use");
  cmd->add_option("--preset", req->preset, "--simulate: a cluster preset (dgx-h100, dgx-a100, eth-25g, cpu-testbed)");
  cmd->add_option("--world", req->world, "--simulate: the world size (default --np)")->check(positive_int());
  cmd->add_option("--network-model", req->network_model, std::string("--simulate: ") + kNetworkModelHelp)
      ->check(CLI::IsMember({"auto", "LV08", "CM02"}))
      ->capture_default_str();
  cmd->add_option("--comm-timeout", req->comm_timeout, "nccl: seconds before a stuck collective aborts the job")
      ->capture_default_str()
      ->check(number_in(0.0, 86400.0, true));
  cmd->add_flag("--testbed", req->testbed, "One rank per host of the emulated cluster (`ddplab testbed up`)");
  cmd->add_option_function<std::string>(
         "--inject-fault",
         [req](const std::string& v) { req->fault = parse_fault_injection(v, "--inject-fault", {FaultKind::Wrong}); },
         "For tests of the correctness check: wrong:SCHEDULE:BYTES adds 1 to one element of the last rank's result "
         "of that schedule at that size")
      ->group("Testing");
  cmd->add_option("--testbed-tag", req->testbed_tag)->group("");  // internal: the launcher's test bed, to store
  cmd->add_flag("--progress", req->progress, "Show a live progress line (set automatically on a terminal)")->group("");
  cmd->footer(kMetricsHelp);
  cmd->callback([req, np_opt, backend_opt] {
    req->np_given = np_opt->count() > 0;
    req->backend_given = backend_opt->count() > 0;
    g_exit_code = bench_collectives(*req);
  });

  struct ResultsArgs {
    std::string db = kDefaultDb;
    std::optional<std::int64_t> bench;
    bool csv = false;
  };
  auto ra = std::make_shared<ResultsArgs>();
  auto* res = bench->add_subcommand("results", "List stored collective benchmark rows (table or CSV)");
  res->add_option("--db", ra->db, "Results store (SQLite)")->capture_default_str();
  res->add_option("--bench", ra->bench, "Only this bench id");
  res->add_flag("--csv", ra->csv, "CSV with full precision, one row per (bench, schedule, size)");
  res->callback([ra] { g_exit_code = bench_results(ra->db, ra->bench, ra->csv); });
  add_bench_published(*bench);
}

}  // namespace ddplab::cli
