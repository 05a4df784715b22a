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

// Kendall's tau-b between two rankings of the same items (a[i] and b[i] are item i's values): +1 when they
// order every pair alike, -1 when opposite, 0 for no agreement; pairs tied in either are discounted as tau-b
// does. NaN for fewer than 2 items or when either side is all ties. How validate says whether the
// simulator ranks strategies as measurement does.
inline double kendall_tau(const std::vector<double>& a, const std::vector<double>& b) {
  const std::size_t n = std::min(a.size(), b.size());
  double concordant = 0, discordant = 0, ties_a = 0, ties_b = 0;
  for (std::size_t i = 0; i < n; ++i)
    for (std::size_t j = i + 1; j < n; ++j) {
      const double da = a[i] - a[j], db = b[i] - b[j];
      if (da == 0 && db == 0) continue;
      if (da == 0)
        ++ties_a;
      else if (db == 0)
        ++ties_b;
      else if ((da > 0) == (db > 0))
        ++concordant;
      else
        ++discordant;
    }
  const double denom = std::sqrt((concordant + discordant + ties_a) * (concordant + discordant + ties_b));
  return denom > 0 ? (concordant - discordant) / denom : std::nan("");
}

}  // namespace ddplab
