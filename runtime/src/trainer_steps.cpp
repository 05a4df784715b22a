#include "trainer_steps.hpp"

#include <cmath>
#include <cstdio>
#include <cstdlib>

#include <fmt/format.h>

#include "ddplab/core/error.hpp"
#include "ddplab/runtime/slowdown.hpp"
#include "trainer_checks.hpp"
#include "trainer_eval.hpp"

namespace ddplab {
namespace {

// [data] augment_* set on `input`: Fashion-MNIST's 28 x 28 images, black (0 before normalisation) outside.
AugmentConfig augmented(InputPipeline& input, const Scenario& sc) {
  const AugmentConfig a = augment_config(sc.data);
  if (a.active()) input.set_augment(a, 28, -kFashionMnistMean / kFashionMnistStd, sc.train.seed);
  return a;
}

// A resumed run's clock goes on from the checkpoint's: time to accuracy leaves the time it was down out.
TrainerClock::time_point run_start(double wall_before) {
  return TrainerClock::now() -
         std::chrono::duration_cast<TrainerClock::duration>(std::chrono::duration<double>(wall_before));
}

// Collective: all ranks share the machine's monotonic clock, so rank 0's start is a common origin for the trace.
TrainerClock::time_point common_origin(Communicator& comm, TrainerClock::time_point start) {
  TrainerClock::time_point origin = start;
  comm.broadcast(&origin, sizeof origin, 0);
  return origin;
}

}  // namespace

void apply_stragglers(const ClusterConfig& cluster, Communicator& comm, PlanExecutor& executor) {
  for (int r = 0; r < comm.size(); ++r) {
    const Slowdown s(cluster.compute_factor(r));
    if (r == comm.rank()) executor.set_compute_factor(s.factor());
    if (comm.rank() == 0 && s.active()) std::printf("straggler: rank %d computes %gx slower\n", r, s.factor());
  }
}

StepLoop::StepLoop(StrategyRun& r, TrainingState& state, Checkpointer& checkpointer, Where& where)
    : r_(r),
      state_(state),
      checkpointer_(checkpointer),
      where_(where),
      rank_(r.comm.rank()),
      input_(*r.place.ops, r.data.train, r.sc.train.batch_size),
      augment_(augmented(input_, r.sc)),
      progress_(r.opt.progress && rank_ == r.place.rp.loss_rank(), r.st.name, r.plan.total_steps),
      start_(run_start(state.wall_before)),
      trace_(r.opt, r.st.name, r.sc.strategies.size() > 1, common_origin(r.comm, start_), r.plan.total_steps,
             r.place.strategy.pattern().period()) {}

void StepLoop::flush() {
  Communicator& comm = r_.comm;
  const std::size_t bytes = pending_.size() * sizeof(StepMetrics);
  std::vector<StepMetrics> all(comm.rank() == 0 ? pending_.size() * static_cast<std::size_t>(comm.size()) : 0);
  comm.gather(pending_.data(), bytes, all.data(), 0);
  if (r_.store)
    for (const auto& m : all) r_.store->add_step(r_.run, m);
  if (r_.store) r_.store->flush();
  pending_.clear();
}

bool StepLoop::run() {
  const auto& tr = r_.sc.train;
  const std::int64_t total = r_.plan.total_steps;
  state_.step = state_.first_step;
  StopCheck stop(r_.st.accumulate_steps, state_.first_step);
  // Batches in step order, so the input pipeline can upload batch s + 1 while step s runs.
  input_.plan(*r_.plan.sampler, tr.epochs, total, r_.plan.join ? r_.plan.steps_per_epoch : 0, r_.plan.share.min_batch);
  const auto first = static_cast<std::size_t>(state_.first_step);
  int next_b = first >= input_.steps() ? 0 : input_.load_step(first, r_.place.worker);
  for (std::size_t bi = first; bi < input_.steps(); ++bi) {
    const int b = next_b;
    const StepMetrics m = train_step(bi, b, next_b);
    watch_replicas();
    const std::int64_t step = ++state_.step;
    progress_.update(step, state_.last_loss, state_.samples_total);
    if (static_cast<int>(pending_.size()) >= r_.opt.flush_every) flush();
    if (tr.eval_every > 0 && step % tr.eval_every == 0 && step < total) evaluate_run(r_, step, start_);
    const auto [saved, saved_ok] = save_if_due();
    if (step < total && stop.stop_after(r_.comm, step, m.step_s)) {
      stop_here(saved, saved_ok);
      return false;
    }
  }
  where_.step = -1;
  r_.comm.set_step(-1);
  return true;
}

StepMetrics StepLoop::train_step(std::size_t bi, int b, int& next_b) {
  Placement& p = r_.place;
  const std::int64_t step = state_.step;
  if (r_.opt.fault.strikes(FaultKind::Exit, rank_, step)) {
    std::fprintf(stderr, "rank %d step %lld: exiting on purpose (--inject-fault)\n", rank_,
                 static_cast<long long>(step));
    std::_Exit(3);
  }
  if (r_.plan.join) r_.executor.set_grad_divisor(r_.plan.join_divisor(r_.sc.data, step, r_.st.accumulate_steps));
  where_.step = step;
  r_.comm.set_step(step);
  StepMetrics m;
  m.step = step;
  m.rank = rank_;
  m.samples = p.worker && p.rp.counts_samples() ? b : 0;  // a step's rows sum to the global batch
  const auto t0 = TrainerClock::now();
  if (p.worker) {
    const auto w0 = TrainerClock::now();
    input_.ready();
    input_wait_s_ += seconds_since(w0);
  }
  const std::size_t slot = bi % 2;
  if (bi + 1 < input_.steps()) next_b = input_.load_step(bi + 1, p.worker);
  const StepRecord rec = r_.executor.run_step(step, input_.x(slot), input_.y(slot), b);
  trace_.add(rank_, step, rec);
  m.loss = rec.loss;  // NaN on a server and before a pipeline's last stage: stored as NULL, not averaged
  const bool counts_loss = p.worker && b > 0 && p.rp.holds_loss();
  if (counts_loss && !std::isfinite(m.loss))
    throw RunFault(fmt::format("rank {} step {}: loss is {} (diverged; lower train.lr?)", rank_, step, m.loss),
                   {.rank = rank_, .step = step, .op = "loss"});
  m.compute_s = rec.compute_s;
  m.comm_s = rec.comm_s;
  m.exposed_comm_s = rec.exposed_comm_s;
  m.optimizer_s = rec.optimizer_s;
  m.bytes_sent = static_cast<std::int64_t>(rec.bytes_sent);
  m.step_s = seconds_since(t0);
  pending_.push_back(m);
  if (counts_loss) state_.last_loss = m.loss;
  state_.samples_total += r_.plan.samples_at(step, b);
  return m;
}

void StepLoop::watch_replicas() {
  Placement& p = r_.place;
  const int every = r_.sc.train.consistency_every;
  const std::int64_t step = state_.step;
  if (r_.opt.fault.strikes(FaultKind::Bitflip, rank_, step)) flip_a_bit(*p.ops, *p.model);
  // Followed for the consistency checks, and for checkpoints, which record whether the replicas agree
  // (elastic resume needs them to).
  if (every > 0 || checkpointer_.enabled())
    state_.agreement.after(p.strategy.plan(step), p.strategy.bucketing().buckets.size());
  if (every <= 0 || step + 1 < state_.next_check || !state_.agreement.agree()) return;
  r_.executor.gather_parameters();
  if (const std::string bad = check_consistency(r_.comm, *p.ops, *p.model, p.strategy, step, every); !bad.empty())
    throw RunFault(bad, {.rank = rank_, .step = step, .op = "consistency check"});
  state_.next_check = step + 1 + every;
}

std::pair<bool, bool> StepLoop::save_if_due() {
  const std::int64_t step = state_.step;
  if (!checkpointer_.due(step) || step >= r_.plan.total_steps) return {false, false};
  flush();  // a checkpoint never has steps before it unstored
  return {true, checkpointer_.save(step, false, r_.executor, counters())};
}

void StepLoop::stop_here(bool saved, bool saved_ok) {
  const std::int64_t step = state_.step;
  flush();
  const bool kept =
      saved_ok || (checkpointer_.enabled() && !saved && checkpointer_.save(step, false, r_.executor, counters()));
  const std::string why = fmt::format("stopped on request after step {}{}", step,
                                      kept ? " (checkpoint there: ddplab run --resume continues it)" : "");
  if (r_.store) r_.store->finish_run(r_.run, RunStatus::Interrupted, why);
  if (rank_ == 0) std::printf("%s: %s\n", r_.st.name.c_str(), why.c_str());
  progress_.finish();
  where_ = Where{};
  r_.comm.set_step(-1);
}

void StepLoop::report_augmentation() const {
  const std::int64_t step = state_.step;
  if (!augment_.active() || rank_ != 0 || step <= 0) return;
  std::printf(
      "augmentation (rank 0): %.2f ms a batch on the loader thread; the steps waited %.2f ms each for "
      "their batch\n",
      1e3 * input_.augment_seconds() / static_cast<double>(step), 1e3 * input_wait_s_ / static_cast<double>(step));
}

}  // namespace ddplab
