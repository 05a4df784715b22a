// See series_math.hpp.
#include "ddplab/gui/series_math.hpp"

#include <algorithm>
#include <cmath>

namespace ddplab::gui {

std::vector<double> ema_smooth(const std::vector<double>& y, double weight) {
  if (!(weight > 0) || y.empty()) return y;
  weight = std::min(weight, 0.999);
  bool constant = true;
  for (double v : y) constant = constant && v == y.front();
  if (constant) return y;
  std::vector<double> out(y.size());
  double last = 0;
  int n = 0;
  for (std::size_t i = 0; i < y.size(); ++i) {
    if (!std::isfinite(y[i])) {
      out[i] = y[i];
      continue;
    }
    last = last * weight + (1 - weight) * y[i];
    ++n;
    out[i] = last / (1 - std::pow(weight, n));
  }
  return out;
}

const char* x_axis_title(XAxis a) {
  switch (a) {
    case XAxis::Step:
      return "step";
    case XAxis::Samples:
      return "samples (all ranks)";
    case XAxis::Time:
      return "training time (s)";
  }
  return "";
}

RunProgress::RunProgress(const std::vector<StepTotals>& steps) {
  double s = 0, t = 0;
  for (const StepTotals& st : steps) {
    s += st.samples;
    t += st.slowest_s;
    step_.push_back(st.step);
    samples_.push_back(s);
    time_.push_back(t);
    step_samples_.push_back(st.samples);
    step_time_.push_back(st.slowest_s);
  }
}

// Steps before `completed` in full, the one at floor(completed) in proportion (steps stored 0-based: after
// n completed steps, steps 0..n-1 are done) -- training_time_through's rule, by binary search.
double RunProgress::through(const std::vector<double>& cum, const std::vector<double>& each, double completed) const {
  if (step_.empty() || !(completed > static_cast<double>(step_.front()))) return 0;
  // First stored step >= completed: every step before it is whole or partly done.
  const auto it = std::lower_bound(step_.begin(), step_.end(), completed,
                                   [](std::int64_t s, double c) { return static_cast<double>(s) < c; });
  const std::size_t k = static_cast<std::size_t>(it - step_.begin());  // steps [0, k) have step < completed
  if (k == 0) return 0;
  const double part = std::clamp(completed - static_cast<double>(step_[k - 1]), 0.0, 1.0);
  return cum[k - 1] - (1 - part) * each[k - 1];
}

double RunProgress::samples_through(double completed) const { return through(samples_, step_samples_, completed); }
double RunProgress::time_through(double completed) const { return through(time_, step_time_, completed); }

double RunProgress::at(XAxis axis, double completed) const {
  switch (axis) {
    case XAxis::Step:
      return completed;
    case XAxis::Samples:
      return samples_through(completed);
    case XAxis::Time:
      return time_through(completed);
  }
  return completed;
}

std::vector<std::size_t> lttb(const std::vector<double>& x, const std::vector<double>& y, std::size_t threshold) {
  const std::size_t n = std::min(x.size(), y.size());
  std::vector<std::size_t> keep;
  if (threshold < 3 || threshold >= n) {
    keep.resize(n);
    for (std::size_t i = 0; i < n; ++i) keep[i] = i;
    return keep;
  }
  keep.reserve(threshold);
  keep.push_back(0);
  const double every = static_cast<double>(n - 2) / static_cast<double>(threshold - 2);
  std::size_t a = 0;
  for (std::size_t b = 0; b < threshold - 2; ++b) {
    // The next bucket's mean is the third corner of the triangle.
    const std::size_t next_lo = static_cast<std::size_t>(std::floor((b + 1) * every)) + 1;
    const std::size_t next_hi = std::min(static_cast<std::size_t>(std::floor((b + 2) * every)) + 1, n);
    double mx = 0, my = 0;
    for (std::size_t i = next_lo; i < next_hi; ++i) mx += x[i], my += y[i];
    const double cnt = static_cast<double>(std::max<std::size_t>(next_hi - next_lo, 1));
    mx /= cnt, my /= cnt;
    if (next_hi <= next_lo) mx = x[n - 1], my = y[n - 1];
    const std::size_t lo = static_cast<std::size_t>(std::floor(b * every)) + 1;
    const std::size_t hi = static_cast<std::size_t>(std::floor((b + 1) * every)) + 1;
    double best = -1;
    std::size_t pick = lo;
    for (std::size_t i = lo; i < hi && i < n - 1; ++i) {
      const double area = std::abs((x[a] - mx) * (y[i] - y[a]) - (x[a] - x[i]) * (my - y[a]));
      if (area > best) best = area, pick = i;
    }
    keep.push_back(pick);
    a = pick;
  }
  keep.push_back(n - 1);
  return keep;
}

std::pair<double, double> log_decade_range(double lo, double hi, double base) {
  if (!(lo > 0) || !(hi > 0) || !(base > 1)) return {1, base};
  if (hi < lo) std::swap(lo, hi);
  const double lb = std::log(base);
  double first = std::floor(std::log(lo) / lb + 1e-9);
  double last = std::ceil(std::log(hi) / lb - 1e-9);
  if (last <= first) last = first + 1;
  // Just outside the powers, so that both ends are labelled.
  return {std::pow(base, first) * 0.999, std::pow(base, last) * 1.001};
}

}  // namespace ddplab::gui
