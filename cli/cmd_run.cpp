// `ddplab run`: measured data-parallel training over MPI (and NCCL with backend "cuda").
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "commands.hpp"
#include "validators.hpp"
#include "ddplab/core/error.hpp"
#include "ddplab/core/resume.hpp"
#include "ddplab/core/run_admin.hpp"
#include "ddplab/core/scenario.hpp"
#include "ddplab/core/store.hpp"
#include "ddplab/strategies/strategy.hpp"
#include "ddplab/runtime/communicator.hpp"
#include "ddplab/runtime/ops.hpp"
#include "ddplab/runtime/trainer.hpp"
#include "ddplab/runtime/launch.hpp"
#include "ddplab/runtime/run_preflight.hpp"
#include "ddplab/runtime/transport.hpp"
#include "ddplab/testbed/testbed.hpp"

namespace ddplab::cli {
namespace {
using Clock = std::chrono::system_clock;
// How long the launcher waits, after asking the ranks to stop, before it signals mpirun: a step and a
// checkpoint's write are far shorter; a rank that hung is not.
constexpr double kGracefulStopS = 2.0;
}  // namespace

std::int64_t last_run_id(const std::string& db) {
  Store store(db);
  std::int64_t id = 0;
  for (const auto& r : store.runs()) id = std::max(id, r.id);
  return id;
}

int run_scenario(const RunRequest& req) {
  Scenario sc = load_validated_scenario(req.scenario);
  require_trainable_model(sc);
  if (req.max_steps) sc.train.max_steps = *req.max_steps;
  if (req.batch_size) sc.train.batch_size = *req.batch_size;
  if (req.seed) sc.train.seed = *req.seed;
  if (req.backend) sc.train.backend = parse_choice<Backend>(*req.backend, {.field = "--backend"});
  if (under_mpi_launcher()) {
    int argc = 0;
    char** argv = nullptr;
    auto comm = make_mpi_communicator(&argc, &argv);
    WorkerOptions opt;
    opt.db_path = req.db;
    opt.progress = req.progress;
    opt.trace_path = req.trace;
    opt.trace_first = req.trace_first;
    opt.trace_last = req.trace_last;
    // Without an id (srun, a hand-run mpirun), rank 0 finds the run.
    opt.resume_run = req.resume ? (*req.resume > 0 ? *req.resume : -1) : 0;
    opt.fault = req.fault;
    return run_worker(sc, *comm, opt);
  }
  if (!req.trace.empty()) {
    // Fail now, not after training: the trace is written at the end of each strategy.
    const auto dir = std::filesystem::path(req.trace).parent_path();
    std::error_code ec;
    if (!dir.empty()) std::filesystem::create_directories(dir, ec);
    if (ec) throw InputError("--trace " + req.trace + ": cannot create " + dir.string() + " (" + ec.message() + ")");
  }
  // Say now, not once per rank after mpirun started, when this machine cannot run the GPU backend.
  require_gpu_backend(req.backend ? "--backend" : req.scenario + ": train.backend", to_string(sc.train.backend));
  std::optional<testbed::State> bed;
  if (req.testbed) bed = testbed::require_up(req.np);
  int np = bed ? bed->hosts : req.np.value_or(sc.cluster.world_size);
  std::optional<ResumePoint> resume;
  if (req.resume) {
    // Checked here, before mpirun starts: the run, its checkpoint and the settings it was written for. Without
    // --np the run goes on on its own number of ranks.
    const Store store(req.db);
    resume = find_resume_point(store, sc, bed || req.np ? np : 0, *req.resume > 0 ? req.resume : std::nullopt);
    np = resume->world;
  }
  preflight_run(sc, np, req.fault);
  require_writable_store(req.db);
  std::int64_t before = last_run_id(req.db);
  if (resume) {
    std::fprintf(
        stderr, "ddplab: resuming run %lld (%s, %s) from its checkpoint at step %lld (%s)%s\n",
        static_cast<long long>(resume->run.id), resume->run.info.strategy.c_str(),
        to_string(resume->run.status).c_str(), static_cast<long long>(resume->checkpoint.step),
        resume->checkpoint.path.c_str(),
        resume->elastic()
            ? fmt::format(" on {} ranks, not its {}: a new run continues it", np, resume->run.info.world_size).c_str()
            : "");
    before = std::min(before, resume->run.id - 1);  // the resumed run is this launch's too (launch_runs)
  }
  std::vector<std::string> args = {"run", req.scenario, "--db", req.db, "--np", std::to_string(np)};
  if (req.max_steps) args.insert(args.end(), {"--max-steps", std::to_string(*req.max_steps)});
  if (req.batch_size) args.insert(args.end(), {"--batch-size", std::to_string(*req.batch_size)});
  if (req.seed) args.insert(args.end(), {"--seed", std::to_string(*req.seed)});
  if (req.backend) args.insert(args.end(), {"--backend", *req.backend});
  if (resume) args.insert(args.end(), {"--resume", std::to_string(resume->run.id)});
  if (req.fault.kind != FaultKind::None) args.insert(args.end(), {"--inject-fault", fault_injection_text(req.fault)});
  if (!req.trace.empty())
    args.insert(args.end(), {"--trace", req.trace, "--trace-steps",
                             std::to_string(req.trace_first) + ":" + std::to_string(req.trace_last)});
  if (isatty(STDERR_FILENO)) args.push_back("--progress");
  // Every rank stores this launch's id with its runs (host_info.launch_id): see the failure handling below.
  const std::string launch_id = fmt::format("{}-{}", getpid(), Clock::now().time_since_epoch().count());
  std::vector<std::string> mpirun_extra = bed ? testbed::mpirun_args(*bed) : std::vector<std::string>{};
  mpirun_extra.insert(mpirun_extra.end(), {"-x", "DDPLAB_LAUNCH_ID=" + launch_id});
  LaunchPlan plan = plan_launch(np, args, mpirun_extra);
  plan.graceful_stop_s = kGracefulStopS;  // the ranks stop after a step, all rows stored (trainer.cpp)
  if (bed) retry_unstarted(plan, testbed::kLaunchAttempts);
  std::fprintf(stderr, "ddplab: %s\n", shell_join(plan.argv).c_str());
  const JobEnd end = execute(plan);
  if (bed) testbed::tag_runs(req.db, before, launch_id, *bed);
  if (end.exit_code() != 0) {
    // Interrupted, or a rank died and the rest of the job was killed with it: whatever run this launch left
    // running is marked so, with the steps its ranks flushed and the reason they gave. Only this launch's runs:
    // another job may be writing the same store.
    Store store(req.db);
    const JobEndRecord rec =
        record_job_end(store, launch_runs(store, before, launch_id), JobOutcome{end.signal, end.failures, end.flights});
    for (const std::string& why : rec.unreadable)
      std::fprintf(stderr, "ddplab: a flight recorder dump was unreadable (%s); left out\n", why.c_str());
    if (rec.flight_run)
      std::fprintf(stderr, "ddplab: the ranks' last calls are stored: ddplab report --flight %lld --db %s\n",
                   static_cast<long long>(rec.flight_run), req.db.c_str());
    for (const RunRow& r : rec.marked)
      std::fprintf(stderr, "ddplab: run %lld (%s) marked %s\n", static_cast<long long>(r.id), r.info.strategy.c_str(),
                   end.signal ? "interrupted" : "failed");
    for (const RunRow& r : rec.stopped)
      std::fprintf(stderr, "ddplab: run %lld (%s) stored interrupted: %s\n", static_cast<long long>(r.id),
                   r.info.strategy.c_str(), r.reason.c_str());
    if (end.signal)
      std::fprintf(stderr, "ddplab: interrupted (%s); measurements flushed so far are kept in %s\n",
                   strsignal(end.signal), req.db.c_str());
    else
      std::fprintf(stderr, "error: the MPI job failed (mpirun exit %d); measurements flushed so far are kept in %s\n",
                   end.rc, req.db.c_str());
  }
  return end.exit_code();
}

void add_run(CLI::App& app) {
  auto req = std::make_shared<RunRequest>();
  auto* cmd =
      app.add_subcommand("run", "Train a scenario's strategies on real data over MPI and store the measurements");
  cmd->add_option("scenario", req->scenario, "Scenario TOML file (e.g. scenarios/default.toml)")->required();
  cmd->add_option("--np", req->np, "Ranks to start (default: the scenario's cluster.world_size)")
      ->check(positive_int());
  cmd->add_option("--db", req->db, "Results store (SQLite)")->capture_default_str();
  cmd->add_option("--max-steps", req->max_steps, "Stop after this many steps (overrides train.max_steps; 0 = no limit)")
      ->check(non_negative_int());
  cmd->add_option("--batch-size", req->batch_size, "Samples per rank per step (overrides train.batch_size)")
      ->check(positive_int());
  cmd->add_option("--seed", req->seed,
                  "Initial weights and data order (overrides train.seed; repeats of one configuration)");
  cmd->add_option("--backend", req->backend,
                  "cpu (OpenBLAS + MPI), cuda (cuBLAS + NCCL, one rank per GPU) or cuda+mpi (GPU compute, MPI "
                  "through host memory; ranks may share a GPU); overrides train.backend")
      ->check(CLI::IsMember({"cpu", "cuda", "cuda+mpi"}));
  cmd->add_option("--trace", req->trace, "Write a Chrome trace JSON (Perfetto) of the steps chosen by --trace-steps");
  cmd->add_option_function<std::string>(
         "--trace-steps",
         [req](const std::string& v) {
           const auto colon = v.find(':');
           try {
             if (colon == std::string::npos) throw InputError(v);
             req->trace_first = std::stoll(v.substr(0, colon));
             req->trace_last = std::stoll(v.substr(colon + 1));
           } catch (const std::exception&) {
             throw CLI::ValidationError("--trace-steps",
                                        "expected FIRST:LAST (steps FIRST..LAST-1), got \"" + v + "\"");
           }
           if (req->trace_first < 0 || req->trace_last <= req->trace_first)
             throw CLI::ValidationError("--trace-steps", "expected 0 <= FIRST < LAST, got \"" + v + "\"");
         },
         "Steps to trace, FIRST:LAST (default 10:13)")
      ->needs("--trace");
  cmd->add_option_function<std::string>(
         "--resume",
         [req](const std::string& v) {
           if (v.empty()) return void(req->resume = 0);
           std::size_t used = 0;
           long long id = 0;
           try {
             id = std::stoll(v, &used);
           } catch (const std::exception&) {
             used = 0;
           }
           if (used != v.size() || id < 1)
             throw CLI::ValidationError("--resume", "expected a run id, got \"" + v + "\"");
           req->resume = id;
         },
         "Continue a failed, interrupted or abandoned run from its newest checkpoint (train.checkpoint_every): RUN_ID, "
         "or without it the scenario's newest such run; bit for bit as if it had not stopped")
      ->expected(0, 1);
  cmd->add_flag("--testbed", req->testbed,
                "Run one rank per host of the emulated cluster (`ddplab testbed up`); --np must match its hosts");
  cmd->add_option_function<std::string>(
         "--inject-fault",
         [req](const std::string& v) {
           req->fault =
               parse_fault_injection(v, "--inject-fault", {FaultKind::Exit, FaultKind::Perturb, FaultKind::Bitflip});
         },
         "For tests of failure handling: exit:RANK:STEP ends that rank as the step begins, perturb:RANK changes one "
         "of its parameters before the final check, bitflip:RANK:STEP flips a bit of one after the step")
      ->group("Testing");
  cmd->add_flag("--progress", req->progress, "Show a live progress line (set automatically on a terminal)")
      ->group("");  // internal: passed by the launcher to the ranks
  cmd->footer(
      "On one machine this starts `mpirun -np N` of itself (adding --allow-run-as-root as root and --oversubscribe\n"
      "when N exceeds the cores). Under mpirun or srun it joins the job directly.");
  cmd->callback([req] { g_exit_code = run_scenario(*req); });
}

}  // namespace ddplab::cli
