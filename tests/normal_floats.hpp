// Deterministic standard-normal test data.
#pragma once
#include <random>
#include <vector>

namespace ddplab::test {

inline std::vector<float> normal_floats(std::size_t n, unsigned seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> d;
  std::vector<float> v(n);
  for (float& x : v) x = d(rng);
  return v;
}

}  // namespace ddplab::test
