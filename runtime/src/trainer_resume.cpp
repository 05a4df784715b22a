#include "trainer_resume.hpp"

#include <algorithm>
#include <cstdio>
#include <optional>
#include <vector>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "ddplab/core/error.hpp"
#include "ddplab/core/resume.hpp"
#include "ddplab/runtime/checkpointer.hpp"
#include "ddplab/runtime/elastic.hpp"

namespace ddplab {
namespace {

// What a checkpoint's trainer counters hold that every resume takes as it is.
void take_counters(TrainingState& s, const nlohmann::json& t) {
  s.samples_total = t.at("samples_total").get<std::int64_t>();
  s.last_loss = t.at("last_loss").get<double>();
  s.wall_before = t.at("wall_s").get<double>();
}

// On as many ranks: this rank's own file, its state and counters as they were.
TrainingState load_same_world(const Checkpointer& loader, const Resume& resume, int rank, PlanExecutor& executor) {
  const Checkpoint c = loader.load(resume.folder);
  executor.load(c, rank_checkpoint_file(resume.folder, rank));
  const nlohmann::json& t = c.meta.at("trainer");
  TrainingState s;
  s.first_step = t.at("step").get<std::int64_t>();
  s.next_check = t.at("next_check").get<std::int64_t>();
  s.agreement.restore(t.at("agreement").get<std::vector<char>>());
  take_counters(s, t);
  return s;
}

// On another number of ranks: every old rank's file, its shards re-cut for this world (elastic.hpp); the step
// where this world has seen as many samples (at most the end of the run).
TrainingState load_elastic(const Scenario& sc, const StrategyConfig& st, const Checkpointer& loader,
                           const Resume& resume, PlanExecutor& executor, const Placement& place,
                           std::int64_t total_steps) {
  const std::vector<Checkpoint> old = loader.load_world(resume.folder, resume.old_world);
  Strategy old_strategy(st, place.model->spec(), strategy_context(sc, resume.old_world, resume.old_world));
  const nlohmann::json order =
      old.front().meta.value("executor", nlohmann::json::object()).value("rebuilt_order", nlohmann::json());
  if (order.is_array()) old_strategy.observe_ready_order(order.get<std::vector<int>>());
  executor.load(elastic_checkpoint(old, old_strategy), rank_checkpoint_file(resume.folder, 0));
  const nlohmann::json& t = old.front().meta.at("trainer");
  TrainingState s;
  s.first_step = std::min(
      elastic_step(t.at("step").get<std::int64_t>(), old_strategy.workers(), place.workers, st.accumulate_steps),
      total_steps / st.accumulate_steps * st.accumulate_steps);
  s.next_check = s.first_step + sc.train.consistency_every;
  take_counters(s, t);
  return s;
}

}  // namespace

Resume resolve_resume(const Scenario& sc, Communicator& comm, Store* store, std::int64_t run) {
  Resume r;
  std::string error;
  if (comm.rank() == 0) try {
      const ResumePoint p = find_resume_point(*store, sc, comm.size(), run > 0 ? std::optional(run) : std::nullopt);
      r = {p.run.id, p.checkpoint.step, p.strategy_index, p.run.info.world_size, p.checkpoint.path};
    } catch (const std::exception& e) {
      error = e.what();
    }
  long long head[5] = {r.run, r.step, static_cast<long long>(r.strategy), r.old_world,
                       static_cast<long long>(error.empty() ? r.folder.size() : error.size())};
  comm.broadcast(head, sizeof head, 0);
  std::string text = error.empty() ? r.folder : error;
  text.resize(static_cast<std::size_t>(head[4]));
  comm.broadcast(text.data(), text.size(), 0);
  if (head[0] == 0) throw InputError(text);  // run_worker names the rank
  return {head[0], head[1], static_cast<std::size_t>(head[2]), static_cast<int>(head[3]), text};
}

TrainingState restore_state(const Scenario& sc, const StrategyConfig& st, Communicator& comm, Store* store,
                            const WorkerOptions& opt, const Resume& resume, PlanExecutor& executor,
                            const Placement& place, std::int64_t total_steps) {
  const int rank = comm.rank(), world = comm.size();
  TrainingState state;
  std::string problem;
  try {
    const Checkpointer loader(sc, st, comm, nullptr, resume.run, opt.db_path);
    state = resume.elastic(world) ? load_elastic(sc, st, loader, resume, executor, place, total_steps)
                                  : load_same_world(loader, resume, rank, executor);
  } catch (const std::exception& e) {
    problem = e.what();
    std::fprintf(stderr, "error: rank %d: %s\n", rank, problem.c_str());
  }
  std::vector<int> loaded(static_cast<std::size_t>(world), 0);
  loaded[static_cast<std::size_t>(rank)] = problem.empty() ? 1 : 0;
  comm.all_gather(loaded.data(), sizeof(int));
  std::vector<int> failed;
  for (int r = 0; r < world; ++r)
    if (!loaded[static_cast<std::size_t>(r)]) failed.push_back(r);
  if (failed.empty()) return state;
  // An unreadable checkpoint is no resume point: the one before it, if kept, is the next. No rank ends the job
  // (MPI_Abort) before rank 0 has dropped it.
  if (store) store->delete_checkpoint(resume.run, resume.step);
  int dropped = 1;
  comm.broadcast(&dropped, sizeof dropped, 0);
  throw RunFault(fmt::format("rank {}: run {}'s checkpoint at step {} could not be loaded on rank {} ({}); it is "
                             "dropped from the store: --resume again continues from the one before it, if one is kept",
                             rank, resume.run, resume.step, fmt::join(failed, ", "),
                             problem.empty() ? "see that rank's error" : problem),
                 {.rank = rank, .step = resume.step, .op = "resume"});
}

}  // namespace ddplab
