// Data-parallel training of one scenario on this rank: every strategy of the scenario in turn, on the same
// data and seed, measured per step and stored by rank 0.
#pragma once
#include <cstdint>
#include <string>

#include "ddplab/core/scenario.hpp"
#include "ddplab/runtime/communicator.hpp"
#include "ddplab/runtime/fault_injection.hpp"

namespace ddplab {

struct WorkerOptions {
  std::string db_path = "results/ddplab.db";
  bool progress = false;   // live progress line on rank 0 (the launcher sets it when it runs on a terminal)
  int flush_every = 50;    // steps between gathers of per-rank metrics to rank 0
  std::string trace_path;  // Chrome trace JSON of steps [trace_first, trace_last); empty = none. With several
                           // strategies, each gets its own file: trace.json -> trace.<strategy>.json
  std::int64_t trace_first = 0, trace_last = 0;
  // > 0: continue that run from its newest checkpoint (core/resume.hpp checks it), then train the scenario's
  // strategies after its own; the ones before it are not trained again. -1: the scenario's newest resumable
  // run, as rank 0 finds it. 0: no resume.
  std::int64_t resume_run = 0;
  FaultInjection fault;  // a test's: exit, perturb or bitflip (fault_injection.hpp); none by default
};

// Returns the process exit code: 0 when every strategy completed and the final parameters of all ranks are
// bit-identical. Errors on any rank name the rank and step, mark the run failed and abort the job.
int run_worker(const Scenario& scenario, Communicator& comm, const WorkerOptions& options);

}  // namespace ddplab
