// One scenario's training on this rank: each strategy in turn, driven through its units (trainer_*.hpp):
// placement, the data's plan, the optimizer's, a resume, the run's registration, the step loop, and the end
// of the run (final evaluation, resources, trace, the replicas' final check).
#include "ddplab/runtime/trainer.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <optional>

#include <fmt/format.h>

#include "ddplab/core/error.hpp"
#include "ddplab/core/job_notes.hpp"
#include "ddplab/core/units.hpp"
#include "ddplab/runtime/checkpointer.hpp"
#include "ddplab/runtime/partition.hpp"
#include "ddplab/runtime/watchdog.hpp"
#include "stop_check.hpp"
#include "trainer_checks.hpp"
#include "trainer_eval.hpp"
#include "trainer_register.hpp"
#include "trainer_resume.hpp"
#include "trainer_steps.hpp"

namespace ddplab {
namespace {

Resources resource_usage(int rank, TrainerClock::time_point start) {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  Resources r;
  r.rank = rank;
  r.peak_rss_bytes = static_cast<std::int64_t>(u.ru_maxrss) * 1024;
  r.cpu_s = static_cast<double>(u.ru_utime.tv_sec + u.ru_stime.tv_sec) +
            1e-6 * static_cast<double>(u.ru_utime.tv_usec + u.ru_stime.tv_usec);
  r.wall_s = seconds_since(start);
  return r;
}

Data load_data(const Scenario& s) { return {load_scenario_data(s, true), load_scenario_data(s, false)}; }

struct StrategyOutcome {
  bool ok = true;
  std::string error;
  bool stopped = false;  // on request (stop_check.hpp: the launcher or a signal): stored interrupted, the job ends
};

// This rank's part in the data. A pipeline cuts each batch into parallel.microbatches: an epoch's last batch
// with fewer samples is dropped.
DataShare data_share(const Scenario& sc, const Placement& place) {
  const std::size_t min_batch = place.rp.layout().pp() > 1 ? static_cast<std::size_t>(sc.parallel.microbatches) : 1;
  return {place.worker ? place.replica : 0, place.workers, min_batch};
}

// The learning rate of every update: the scaling rule takes the global batch of one update. Rank 0 describes
// a plan that is not one constant rate.
OptimizerConfig plan_optimizer(const TrainConfig& tr, const StrategyConfig& st, int workers, std::int64_t total_steps,
                               int rank) {
  const OptimizerConfig oc = optimizer_config(tr, tr.batch_size * workers * st.accumulate_steps,
                                              std::max<std::int64_t>(1, total_steps / st.accumulate_steps));
  if (rank == 0 && (oc.lr.scale_rule != "none" || oc.lr.warmup > 0 || oc.lr.schedule != "constant")) {
    std::printf("%s: %s\n", tr.optimizer.c_str(), oc.lr.describe().c_str());
    std::fflush(stdout);
  }
  return oc;
}

// Collective: every rank's resource use, stored by rank 0.
void store_resources(StrategyRun& r, TrainerClock::time_point start) {
  Resources res = resource_usage(r.comm.rank(), start);
  if (r.place.ops->device_memory())
    res.peak_device_bytes =
        static_cast<std::int64_t>(r.place.ops->peak_device_bytes() + r.place.plan_comm.device_bytes());
  std::vector<Resources> all(static_cast<std::size_t>(r.comm.size()));
  r.comm.gather(&res, sizeof res, all.data(), 0);
  if (r.store)
    for (const auto& x : all) r.store->add_resources(r.run, x);
}

// Collective: the traced steps' timeline, stored with the run and written where --trace asks.
void write_trace(StrategyRun& r, TraceCollector& trace, std::int64_t steps) {
  const std::string trace_file = trace.write(
      r.comm, r.store, r.run, {{"scenario", r.sc.name}, {"strategy", r.st.to_json()}, {"world_size", r.comm.size()}});
  if (!trace_file.empty())
    std::printf("trace of steps %lld..%lld written to %s\n", static_cast<long long>(trace.first_traced()),
                static_cast<long long>(trace.last_traced()), trace_file.c_str());
  else if (!r.opt.trace_path.empty() && r.comm.rank() == 0)
    std::printf("trace: no step in %lld..%lld ran (the run took %lld steps); nothing written\n",
                static_cast<long long>(r.opt.trace_first), static_cast<long long>(r.opt.trace_last - 1),
                static_cast<long long>(steps));
}

// Collective: the trained model checkpointed (when checkpoints are on) and every replica compared with
// replica 0's, bit for bit; the run stored completed, or failed with the ranks that differ.
StrategyOutcome final_check(StrategyRun& r, Checkpointer& checkpointer, TrainingState& state,
                            TrainerClock::time_point start) {
  Placement& p = r.place;
  StrategyOutcome out;
  assemble_server_models(r.comm, *p.ops, *p.model, p.strategy);
  r.executor.gather_parameters();
  if (checkpointer.enabled()) checkpointer.save(state.step, true, r.executor, state.counters(seconds_since(start)));
  out.error = check_identical(r.comm, p.rp, *p.ops, *p.model, r.opt.fault);
  if (p.rp.split()) r.comm.broadcast(&state.last_loss, sizeof state.last_loss, p.rp.loss_rank());  // for rank 0's line
  out.ok = out.error.empty();
  if (r.store) r.store->finish_run(r.run, out.ok ? RunStatus::Completed : RunStatus::Failed, out.error);
  return out;
}

// Rank 0: wall clock of the whole run (evaluation included) and replica 0's last loss (its last stage's, sent
// to rank 0 by final_check, with a split): `ddplab report` gives the stored figures (samples over the slowest
// rank's step times, loss averaged over ranks).
void print_summary(StrategyRun& r, const TrainingState& state, double wall, const Evaluation& final_eval, bool ok) {
  const RankParallel& rp = r.place.rp;
  // A language model's held-out figures are per token: loss in nats, its perplexity, next-token accuracy.
  const std::string held_out =
      r.place.model->labels_per_sample() > 1
          ? fmt::format("val loss {:.4f} (perplexity {:.2f}, next-token acc {:.4f})", final_eval.test_loss,
                        std::exp(final_eval.test_loss), final_eval.test_accuracy)
          : fmt::format("test acc {:.4f}", final_eval.test_accuracy);
  std::printf("%-12s %d ranks  %lld steps in %s  %.0f samples/s (wall clock)  last loss %.4f (rank %d)  %s%s\n",
              r.st.name.c_str(), r.comm.size(), static_cast<long long>(state.step), format_duration(wall).c_str(),
              static_cast<double>(state.samples_total) / wall, state.last_loss, rp.loss_rank(), held_out.c_str(),
              !ok          ? ""
              : rp.split() ? "  each share identical across its DP group"
                           : "  params identical on all ranks");
  std::fflush(stdout);
}

// Collective: after the last step, the policy's end-of-run work (local SGD ends on the average of the ranks'
// models, so that they agree), the final evaluation, the resources, the trace and the final check.
StrategyOutcome finish_strategy(StrategyRun& r, TrainingState& state, Checkpointer& checkpointer, StepLoop& loop,
                                Where& where) {
  r.executor.finish(state.step);
  loop.flush();
  loop.finish_progress();
  const Evaluation final_eval = evaluate_run(r, state.step, loop.start());
  store_resources(r, loop.start());
  write_trace(r, loop.trace(), state.step);
  loop.report_augmentation();
  const StrategyOutcome out = final_check(r, checkpointer, state, loop.start());
  where.run = -1;
  if (r.comm.rank() == 0) print_summary(r, state, seconds_since(loop.start()), final_eval, out.ok);
  return out;
}

// Collective: one strategy trained, from the start or from `resume`'s checkpoint, stored as its run.
StrategyOutcome train_strategy(const Scenario& sc, const StrategyConfig& st, const Data& data, Communicator& comm,
                               Store* store, const WorkerOptions& opt, Where& where, const Resume* resume) {
  const int rank = comm.rank();
  Placement place(sc, st, comm);
  const DataPlan plan = plan_data(sc, st.name, data.train, data_share(sc, place), rank);
  // Each rank's loss weights under data.balance = "class_weighted" (resample is the sampler's).
  if (sc.data.balance == "class_weighted" && place.worker)
    place.model->set_class_weights(balanced_class_weights(plan.histograms.at(static_cast<std::size_t>(rank))));
  const OptimizerConfig oc = plan_optimizer(sc.train, st, place.workers, plan.total_steps, rank);
  PlanExecutor executor(place.executor_comm(), *place.ops, *place.model, place.strategy, oc);
  place.rp.attach(executor);
  TrainingState state;
  state.next_check = sc.train.consistency_every;
  if (resume) state = restore_state(sc, st, comm, store, opt, *resume, executor, place, plan.total_steps);
  StrategyRun r{sc,  st,    data, comm,     store,
                opt, place, plan, executor, register_run(sc, st, comm, store, place, plan, oc, resume)};
  where.run = r.run;
  Checkpointer checkpointer(sc, st, comm, store, r.run, opt.db_path);
  if (resume && rank == 0) announce_resume(st, comm.size(), *resume, r.run, state.first_step, plan.total_steps);
  apply_stragglers(sc.cluster, comm, executor);
  StepLoop loop(r, state, checkpointer, where);
  if (!loop.run()) return {.ok = true, .error = {}, .stopped = true};
  return finish_strategy(r, state, checkpointer, loop, where);
}

// Keeps what was measured (flushed) and marks the unfinished run failed. Best effort: we are aborting.
void fail_run(Store* store, const Where& where, const std::string& reason) {
  if (!store || where.run < 0) return;
  try {
    store->finish_run(where.run, RunStatus::Failed, reason);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: could not mark run %lld failed: %s\n", static_cast<long long>(where.run), e.what());
  }
}

}  // namespace

int run_worker(const Scenario& sc, Communicator& world, const WorkerOptions& opt) {
  install_stop_signals();  // under srun (no job folder) a rank's SIGTERM is a request to stop
  // Every MPI call of the job is watched: one stuck past train.comm_timeout_s aborts the job, naming it.
  WatchedCommunicator comm(world, sc.train.comm_timeout_s);
  std::unique_ptr<Store> store;
  Where where;
  // A rank's failure: said, left as a note with its flight recorder for the launcher, the run marked, the job
  // ended with the error's exit code (mpirun passes it on to the launcher).
  auto fail = [&](const std::string& why, int exit_code) {
    std::fprintf(stderr, "error: %s\n", why.c_str());
    write_job_note(rank_note("failure"), why);
    comm.dump_flight();
    fail_run(store.get(), where, why);
    std::fflush(stderr);
    comm.abort(exit_code);
  };
  auto named = [&](const std::exception& e) {
    const std::string at = where.step >= 0 ? fmt::format(" step {}", where.step) : std::string();
    return fmt::format("rank {}{}: {}", comm.rank(), at, e.what());
  };
  try {
    if (comm.rank() == 0) store = std::make_unique<Store>(opt.db_path);
    std::optional<Resume> resume;
    if (opt.resume_run != 0) resume = resolve_resume(sc, comm, store.get(), opt.resume_run);
    const Data data = load_data(sc);
    int failures = 0;
    for (std::size_t i = resume ? resume->strategy : 0; i < sc.strategies.size(); ++i) {
      const StrategyConfig& st = sc.strategies[i];
      // A stop asked for as the last strategy ended: the next one is not started.
      if (i > (resume ? resume->strategy : 0) && stop_requested_everywhere(comm)) break;
      const StrategyOutcome out = train_strategy(sc, st, data, comm, store.get(), opt, where,
                                                 resume && i == resume->strategy ? &*resume : nullptr);
      if (out.stopped) break;  // the strategies after it are not started
      if (!out.ok) {
        ++failures;
        if (comm.rank() == 0) std::fprintf(stderr, "error: strategy %s: %s\n", st.name.c_str(), out.error.c_str());
      }
    }
    // A rank stopped by its own signal (srun) exits as the signal would have had it: 128 + its number.
    if (const int sig = g_stop_signal.load(); sig != 0) return 128 + sig;
    return failures == 0 ? 0 : RunFault::kExitCode;  // replicas that ended apart: the run failed
  } catch (const RunFault& e) {
    // The trainer's own name their rank and step; a communicator's does not.
    fail(e.rank() ? e.what() : named(e), e.exit_code());
  } catch (const std::exception& e) {
    fail(named(e), rank_exit_code(e));
  }
  return 1;  // not reached: abort ends the process
}

}  // namespace ddplab
