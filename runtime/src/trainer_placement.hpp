// Private to the trainer: where one strategy trains on this rank. The backend's ops and the communicator the
// plan's collectives go through, the rank's place in the [parallel] layout, its model (its stage's share with
// a split) holding the initial parameters every replica starts from, the strategy over that model, and
// whether the rank takes batches.
#pragma once
#include <memory>
#include <string>

#include "ddplab/core/scenario.hpp"
#include "ddplab/runtime/communicator.hpp"
#include "ddplab/runtime/model.hpp"
#include "ddplab/runtime/model_parallel.hpp"
#include "ddplab/runtime/ops.hpp"
#include "ddplab/strategies/strategy.hpp"

namespace ddplab {

struct Placement {
  // Collective over `comm`: NCCL's bootstrap (backend "cuda"), the layout's groups, the initial parameters.
  Placement(const Scenario& sc, const StrategyConfig& st, Communicator& comm);

  std::unique_ptr<Ops> ops;
  // Backend "cuda": the plan's collectives go through NCCL on device buffers; everything else (metrics,
  // evaluation sums, the initial broadcast) stays on MPI with host buffers. "cuda+mpi" keeps MPI for the
  // plan too, staging buckets through host memory (PlanExecutor).
  std::unique_ptr<Communicator> nccl;
  Communicator& plan_comm;
  std::string backend_name;  // as the run is stored
  int eval_batch;
  int ranks_per_node;
  // A [parallel] layout splits the model: this rank holds its stage's share, syncs it over its DP group and
  // is a replica's rank as its DP group's rank (model_parallel.hpp). Without one, the DP group is the world.
  RankParallel rp;
  std::unique_ptr<Model> model;
  // A split model is evaluated whole: the shares assembled into this one (the scenario's unsplit model).
  std::unique_ptr<Model> whole_model;
  Strategy strategy;
  // Workers share the data; dedicated parameter servers (the last ranks) take no batches but step along
  // with the workers (they sample as worker 0 does, to count the same steps). A replica's ranks all take
  // its batch.
  int replica;
  bool worker;
  int workers;

  // Where the executor runs the plan: the DP group with a split, else plan_comm.
  Communicator& executor_comm() { return rp.split() ? rp.data() : plan_comm; }
};

}  // namespace ddplab
