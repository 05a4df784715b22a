// Private to the trainer: what the units of one strategy's training (trainer.cpp drives them: placement, data,
// resume, the step loop, evaluation, the final check) share.
#pragma once
#include <chrono>
#include <cstdint>
#include <vector>

#include <nlohmann/json.hpp>

#include "ddplab/core/scenario.hpp"
#include "ddplab/core/store.hpp"
#include "ddplab/runtime/communicator.hpp"
#include "ddplab/runtime/data.hpp"
#include "ddplab/runtime/plan_executor.hpp"
#include "ddplab/runtime/trainer.hpp"
#include "ddplab/strategies/replica_agreement.hpp"
#include "trainer_data.hpp"
#include "trainer_placement.hpp"

namespace ddplab {

using TrainerClock = std::chrono::steady_clock;
inline double seconds_since(TrainerClock::time_point t) {
  return std::chrono::duration<double>(TrainerClock::now() - t).count();
}

struct Data {
  Dataset train, test;
};

// Where a rank is, so an error can name the run and step.
struct Where {
  std::int64_t run = -1;
  std::int64_t step = -1;
};

// What a run has done so far: from the start, or, resumed, as its checkpoint holds it (trainer_resume.hpp).
struct TrainingState {
  std::int64_t first_step = 0;  // the step training starts at
  std::int64_t step = 0;        // the steps done
  std::int64_t samples_total = 0;
  std::int64_t next_check = 0;  // the step after which train.consistency_every's next check is due
  double last_loss = 0;
  double wall_before = 0;      // seconds the run trained before its checkpoint
  ReplicaAgreement agreement;  // train.consistency_every, and what a checkpoint records

  // What a checkpoint stores of it (Checkpointer::save's `trainer`), at wall clock `wall_s`.
  nlohmann::json counters(double wall_s) const {
    return nlohmann::json{{"step", step},     {"samples_total", samples_total}, {"last_loss", last_loss},
                          {"wall_s", wall_s}, {"next_check", next_check},       {"agreement", agreement.state()}};
  }
};

// One strategy's training on this rank, as the units after placement and registration see it.
struct StrategyRun {
  const Scenario& sc;
  const StrategyConfig& st;
  const Data& data;
  Communicator& comm;
  Store* store;  // rank 0's; null elsewhere
  const WorkerOptions& opt;
  Placement& place;
  const DataPlan& plan;
  PlanExecutor& executor;
  std::int64_t run;  // its id in the store, on every rank
};

}  // namespace ddplab
