// The step pattern: which plans a strategy runs over a whole training run, so that both executors (and
// every report) see the same sequence. Strategies change across steps: accumulation runs K micro-steps
// per optimizer step, local SGD averages every H steps after a warm-up, PowerSGD sends plain gradients
// before start_iter, DDP rebuilds its buckets after the first step. A pattern is a list of segments; each
// is a block of micro-steps whose plans repeat `repeats` times, and the last one (the steady state)
// repeats until the run ends. Throughput at steady state is samples over whole blocks of it.
// The strategy builds it (Strategy::pattern, strategies/); runs store it in their config JSON ("pattern"),
// where reports read it back.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

namespace ddplab {

struct StepSegment {
  std::int64_t first = 0;    // first micro-step of the segment
  std::int64_t length = 1;   // micro-steps in one block: the plans of first .. first + length - 1
  std::int64_t repeats = 1;  // blocks in the segment; the steady segment's is 0 (until the run ends)
  std::string what;          // what sets these plans apart, for people ("plain allreduce before start_iter")
};

struct StepPattern {
  std::vector<StepSegment> segments;  // in run order, contiguous; the last is the steady state

  const StepSegment& steady() const { return segments.back(); }
  std::int64_t period() const { return steady().length; }       // micro-steps per steady block
  std::int64_t warmup_steps() const { return steady().first; }  // micro-steps before the steady state
  // The segment micro-step s falls in (index into segments).
  std::size_t segment_of(std::int64_t s) const;
  // One line for people: "warm-up 1 step (initial buckets), then blocks of 4 micro-steps (...)".
  std::string describe() const;
  nlohmann::json to_json() const;
  static StepPattern from_json(const nlohmann::json& j);  // throws nlohmann::json::exception when malformed
};

// The window of a measured run that counts as steady state: whole blocks of the steady segment, starting
// at the first block boundary at or after max(warm-up, min_first). Runs pay set-up in their first step
// (connections, lazy allocation, the bucket rebuild), so reports pass min_first >= 1. Returns
// {first, end} (end exclusive); first == end when the run has no whole block there.
struct StepWindow {
  std::int64_t first = 0, end = 0;
  std::int64_t steps() const { return end - first; }
};
StepWindow steady_window(const StepPattern& p, std::int64_t run_steps, std::int64_t min_first);

}  // namespace ddplab
