// A straggler in a real run ([cluster].stragglers, ClusterConfig::compute_factor): the rank's compute and
// codec work take `factor` times longer, as the simulator's slower host makes them. After each piece of
// work the thread sleeps (factor - 1) times what the work took, so the core is free meanwhile, as it would
// be on another host.
#pragma once
#include <chrono>
#include <memory>
#include <string>

#include "ddplab/strategies/codec_compute.hpp"

namespace ddplab {

class Slowdown {
 public:
  using Clock = std::chrono::steady_clock;
  explicit Slowdown(double factor = 1);  // factor >= 1 (InputError otherwise)
  double factor() const { return factor_; }
  bool active() const { return factor_ > 1; }
  // Sleeps (factor - 1) x the time since `start`.
  void stretch(Clock::time_point start) const;
  template <class F>
  void run(F&& f) const {
    const auto start = Clock::now();
    f();
    stretch(start);
  }

 private:
  double factor_;
};

// Every work call of `inner` (the kinds a codec's plan announces) stretched by `slowdown`; memory
// management and transfers go through as they are. On a device the calls return once queued, so only host
// codec compute is slowed by it.
std::unique_ptr<CodecCompute> slowed_codec_compute(CodecCompute& inner, const Slowdown& slowdown);

}  // namespace ddplab
