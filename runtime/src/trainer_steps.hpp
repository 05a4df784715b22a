// Private to the trainer: the steps of one strategy's run. Each step takes its batch from the input pipeline
// (which loads, and with [data] augment_* augments, the next batch while a step runs), runs the strategy's
// plan and records its row. Between steps come the replicas' consistency checks, the gathers of the rows to
// rank 0, the periodic evaluations and checkpoints, and the looks for a request to stop.
#pragma once
#include <cstdint>
#include <utility>
#include <vector>

#include "ddplab/core/scenario.hpp"
#include "ddplab/core/store.hpp"
#include "ddplab/runtime/checkpointer.hpp"
#include "ddplab/runtime/input_pipeline.hpp"
#include "ddplab/runtime/progress.hpp"
#include "stop_check.hpp"
#include "trace_collector.hpp"
#include "trainer_run.hpp"

namespace ddplab {

// [cluster].stragglers, as the simulator reads them: this rank's executor computes as slowly as its factor
// says, and rank 0 names every straggler. Every rank checks every factor, so a bad one stops them all before
// the first collective.
void apply_stragglers(const ClusterConfig& cluster, Communicator& comm, PlanExecutor& executor);

class StepLoop {
 public:
  // Collective: starts the run's clock (a resumed run's goes on from its checkpoint's), rank 0's the common
  // origin of the trace.
  StepLoop(StrategyRun& r, TrainingState& state, Checkpointer& checkpointer, Where& where);

  // Collective: trains from state.first_step to the plan's total steps. False when stopped on request: then
  // every step so far is stored, with a checkpoint to resume from when they are on, and the run is stored
  // interrupted.
  bool run();
  // Collective: rank 0 gathers every rank's rows not stored yet (all ranks ran the same steps) and stores them.
  void flush();
  void finish_progress() { progress_.finish(); }
  TrainerClock::time_point start() const { return start_; }
  TraceCollector& trace() { return trace_; }
  // Rank 0, with augmentation on: what it cost the loader and how long the steps waited for their batch.
  void report_augmentation() const;

 private:
  // Step `bi` of the input's plan on batch `b`, the next one (its size into `next_b`) loading meanwhile.
  StepMetrics train_step(std::size_t bi, int b, int& next_b);
  // After a step: the bitflip fault, and train.consistency_every's check when it is due.
  void watch_replicas();
  // Saves the periodic checkpoint when one is due; returns whether it was due and whether it was stored.
  std::pair<bool, bool> save_if_due();
  // Stopped on request: every step so far stored, a checkpoint kept unless the last one was just stored.
  void stop_here(bool saved, bool saved_ok);
  nlohmann::json counters() const { return state_.counters(seconds_since(start_)); }

  StrategyRun& r_;
  TrainingState& state_;
  Checkpointer& checkpointer_;
  Where& where_;
  const int rank_;
  InputPipeline input_;
  const AugmentConfig augment_;  // set on input_
  double input_wait_s_ = 0;      // the steps' wait for their batch
  std::vector<StepMetrics> pending_;
  Progress progress_;
  TrainerClock::time_point start_;
  TraceCollector trace_;
};

}  // namespace ddplab
