// Small statistics shared by the runtime's probes, the simulator and the CLI.
#pragma once
#include <algorithm>
#include <vector>

namespace ddplab {

// The median (the mean of the two middle values for an even count); 0 for no values.
inline double median(std::vector<double> v) {
  if (v.empty()) return 0;
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

}  // namespace ddplab
