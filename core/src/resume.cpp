#include "ddplab/core/resume.hpp"

#include <algorithm>
#include <filesystem>
#include <set>
#include <stdexcept>

#include <fmt/format.h>

#include "ddplab/core/error.hpp"

namespace ddplab {

std::string run_checkpoint_folder(const Scenario& sc, const std::string& db_path, std::int64_t run) {
  namespace fs = std::filesystem;
  // Two stores side by side number their runs alike: each has a folder of its own.
  const fs::path base = sc.train.checkpoint_dir.empty()
                            ? fs::path(db_path).parent_path() / (fs::path(db_path).stem().string() + "-checkpoints")
                            : fs::path(sc.train.checkpoint_dir);
  return (fs::absolute(base) / fmt::format("run-{}", run)).lexically_normal().string();
}

std::string step_checkpoint_folder(const std::string& run_folder, std::int64_t step) {
  return (std::filesystem::path(run_folder) / fmt::format("step-{}", step)).string();
}

std::string rank_checkpoint_file(const std::string& step_folder, int rank) {
  return (std::filesystem::path(step_folder) / fmt::format("rank-{}.ckpt", rank)).string();
}

nlohmann::json checkpoint_identity(const Scenario& sc, const StrategyConfig& st, int world) {
  nlohmann::json scenario = sc.to_json();
  scenario.erase("cluster");
  scenario.erase("strategies");
  return {{"scenario", scenario}, {"strategy", st.to_json()}, {"world_size", world}};
}

std::string identity_differences(const nlohmann::json& saved, const nlohmann::json& now) {
  static const std::set<std::string> ignored = {"scenario.train.checkpoint_every", "scenario.train.checkpoint_dir",
                                                "scenario.train.checkpoint_keep", "scenario.train.comm_timeout_s",
                                                "scenario.train.consistency_every"};
  return json_differences(saved, now, ignored);
}

ResumePoint find_resume_point(const Store& store, const Scenario& sc, int world, std::optional<std::int64_t> run_id) {
  ResumePoint p;
  if (run_id) {
    const auto row = store.run(*run_id);
    if (!row) throw InputError(fmt::format("--resume {}: no run with that id in {}", *run_id, store.path()));
    p.run = *row;
  } else {
    // The newest unfinished measured run of this scenario that has a checkpoint to continue from, and that no
    // run continues already (an elastic resume's new run names it in resumed_from).
    bool found = false;
    const auto runs = store.runs();
    std::set<std::int64_t> continued;
    for (const RunRow& r : runs) {
      const auto cfg = nlohmann::json::parse(r.info.config_json, nullptr, false);
      if (cfg.is_object() && cfg.contains("resumed_from"))
        continued.insert(cfg["resumed_from"].value("run", std::int64_t{0}));
    }
    for (auto it = runs.rbegin(); it != runs.rend() && !found; ++it) {
      if (it->info.scenario != sc.name || it->info.source != RunSource::Measured || continued.count(it->id)) continue;
      if (!resumable(it->status)) continue;
      for (const CheckpointRow& c : store.checkpoints(it->id)) found |= !c.final;
      if (found) p.run = *it;
    }
    if (!found)
      throw InputError(
          fmt::format("--resume: scenario \"{}\" has no failed, interrupted or abandoned run with a "
                      "checkpoint in {} (train.checkpoint_every = N takes them)",
                      sc.name, store.path()));
  }
  const RunRow& r = p.run;
  if (r.status == RunStatus::Completed)
    throw InputError(fmt::format("--resume {}: run {} is completed; there is nothing to continue", r.id, r.id));
  if (r.status == RunStatus::Running)
    throw InputError(
        fmt::format("--resume {}: run {} is still running (its writer is alive, or on another "
                    "machine); stop it first",
                    r.id, r.id));
  if (r.info.source != RunSource::Measured)
    throw InputError(
        fmt::format("--resume {}: run {} is {}, not a measured run", r.id, r.id, to_string(r.info.source)));
  if (r.info.scenario != sc.name)
    throw InputError(
        fmt::format("--resume {}: run {} is of scenario \"{}\", not \"{}\"", r.id, r.id, r.info.scenario, sc.name));
  bool have = false;
  for (const CheckpointRow& c : store.checkpoints(r.id))
    if (!c.final) p.checkpoint = c, have = true;
  if (!have)
    throw InputError(
        fmt::format("--resume {}: run {} has no checkpoint (train.checkpoint_every was 0, or it "
                    "stopped before the first one)",
                    r.id, r.id));
  p.strategy_index = sc.strategies.size();
  for (std::size_t i = 0; i < sc.strategies.size(); ++i)
    if (sc.strategies[i].name == r.info.strategy) p.strategy_index = i;
  if (p.strategy_index == sc.strategies.size())
    throw InputError(
        fmt::format("--resume {}: the scenario has no [[strategy]] named \"{}\", the run's", r.id, r.info.strategy));
  p.world = world > 0 ? world : r.info.world_size;
  const std::string file = rank_checkpoint_file(p.checkpoint.path, 0);
  Checkpoint head;
  try {
    head = read_checkpoint(file);
  } catch (const CheckpointError& e) {
    throw e.prefixed(fmt::format("--resume {}: ", r.id));
  }
  // On another number of ranks the world size differs by design; nothing else may.
  nlohmann::json now = checkpoint_identity(sc, sc.strategies[p.strategy_index], r.info.world_size);
  const std::string diff = identity_differences(head.meta.value("identity", nlohmann::json()), now);
  if (!diff.empty())
    throw InputError(fmt::format("--resume {}: {} was written for other settings: {}", r.id, file, diff));
  if (p.elastic()) {
    const auto agree = head.meta.value("trainer", nlohmann::json::object()).value("agreement", std::vector<int>{});
    if (std::find(agree.begin(), agree.end(), 0) != agree.end())
      throw InputError(
          fmt::format("--resume {}: its checkpoint at step {} falls where the replicas differ "
                      "(between local SGD's syncs): it can continue on its {} ranks only",
                      r.id, p.checkpoint.step, r.info.world_size));
    for (int rank = 1; rank < r.info.world_size; ++rank)
      if (!std::filesystem::exists(rank_checkpoint_file(p.checkpoint.path, rank)))
        throw InputError(
            fmt::format("--resume {}: {} is missing: on another number of ranks every old rank's "
                        "file is read",
                        r.id, rank_checkpoint_file(p.checkpoint.path, rank)));
  }
  return p;
}

}  // namespace ddplab
