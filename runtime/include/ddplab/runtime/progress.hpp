// A one-line live progress display (step, loss, samples/s, ETA) for terminals; silent when disabled.
#pragma once
#include <chrono>
#include <cstdint>
#include <string>

namespace ddplab {

class Progress {
 public:
  Progress(bool enabled, std::string label, std::int64_t total_steps);
  void update(std::int64_t step, double loss, std::int64_t samples_so_far);  // throttled to ~4 Hz
  void finish();

 private:
  bool enabled_;
  std::string label_;
  std::int64_t total_;
  std::chrono::steady_clock::time_point start_, last_;
};

}  // namespace ddplab
