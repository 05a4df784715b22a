#include "ddplab/core/step_pattern.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ddplab/core/error.hpp"

namespace ddplab {

std::size_t StepPattern::segment_of(std::int64_t s) const {
  for (std::size_t i = 0; i + 1 < segments.size(); ++i)
    if (s < segments[i + 1].first) return i;
  return segments.empty() ? 0 : segments.size() - 1;
}

std::string StepPattern::describe() const {
  auto steps = [](std::int64_t n) { return fmt::format("{} micro-step{}", n, n == 1 ? "" : "s"); };
  std::string out;
  for (std::size_t i = 0; i + 1 < segments.size(); ++i) {
    const StepSegment& s = segments[i];
    out += fmt::format("{}{} ({})", out.empty() ? "warm-up: " : ", ", steps(s.length * s.repeats), s.what);
  }
  const StepSegment& st = steady();
  out += fmt::format("{}steady blocks of {} ({})", out.empty() ? "" : "; then ", steps(st.length), st.what);
  return out;
}

nlohmann::json StepPattern::to_json() const {
  nlohmann::json segs = nlohmann::json::array();
  for (const StepSegment& s : segments)
    segs.push_back({{"first", s.first}, {"length", s.length}, {"repeats", s.repeats}, {"what", s.what}});
  return {{"warmup_steps", warmup_steps()}, {"period", period()}, {"segments", std::move(segs)}};
}

StepPattern StepPattern::from_json(const nlohmann::json& j) {
  StepPattern p;
  for (const auto& s : j.at("segments"))
    p.segments.push_back({s.at("first").get<std::int64_t>(), s.at("length").get<std::int64_t>(),
                          s.at("repeats").get<std::int64_t>(), s.value("what", std::string())});
  if (p.segments.empty() || p.steady().length < 1)
    throw InputError("step pattern: no steady segment of at least one micro-step");
  return p;
}

StepWindow steady_window(const StepPattern& p, std::int64_t run_steps, std::int64_t min_first) {
  const std::int64_t w = p.warmup_steps(), len = p.period();
  std::int64_t first = std::max(w, min_first);
  first = w + (first - w + len - 1) / len * len;  // up to a block boundary
  if (first >= run_steps) return {run_steps, run_steps};
  const std::int64_t blocks = (run_steps - first) / len;
  return {first, first + blocks * len};
}

}  // namespace ddplab
