// Where a run's checkpoints go, what must stay the same to continue from one, and which run and checkpoint
// `ddplab run --resume [RUN_ID]` continues: the launcher checks it before starting mpirun, every rank again
// on its own file.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include <nlohmann/json.hpp>

#include "ddplab/core/checkpoint.hpp"
#include "ddplab/core/scenario.hpp"
#include "ddplab/core/store.hpp"

namespace ddplab {

// The folder that holds a run's checkpoints: train.checkpoint_dir, else STEM-checkpoints beside the store
// STEM.db, then run-ID; absolute, since ranks may start elsewhere.
std::string run_checkpoint_folder(const Scenario& sc, const std::string& db_path, std::int64_t run);
// A checkpoint's folder (step-S under the run's) and a rank's file in it.
std::string step_checkpoint_folder(const std::string& run_folder, std::int64_t step);
std::string rank_checkpoint_file(const std::string& step_folder, int rank);

// What a checkpoint of this strategy's run on `world` ranks records of its job, and what must be the same to
// continue from it: the scenario's model, data and train sections, the strategy and the world size.
// The cluster section and the other strategies are left out (they do not change what is trained).
nlohmann::json checkpoint_identity(const Scenario& sc, const StrategyConfig& st, int world);
// "" when `saved` (a checkpoint's meta["identity"]) and `now` agree but for the settings that do not change
// what is trained (checkpoint_*, comm_timeout_s, consistency_every); else the fields that differ, each with
// both values.
std::string identity_differences(const nlohmann::json& saved, const nlohmann::json& now);

struct ResumePoint {
  RunRow run;
  CheckpointRow checkpoint;        // the newest one that is not final
  std::size_t strategy_index = 0;  // the run's [[strategy]] in the scenario
  // Another number of ranks than the run had (elastic resume, runtime/elastic.hpp): a new run continues it.
  bool elastic() const { return world != run.info.world_size; }
  int world = 0;  // the ranks it resumes on
};
// The run `ddplab run SCENARIO --np WORLD --resume [RUN_ID]` continues: RUN_ID, or the newest failed,
// interrupted or abandoned measured run of the scenario that has a checkpoint and that no run continues yet
// (an elastic resume's run names the one it continues: config resumed_from). Throws InputError
// with the reason when there is none, when the run is completed or still running, has no checkpoint, has
// no strategy of that name in the scenario, or when its rank-0 file is unreadable or was written for other
// settings (each differing field named). On another number of ranks the checkpoint must be one at which the
// replicas agree (not between local SGD's syncs), and every old rank's file must be there. `world` 0: the
// run's own.
ResumePoint find_resume_point(const Store& store, const Scenario& sc, int world, std::optional<std::int64_t> run_id);

}  // namespace ddplab
