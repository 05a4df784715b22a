#include "ddplab/runtime/progress.hpp"

#include <cstdio>

namespace ddplab {

Progress::Progress(bool enabled, std::string label, std::int64_t total_steps)
    : enabled_(enabled),
      label_(std::move(label)),
      total_(total_steps),
      start_(std::chrono::steady_clock::now()),
      last_() {}

void Progress::update(std::int64_t step, double loss, std::int64_t samples) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  if (step < total_ && now - last_ < std::chrono::milliseconds(250)) return;
  last_ = now;
  const double elapsed = std::chrono::duration<double>(now - start_).count();
  const double rate = elapsed > 0 ? static_cast<double>(samples) / elapsed : 0.0;
  const double eta = step > 0 ? elapsed * static_cast<double>(total_ - step) / static_cast<double>(step) : 0.0;
  std::fprintf(stderr, "\r\033[K[%s] step %lld/%lld  loss %.4f  %.0f samples/s  ETA %.0fs", label_.c_str(),
               static_cast<long long>(step), static_cast<long long>(total_), loss, rate, eta);
  std::fflush(stderr);
}

void Progress::finish() {
  if (!enabled_) return;
  std::fprintf(stderr, "\r\033[K");
  std::fflush(stderr);
}

}  // namespace ddplab
