// Strategy::pattern: the plans of a whole run as segments (core/step_pattern.hpp), built from what each
// part of the strategy says about time: the policy's timing, the codec's plan changes, the accumulation
// window and the bucket rebuild. Segments are then merged wherever their plans are the same, so the
// pattern lists only differences that exist.
#include <algorithm>
#include <map>

#include <fmt/format.h>

#include "ddplab/strategies/strategy.hpp"

namespace ddplab {

StepPattern Strategy::pattern() const {
  const std::int64_t k = config_.accumulate_steps;
  const PolicyTiming timing = policy_->timing ? policy_->timing(config_) : PolicyTiming{};
  // Change points in optimizer steps, each with what ends there; several may fall on one step.
  std::map<std::int64_t, std::string> changes;
  auto add = [&](const PlanChange& c) {
    if (c.step <= 0) return;
    std::string& what = changes[c.step];
    what += (what.empty() ? "" : "; ") + c.what;
  };
  add({1, "buckets in reverse parameter order, before the rebuild from the observed gradient order"});
  for (const PlanChange& c : timing.changes) add(c);
  for (const PlanChange& c : codec_->plan_changes()) add(c);

  // The plans as the runtime sees them: the first optimizer step on the initial buckets, the rest rebuilt.
  Strategy initial(config_, model_, ctx_), rebuilt(config_, model_, ctx_);
  rebuilt.observe_ready_order(model_.expected_ready_order());
  auto plan_at = [&](std::int64_t s) { return s < k ? initial.plan(s) : rebuilt.plan(s); };
  auto same_blocks = [&](std::int64_t a, std::int64_t b, std::int64_t length) {
    for (std::int64_t i = 0; i < length; ++i)
      if (!plan_at(a + i).same_ops(plan_at(b + i))) return false;
    return true;
  };

  // Between change points every optimizer step (k micro-steps) is alike; a segment [c_i, c_i+1) is described
  // by what ends at each later change point.
  StepPattern p;
  std::int64_t at = 0;
  for (auto it = changes.begin(); it != changes.end(); ++it) {
    std::string what;
    for (auto later = it; later != changes.end(); ++later) what += (what.empty() ? "" : "; ") + later->second;
    p.segments.push_back({at * k, k, it->first - at, what});
    at = it->first;
  }
  std::string steady = timing.steady;
  if (k > 1) steady = fmt::format("{} micro-steps per optimizer step{}{}", k, steady.empty() ? "" : ", ", steady);
  if (steady.empty()) steady = "every step alike";
  const std::int64_t period = k * std::max<std::int64_t>(1, timing.period);
  p.segments.push_back({at * k, period, 0, steady});

  // The steady state starts as early as the plans repeat: move it back an optimizer step at a time.
  while (p.segments.size() > 1) {
    StepSegment& st = p.segments.back();
    if (!same_blocks(st.first - k, st.first - k + period, k)) break;
    st.first -= k;
    StepSegment& before = p.segments[p.segments.size() - 2];
    if (--before.repeats == 0) p.segments.erase(p.segments.end() - 2);
  }
  // Neighbouring warm-up segments with the same plans are one; the later one's description holds for both.
  for (std::size_t i = p.segments.size() - 1; i-- > 1;) {
    StepSegment &a = p.segments[i - 1], &b = p.segments[i];
    if (!same_blocks(a.first, b.first, k)) continue;
    a.repeats += b.repeats;
    a.what = b.what;
    p.segments.erase(p.segments.begin() + static_cast<std::ptrdiff_t>(i));
  }
  return p;
}

StepPlan Strategy::finish_plan(std::int64_t step) const {
  StepPlan plan;
  plan.step = step;
  if (policy_->finish) policy_->finish(*this, plan);
  return plan;
}

}  // namespace ddplab
