// Steps collapsed over ranks, and a run's steady and warm-up windows (step_totals.hpp).
#include "ddplab/core/step_totals.hpp"

#include <algorithm>
#include <cmath>
#include <map>

namespace ddplab {

std::vector<StepTotals> step_totals(const std::vector<StepMetrics>& rows) {
  std::map<std::int64_t, StepTotals> by_step;
  std::map<std::int64_t, std::pair<double, int>> loss;  // step -> (sum, count) of finite losses
  for (const StepMetrics& m : rows) {
    if (std::isfinite(m.loss)) loss[m.step].first += m.loss, loss[m.step].second += 1;
    StepTotals& t = by_step[m.step];
    t.step = m.step;
    t.slowest_s = t.ranks ? std::max(t.slowest_s, m.step_s) : m.step_s;
    ++t.ranks;
    t.samples += m.samples;
    t.compute_s += m.compute_s, t.comm_s += m.comm_s, t.exposed_comm_s += m.exposed_comm_s;
    t.optimizer_s += m.optimizer_s, t.bytes_sent += static_cast<double>(m.bytes_sent);
  }
  std::vector<StepTotals> out;
  for (auto& [step, t] : by_step) {
    if (const auto it = loss.find(step); it != loss.end()) t.mean_loss = it->second.first / it->second.second;
    out.push_back(t);
  }
  return out;
}

RunWindows run_windows(std::vector<StepTotals> steps, const StepPattern* pattern, bool simulated, int skip_steps) {
  RunWindows w;
  if (steps.empty()) return w;
  // [from, end): the steps averaged, by step number.
  std::int64_t from = steps.front().step, end = steps.back().step + 1;
  if (pattern && simulated) {
    from = pattern->steady().first;
    end = from + pattern->period();
  } else if (pattern) {
    const StepWindow sw = steady_window(*pattern, end, std::max<std::int64_t>(1, skip_steps));
    if (sw.steps() > 0)
      from = sw.first, end = sw.end;
    else
      from = std::max<std::int64_t>(0, std::min<std::int64_t>(std::max(1, skip_steps), end - 1));
  } else if (skip_steps > 0) {
    from = steps[std::min<std::size_t>(static_cast<std::size_t>(skip_steps), steps.size() - 1)].step;
  }
  for (StepTotals& t : steps) {
    if (t.step >= from && t.step < end) {
      w.steady.add(t);
    } else if (t.step < from) {
      // A simulated warm-up block stands for every repeat of its segment.
      if (pattern && simulated) t.weight = static_cast<double>(pattern->segments[pattern->segment_of(t.step)].repeats);
      w.warmup.add(t);
      ++w.skipped;
    }
  }
  return w;
}

double training_time_through(const std::vector<StepTotals>& steps, double completed) {
  double t = 0;
  for (const StepTotals& s : steps) t += std::clamp(completed - static_cast<double>(s.step), 0.0, 1.0) * s.slowest_s;
  return t;
}

}  // namespace ddplab
