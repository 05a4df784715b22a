// Private to the trainer: the run a strategy's training is stored as, and what rank 0 says of a resumed one.
#pragma once
#include <cstdint>

#include "ddplab/core/scenario.hpp"
#include "ddplab/core/store.hpp"
#include "ddplab/runtime/communicator.hpp"
#include "ddplab/strategies/optimizer.hpp"
#include "trainer_data.hpp"
#include "trainer_placement.hpp"
#include "trainer_resume.hpp"

namespace ddplab {

// Collective: the run's id, on every rank. Resumed on as many ranks, the stored run reads running again,
// without its rows past the checkpoint (Store::resume_run); otherwise, elastic resumes included, rank 0 begins
// a new one, its configuration the scenario's with the layout, the strategy, the step pattern, the data's
// partition and the learning-rate plan (and, elastic, the run it continues).
std::int64_t register_run(const Scenario& sc, const StrategyConfig& st, Communicator& comm, Store* store,
                          Placement& place, const DataPlan& plan, const OptimizerConfig& oc, const Resume* resume);

// Rank 0: which run `run` continues, from which step of how many.
void announce_resume(const StrategyConfig& st, int world, const Resume& resume, std::int64_t run,
                     std::int64_t first_step, std::int64_t total_steps);

}  // namespace ddplab
