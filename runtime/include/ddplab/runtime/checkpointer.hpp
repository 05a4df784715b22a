// train.checkpoint_every in a run. Every rank writes its own file (PlanExecutor::save plus the trainer's
// counters) into the step's folder; once every rank has written, rank 0 records the checkpoint in the store,
// which is the commit point (a folder without its row is never resumed from), and deletes the oldest beyond
// train.checkpoint_keep. Rank 0 deletes other ranks' files too: the folder is assumed shared, as the store is.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ddplab/core/checkpoint.hpp"
#include "ddplab/core/scenario.hpp"
#include "ddplab/core/store.hpp"
#include "ddplab/runtime/communicator.hpp"
#include "ddplab/runtime/plan_executor.hpp"

namespace ddplab {

class Checkpointer {
 public:
  // `store` is rank 0's (nullptr elsewhere); `run` the run's id on every rank.
  Checkpointer(const Scenario& sc, const StrategyConfig& st, Communicator& comm, Store* store, std::int64_t run,
               const std::string& db_path);
  bool enabled() const { return every_ > 0; }
  // After `steps` steps: whether a periodic checkpoint is due.
  bool due(std::int64_t steps) const { return every_ > 0 && steps > 0 && steps % every_ == 0; }
  // Collective: every rank writes its file, then rank 0 records it. A failed write on any rank, or a failed
  // record, is reported and leaves no record: training goes on. Returns whether it was stored (every rank
  // learns it). `final`: after the run's end-of-run work, not to be resumed from.
  bool save(std::int64_t steps, bool final, PlanExecutor& executor, const nlohmann::json& trainer);
  // This rank's file of the checkpoint in `step_folder`, its identity checked against this run's. Throws
  // CheckpointError naming the file and what differs.
  Checkpoint load(const std::string& step_folder) const;
  // Every rank's file of a checkpoint that `old_world` ranks wrote (an elastic resume: elastic.hpp), each
  // identity checked against this run's but for the world size.
  std::vector<Checkpoint> load_world(const std::string& step_folder, int old_world) const;

 private:
  struct Written {
    double bytes = 0, seconds = 0, ok = 1;
  };
  int record(std::int64_t steps, bool final, const std::vector<Written>& all);
  // A rank's file of the checkpoint in `step_folder`, checked to be that rank's and of `identity`.
  Checkpoint read_rank(const std::string& step_folder, int rank, const nlohmann::json& identity) const;
  Communicator& comm_;
  Store* store_;
  std::int64_t run_;
  int every_, keep_;
  std::string folder_;  // the run's
  nlohmann::json identity_;
};

}  // namespace ddplab
