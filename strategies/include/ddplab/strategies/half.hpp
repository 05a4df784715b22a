// Half-precision storage types used on the wire by the fp16 / bf16 codecs, and the element-wise sums an
// executor needs to reduce buffers of them.
//
// Values are carried as raw uint16_t bit patterns: IEEE 754 binary16 ("f16") and bfloat16 ("bf16").
// Conversions from float round to nearest, ties to even; f16 handles subnormals, overflow to inf, inf and
// NaN (NaN stays NaN, quiet). A sum of two half values is computed as round(float(a) + float(b)): float
// has 24 significand bits >= 2 * 11 + 2, so this double rounding equals the correctly rounded f16 (and
// bf16) sum, i.e. what a native half-precision adder (NCCL, CUDA __hadd) produces.
#pragma once
#include <bit>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#if defined(__x86_64__) && defined(__GNUC__)
#include <cpuid.h>
#include <immintrin.h>
#endif

#include "ddplab/core/error.hpp"
#include "ddplab/strategies/codec.hpp"

namespace ddplab {

// ---- IEEE binary16 ----

inline std::uint16_t float_to_f16(float f) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  const std::uint16_t sign = static_cast<std::uint16_t>((x >> 16) & 0x8000u);
  const std::uint32_t exp = (x >> 23) & 0xffu, mant = x & 0x7fffffu;
  if (exp == 0xffu) {  // inf stays inf; NaN becomes a quiet NaN keeping the top payload bits
    if (mant == 0) return sign | 0x7c00u;
    return static_cast<std::uint16_t>(sign | 0x7e00u | (mant >> 13));
  }
  const int e = static_cast<int>(exp) - 127 + 15;  // biased f16 exponent
  if (e >= 0x1f) return sign | 0x7c00u;            // too large even before rounding: inf
  if (e >= 1) {                                    // normal f16: drop 13 mantissa bits, round to nearest even
    std::uint32_t h = (static_cast<std::uint32_t>(e) << 10) | (mant >> 13);
    const std::uint32_t rem = mant & 0x1fffu;
    if (rem > 0x1000u || (rem == 0x1000u && (h & 1u))) ++h;  // a carry may reach inf (0x7c00): correct
    return static_cast<std::uint16_t>(sign | h);
  }
  // Subnormal f16 (or zero): value = m * 2^(exp - 150); in units of 2^-24 that is m >> (126 - exp).
  const int shift = 126 - static_cast<int>(exp);
  if (shift > 25) return sign;  // below half the smallest subnormal: rounds to (signed) zero
  const std::uint32_t m = mant | 0x800000u;
  std::uint32_t q = m >> shift;
  const std::uint32_t rem = m & ((1u << shift) - 1u), halfway = 1u << (shift - 1);
  if (rem > halfway || (rem == halfway && (q & 1u))) ++q;  // may become the smallest normal: correct
  return static_cast<std::uint16_t>(sign | q);
}

inline float f16_to_float(std::uint16_t h) {
  const std::uint32_t sign = static_cast<std::uint32_t>(h & 0x8000u) << 16;
  const std::uint32_t exp = (h >> 10) & 0x1fu, mant = h & 0x3ffu;
  if (exp == 0) {  // zero or subnormal: mant * 2^-24, exact in float
    const float v = std::ldexp(static_cast<float>(mant), -24);
    return sign ? -v : v;
  }
  if (exp == 0x1f) return std::bit_cast<float>(sign | 0x7f800000u | (mant << 13));
  return std::bit_cast<float>(sign | ((exp - 15 + 127) << 23) | (mant << 13));
}

// ---- bfloat16: the top half of a float ----

inline std::uint16_t float_to_bf16(float f) {
  const std::uint32_t x = std::bit_cast<std::uint32_t>(f);
  if ((x & 0x7fffffffu) > 0x7f800000u) return static_cast<std::uint16_t>((x >> 16) | 0x0040u);  // quiet NaN
  const std::uint32_t bias = 0x7fffu + ((x >> 16) & 1u);  // ties to even; overflow rounds to inf
  return static_cast<std::uint16_t>((x + bias) >> 16);
}

inline float bf16_to_float(std::uint16_t b) { return std::bit_cast<float>(static_cast<std::uint32_t>(b) << 16); }

// ---- F16C fast paths (x86): the hardware conversions round to nearest even exactly like the scalar code,
// so results are bit-identical either way; picked at run time so the build needs no -mf16c. ----
#if defined(__x86_64__) && defined(__GNUC__)
inline bool have_f16c() {
  // F16C from CPUID itself: clang's __builtin_cpu_supports does not know "f16c". "avx" also says the OS
  // saves the registers.
  static const bool yes = [] {
    unsigned a = 0, b = 0, c = 0, d = 0;
    return __get_cpuid(1, &a, &b, &c, &d) && (c & bit_F16C) != 0 && __builtin_cpu_supports("avx");
  }();
  return yes;
}
__attribute__((target("avx,f16c"))) inline std::size_t f16c_sum(std::uint16_t* a, const std::uint16_t* b,
                                                                std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8) {
    const __m256 x = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(a + i)));
    const __m256 y = _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(b + i)));
    _mm_storeu_si128(reinterpret_cast<__m128i*>(a + i),
                     _mm256_cvtps_ph(_mm256_add_ps(x, y), _MM_FROUND_TO_NEAREST_INT));
  }
  return i;  // elements done
}
__attribute__((target("avx,f16c"))) inline std::size_t f16c_from_floats(const float* in, std::uint16_t* out,
                                                                        std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out + i),
                     _mm256_cvtps_ph(_mm256_loadu_ps(in + i), _MM_FROUND_TO_NEAREST_INT));
  return i;
}
__attribute__((target("avx,f16c"))) inline std::size_t f16c_to_floats(const std::uint16_t* in, float* out,
                                                                      std::size_t n) {
  std::size_t i = 0;
  for (; i + 8 <= n; i += 8)
    _mm256_storeu_ps(out + i, _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(in + i))));
  return i;
}
#define DDPLAB_HAVE_F16C_PATH 1
#endif

// ---- sums, as the executor reduces them ----

inline std::uint16_t f16_add(std::uint16_t a, std::uint16_t b) {
  return float_to_f16(f16_to_float(a) + f16_to_float(b));
}
inline std::uint16_t bf16_add(std::uint16_t a, std::uint16_t b) {
  return float_to_bf16(bf16_to_float(a) + bf16_to_float(b));
}

// acc[i] = acc[i] + in[i] in the element type (F32, F16 or BF16). Reducing ranks in a fixed order with
// this gives every rank the same bits. IndexValue pairs cannot be summed: throws InternalError.
inline void sum_into(ElemType type, void* acc, const void* in, std::size_t n) {
  switch (type) {
    case ElemType::F32: {
      float* a = static_cast<float*>(acc);
      const float* b = static_cast<const float*>(in);
      for (std::size_t i = 0; i < n; ++i) a[i] += b[i];
      return;
    }
    case ElemType::F16: {
      std::uint16_t* a = static_cast<std::uint16_t*>(acc);
      const std::uint16_t* b = static_cast<const std::uint16_t*>(in);
      std::size_t i = 0;
#ifdef DDPLAB_HAVE_F16C_PATH
      if (have_f16c()) i = f16c_sum(a, b, n);
#endif
      for (; i < n; ++i) a[i] = f16_add(a[i], b[i]);
      return;
    }
    case ElemType::BF16: {
      std::uint16_t* a = static_cast<std::uint16_t*>(acc);
      const std::uint16_t* b = static_cast<const std::uint16_t*>(in);
      for (std::size_t i = 0; i < n; ++i) a[i] = bf16_add(a[i], b[i]);
      return;
    }
    case ElemType::IndexValue:
      break;
  }
  throw InternalError(std::string("sum_into: cannot sum elements of type ") + elem_name(type));
}

// Array conversions, for the codecs and for executors that stage half buffers.
inline void floats_to_f16(const float* in, std::uint16_t* out, std::size_t n) {
  std::size_t i = 0;
#ifdef DDPLAB_HAVE_F16C_PATH
  if (have_f16c()) i = f16c_from_floats(in, out, n);
#endif
  for (; i < n; ++i) out[i] = float_to_f16(in[i]);
}
inline void f16_to_floats(const std::uint16_t* in, float* out, std::size_t n) {
  std::size_t i = 0;
#ifdef DDPLAB_HAVE_F16C_PATH
  if (have_f16c()) i = f16c_to_floats(in, out, n);
#endif
  for (; i < n; ++i) out[i] = f16_to_float(in[i]);
}
inline void floats_to_bf16(const float* in, std::uint16_t* out, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i] = float_to_bf16(in[i]);
}
inline void bf16_to_floats(const std::uint16_t* in, float* out, std::size_t n) {
  for (std::size_t i = 0; i < n; ++i) out[i] = bf16_to_float(in[i]);
}

}  // namespace ddplab
