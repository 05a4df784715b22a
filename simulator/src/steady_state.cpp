#include "ddplab/simulator/steady_state.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>

#include <fmt/format.h>

#include "ddplab/core/error.hpp"
#include "ddplab/core/stats.hpp"

namespace ddplab {

std::string SteadyState::describe() const {
  return fmt::format("{} block{} of {} micro-step{} from step {} of {}", blocks, blocks == 1 ? "" : "s", period,
                     period == 1 ? "" : "s", first, run_steps);
}

SteadyState steady_state(const std::vector<StepMetrics>& rows, const StepPattern& pattern, std::int64_t min_first) {
  SteadyState out;
  out.period = pattern.period();
  for (const StepMetrics& m : rows) out.run_steps = std::max(out.run_steps, m.step + 1);
  StepWindow w = steady_window(pattern, out.run_steps, min_first);
  if (w.steps() == 0) w = steady_window(pattern, out.run_steps, 0);
  if (w.steps() == 0)
    throw InputError(
        fmt::format("the run has {} steps, and its steady state needs {} warm-up steps then at least one block of {}",
                    out.run_steps, pattern.warmup_steps(), out.period));
  out.first = w.first;
  out.blocks = static_cast<int>(w.steps() / out.period);
  struct Parts {
    double step = 0, compute = 0, comm = 0, exposed = 0, optimizer = 0;
  };
  std::map<int, std::map<std::int64_t, Parts>> by_rank;  // rank -> block -> sums
  for (const StepMetrics& m : rows) {
    if (m.step < w.first || m.step >= w.end) continue;
    Parts& p = by_rank[m.rank][(m.step - w.first) / out.period];
    p.step += m.step_s, p.compute += m.compute_s, p.comm += m.comm_s;
    p.exposed += m.exposed_comm_s, p.optimizer += m.optimizer_s;
  }
  const double len = static_cast<double>(out.period), ranks = static_cast<double>(by_rank.size());
  for (const auto& [rank, blocks] : by_rank) {
    std::vector<double> step, compute, comm, exposed, optimizer;
    for (const auto& [b, p] : blocks) {
      step.push_back(p.step), compute.push_back(p.compute), comm.push_back(p.comm);
      exposed.push_back(p.exposed), optimizer.push_back(p.optimizer);
    }
    out.step_s = std::max(out.step_s, median(step) / len);
    out.compute_s += median(compute) / len / ranks;
    out.comm_s += median(comm) / len / ranks;
    out.exposed_comm_s += median(exposed) / len / ranks;
    out.optimizer_s += median(optimizer) / len / ranks;
  }
  return out;
}

SteadyState steady_state(const SimPatternResult& r) {
  return steady_state(step_rows(r), r.pattern, r.pattern.steady().first);
}

}  // namespace ddplab
