#include "trainer_register.hpp"

#include <cstdio>
#include <string>

#include <nlohmann/json.hpp>

#include "ddplab/runtime/job_info.hpp"

namespace ddplab {
namespace {

// What a new run stores as its configuration.
std::string run_config(const Scenario& sc, const StrategyConfig& st, int world, Placement& place, const DataPlan& plan,
                       const OptimizerConfig& oc, const Resume* resume) {
  nlohmann::json cfg = sc.to_json();
  if (place.rp.split()) cfg["layout"] = place.rp.layout().describe();
  cfg["strategy"] = st.to_json();
  cfg["world_size"] = world;
  cfg["steps"] = plan.total_steps;
  cfg["pattern"] = place.strategy.pattern().to_json();  // reports split warm-up and steady state by it
  cfg["partition"] = {{"samples_per_epoch", plan.sampler->per_rank()}, {"class_histograms", plan.histograms}};
  cfg["lr_plan"] = {{"peak", oc.lr.peak},
                    {"global_batch", oc.lr.global_batch},
                    {"updates", oc.lr.total},
                    {"describe", oc.lr.describe()}};
  if (resume) cfg["resumed_from"] = {{"run", resume->run}, {"step", resume->step}, {"world_size", resume->old_world}};
  return cfg.dump();
}

}  // namespace

std::int64_t register_run(const Scenario& sc, const StrategyConfig& st, Communicator& comm, Store* store,
                          Placement& place, const DataPlan& plan, const OptimizerConfig& oc, const Resume* resume) {
  const int world = comm.size();
  const bool continued = resume && !resume->elastic(world);
  std::int64_t run = continued ? resume->run : -1;
  const std::string host_info = job_host_info(comm);  // collective
  if (continued) {
    if (store) store->resume_run(run, resume->step, host_info);
  } else if (store) {
    run = store->begin_run({sc.name, st.name, place.backend_name, world, RunSource::Measured,
                            run_config(sc, st, world, place, plan, oc, resume), host_info, sc.train.batch_size});
  }
  comm.broadcast(&run, sizeof run, 0);  // every rank's checkpoint goes to the run's folder
  return run;
}

void announce_resume(const StrategyConfig& st, int world, const Resume& resume, std::int64_t run,
                     std::int64_t first_step, std::int64_t total_steps) {
  if (resume.elastic(world))
    std::printf(
        "%s: resuming run %lld (%d ranks, step %lld) on %d ranks as run %lld from step %lld of %lld, as many "
        "samples seen; optimizer shards re-cut, codec state reset\n",
        st.name.c_str(), static_cast<long long>(resume.run), resume.old_world, static_cast<long long>(resume.step),
        world, static_cast<long long>(run), static_cast<long long>(first_step), static_cast<long long>(total_steps));
  else
    std::printf("%s: resuming run %lld from its checkpoint at step %lld of %lld\n", st.name.c_str(),
                static_cast<long long>(run), static_cast<long long>(resume.step), static_cast<long long>(total_steps));
  std::fflush(stdout);
}

}  // namespace ddplab
