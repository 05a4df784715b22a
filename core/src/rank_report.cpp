#include "ddplab/core/rank_report.hpp"

#include <algorithm>
#include <map>
#include <stdexcept>

#include <fmt/format.h>

#include "ddplab/core/error.hpp"
#include "ddplab/core/stats.hpp"

namespace ddplab {

RankReport rank_report(const std::vector<StepMetrics>& steps, std::int64_t skip_steps,
                       const std::vector<Resources>& resources) {
  if (steps.empty()) throw InputError("the run stored no steps");
  std::int64_t last = 0;
  for (const auto& s : steps) last = std::max(last, s.step);
  const std::int64_t from = std::min(skip_steps, last);
  std::map<int, RankBreakdown> by_rank;
  for (const auto& s : steps) {
    if (s.step < from) continue;
    RankBreakdown& b = by_rank[s.rank];
    b.rank = s.rank;
    ++b.steps;
    b.compute_s += s.compute_s, b.optimizer_s += s.optimizer_s, b.comm_s += s.comm_s;
    b.exposed_comm_s += s.exposed_comm_s, b.step_s += s.step_s;
  }
  for (const Resources& x : resources)
    if (auto it = by_rank.find(x.rank); it != by_rank.end()) it->second.resources = x;
  RankReport r;
  for (auto& [rank, b] : by_rank) {
    const double n = static_cast<double>(b.steps);
    b.compute_s /= n, b.optimizer_s /= n, b.comm_s /= n, b.exposed_comm_s /= n, b.step_s /= n;
    r.ranks.push_back(b);
  }
  if (r.ranks.size() < 2) return r;
  auto work = [](const RankBreakdown& b) { return b.compute_s + b.optimizer_s; };
  const auto slowest =
      std::max_element(r.ranks.begin(), r.ranks.end(), [&](const auto& a, const auto& b) { return work(a) < work(b); });
  r.slowest = slowest->rank;
  std::vector<double> others;
  double wait = 0;
  for (const auto& b : r.ranks) {
    if (b.rank == r.slowest) continue;
    others.push_back(work(b));
    wait += b.exposed_comm_s - slowest->exposed_comm_s;
  }
  r.others_work_s = median(others);
  r.others_wait_s = wait / static_cast<double>(others.size());
  return r;
}

std::string rank_report_text(const RunRow& run, const RankReport& report) {
  const auto& ranks = report.ranks;
  std::string out =
      fmt::format("run {} {} ({} ranks, {}): means per step over {} steps, ms\n", run.id, run.info.strategy,
                  run.info.world_size, run.info.source, ranks.empty() ? 0 : ranks.front().steps);
  const bool stored = std::any_of(ranks.begin(), ranks.end(), [](const auto& b) { return b.resources.has_value(); });
  const bool device = std::any_of(ranks.begin(), ranks.end(), [](const auto& b) {
    return b.resources && b.resources->peak_device_bytes.has_value();
  });
  out += fmt::format("{:>5} {:>10} {:>10} {:>10} {:>10} {:>10}", "rank", "compute", "optimizer", "comm", "exposed",
                     "step");
  if (stored) out += fmt::format(" {:>7} {:>12}", "cpu %", "peak RSS MiB");
  if (device) out += fmt::format(" {:>15}", "peak device MiB");
  out += '\n';
  constexpr double kMiB = 1024.0 * 1024.0;
  for (const auto& b : ranks) {
    out += fmt::format("{:>5} {:>10.3f} {:>10.3f} {:>10.3f} {:>10.3f} {:>10.3f}", b.rank, b.compute_s * 1e3,
                       b.optimizer_s * 1e3, b.comm_s * 1e3, b.exposed_comm_s * 1e3, b.step_s * 1e3);
    const auto& x = b.resources;
    if (stored)
      out += x ? fmt::format(" {:>7.0f} {:>12.1f}", x->wall_s > 0 ? 100 * x->cpu_s / x->wall_s : 0.0,
                             static_cast<double>(x->peak_rss_bytes) / kMiB)
               : fmt::format(" {:>7} {:>12}", "-", "-");
    if (device)
      out += x && x->peak_device_bytes ? fmt::format(" {:>15.1f}", static_cast<double>(*x->peak_device_bytes) / kMiB)
                                       : fmt::format(" {:>15}", "-");
    out += '\n';
  }
  if (report.slowest < 0) return out;
  const RankBreakdown& s =
      *std::find_if(ranks.begin(), ranks.end(), [&](const auto& b) { return b.rank == report.slowest; });
  out += fmt::format(
      "slowest: rank {}, compute and optimizer {:.3f} ms a step against {:.3f} ms (the others' median); the others "
      "wait {:.3f} ms a step for it (their exposed comm beyond its own {:.3f} ms)\n",
      s.rank, (s.compute_s + s.optimizer_s) * 1e3, report.others_work_s * 1e3, report.others_wait_s * 1e3,
      s.exposed_comm_s * 1e3);
  return out;
}

}  // namespace ddplab
