// local_sgd: periodic model averaging (PyTorch's PostLocalSGDOptimizer). During the first
// local_sgd_warmup steps gradients are synchronised as with overlap; after that each rank steps on its own
// gradients and every local_sgd_period steps the parameters are averaged over ranks. The run ends on the
// average of the ranks' models, so that they agree.
#include <limits>

#include <fmt/format.h>

#include "policies.hpp"

namespace ddplab {

namespace {

void add_average(const Strategy& s, StepPlan& plan, const std::vector<int>& after) {
  for (const Bucket& b : s.bucketing().buckets)
    s.add_op(plan, OpKind::SyncParams, b.id,
             after.empty() ? std::vector<int>{} : std::vector<int>{after[static_cast<std::size_t>(b.id)]});
}

}  // namespace

std::vector<OptionSpec> local_sgd_options() {
  const double inf = std::numeric_limits<double>::infinity();
  return {
      {"local_sgd_period", OptionKind::Integer, 1, inf, false, "1", "3", "H: parameters are averaged every H steps"},
      {"local_sgd_warmup", OptionKind::Integer, 0, inf, false, "0", "2",
       "steps of plain gradient sync before local SGD starts"}};
}

void build_local_sgd(const Strategy& s, std::int64_t step, StepPlan& plan) {
  const StrategyConfig& c = s.config();
  const std::int64_t opt_step = step / c.accumulate_steps;
  const long long warmup = policy_option(c, "local_sgd_warmup"), period = policy_option(c, "local_sgd_period");
  if (opt_step < warmup) return build_overlap(s, step, plan);
  const std::vector<int> backward = s.add_compute_pass(plan, step);
  const bool average = (opt_step - warmup + 1) % period == 0;
  std::vector<int> updates;
  for (const Bucket& b : s.bucketing().buckets)
    updates.push_back(s.add_op(plan, OpKind::Optimizer, b.id, {s.ready_op(backward, b.id)}));
  if (average) add_average(s, plan, updates);
}

PolicyTiming local_sgd_timing(const StrategyConfig& c) {
  PolicyTiming t;
  const long long warmup = policy_option(c, "local_sgd_warmup"), period = policy_option(c, "local_sgd_period");
  if (warmup > 0)
    t.changes.push_back(
        {warmup, fmt::format("gradients synchronised every step for the {} warm-up steps of local SGD", warmup)});
  t.period = period;
  if (period > 1) t.steady = fmt::format("parameters averaged every {} steps", period);
  return t;
}

void finish_local_sgd(const Strategy& s, StepPlan& plan) { add_average(s, plan, {}); }

}  // namespace ddplab
