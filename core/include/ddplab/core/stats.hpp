// Small statistics shared by the runtime's probes, the simulator, the CLI and the GUI.
#pragma once
#include <algorithm>
#include <cmath>
#include <vector>

namespace ddplab {

// The median (the mean of the two middle values for an even count); 0 for no values.
inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

// A prediction's error, as validate, its stored rows and the GUI state it: 100 (predicted - measured) /
// measured; NaN when measured is not > 0.
inline double error_pct(double measured, double predicted) {
  return measured > 0 ? 100 * (predicted - measured) / measured : std::nan("");
}

}  // namespace ddplab
