// exp in float, branch-free so that loops over it vectorise (the libm call does not at baseline x86-64), for
// the transformer's element-wise kernels. Relative error within 2e-7 over the float range (Cody-Waite range
// reduction and Cephes' degree-6 polynomial for e^r on |r| <= ln2 / 2); inputs are clamped to [-87, 88], so
// e^-inf comes out as about 1.6e-38, not 0: callers mask what must be exactly zero.
#pragma once
#include <algorithm>
#include <cstdint>
#include <cstring>

// On a loop over these: a second copy for x86-64-v3 (AVX2, FMA), picked at load time where the CPU has it.
#if defined(__x86_64__) && defined(__GNUC__) && !defined(__clang__)
#define DDPLAB_SIMD_CLONES __attribute__((target_clones("arch=x86-64-v3", "default")))
#else
#define DDPLAB_SIMD_CLONES
#endif

namespace ddplab::fast_math {

inline float exp(float x) {
  x = std::min(std::max(x, -87.0f), 88.0f);
  const float n = (x * 1.44269504088896341f + 12582912.0f) - 12582912.0f;  // round to nearest: 1.5 * 2^23
  const float r = x - n * 0.693359375f + n * 2.12194440e-4f;               // x - n ln2, ln2 in two parts
  float p = 1.9875691500e-4f;
  p = p * r + 1.3981999507e-3f;
  p = p * r + 8.3334519073e-3f;
  p = p * r + 4.1665795894e-2f;
  p = p * r + 1.6666665459e-1f;
  p = p * r + 5.0000001201e-1f;
  p = p * r * r + r + 1.0f;
  const std::int32_t bits = (static_cast<std::int32_t>(n) + 127) << 23;  // 2^n
  float scale;
  std::memcpy(&scale, &bits, sizeof scale);
  return p * scale;
}

// tanh(u) = 1 - 2 / (e^2u + 1): absolute error within about 1e-7 (near 0 the relative error grows, which the
// callers, GELU's 1 + tanh and 1 - tanh^2, do not see).
inline float tanh(float u) { return 1.0f - 2.0f / (exp(2.0f * u) + 1.0f); }

inline float sigmoid(float x) { return 1.0f / (1.0f + exp(-x)); }

}  // namespace ddplab::fast_math
