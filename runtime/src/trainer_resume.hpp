// Private to the trainer: resuming a run (WorkerOptions::resume_run) from its checkpoint. Rank 0 finds the
// run and every rank learns it; then every rank loads its state into its executor, on as many ranks as the
// run had, or (elastic.hpp) re-cut from every old rank's file on another number.
#pragma once
#include <cstdint>
#include <string>

#include "ddplab/core/scenario.hpp"
#include "ddplab/core/store.hpp"
#include "ddplab/runtime/communicator.hpp"
#include "ddplab/runtime/plan_executor.hpp"
#include "ddplab/runtime/trainer.hpp"
#include "trainer_placement.hpp"
#include "trainer_run.hpp"

namespace ddplab {

// The run a job continues, as rank 0 found it and broadcast it to every rank.
struct Resume {
  std::int64_t run = 0, step = 0;
  std::size_t strategy = 0;  // index in the scenario
  int old_world = 0;         // the run's ranks: another number than now is an elastic resume (elastic.hpp)
  std::string folder;        // the checkpoint's
  bool elastic(int world) const { return old_world != world; }
};

// Collective: rank 0 looks the run up (find_resume_point, which the launcher checked already) and every rank
// learns it; a refusal is rank 0's message on every rank (InputError).
Resume resolve_resume(const Scenario& sc, Communicator& comm, Store* store, std::int64_t run);

// Collective: every rank loads its state from the checkpoint into `executor` and returns the counters it
// holds, before the stored run is touched, so that a file one rank cannot read leaves the run as it was: then
// rank 0 drops that checkpoint from the store and every rank throws a RunFault naming the ranks that failed.
// Elastic, the step is where this world has seen as many samples (at most the run's `total_steps`).
TrainingState restore_state(const Scenario& sc, const StrategyConfig& st, Communicator& comm, Store* store,
                            const WorkerOptions& opt, const Resume& resume, PlanExecutor& executor,
                            const Placement& place, std::int64_t total_steps);

}  // namespace ddplab
