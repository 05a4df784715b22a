// The small dense linear algebra PowerSGD needs (tall-skinny products, Gram-Schmidt) and a portable
// normal generator. Written out by hand: strategies/ depends on no BLAS. Products accumulate in double so
// results do not depend on summation-order tricks, and every rank computing on the same data gets the same bits.
#include <algorithm>
#include <cmath>
#include <numbers>
#include <vector>

#include "codecs/codec_impl.hpp"

namespace ddplab::codec_detail {

void matmul(const float* m, const float* q, float* p, std::size_t n, std::size_t c, std::size_t k) {
  std::vector<double> acc(k);
  for (std::size_t i = 0; i < n; ++i) {
    std::fill(acc.begin(), acc.end(), 0.0);
    const float* row = m + i * c;
    for (std::size_t j = 0; j < c; ++j) {
      const double mij = row[j];
      const float* qj = q + j * k;
      for (std::size_t t = 0; t < k; ++t) acc[t] += mij * qj[t];
    }
    for (std::size_t t = 0; t < k; ++t) p[i * k + t] = static_cast<float>(acc[t]);
  }
}

void matmul_tn(const float* m, const float* p, float* q, std::size_t n, std::size_t c, std::size_t k) {
  std::vector<double> acc(c * k, 0.0);
  for (std::size_t i = 0; i < n; ++i) {
    const float* row = m + i * c;
    const float* pi = p + i * k;
    for (std::size_t j = 0; j < c; ++j) {
      const double mij = row[j];
      double* aj = acc.data() + j * k;
      for (std::size_t t = 0; t < k; ++t) aj[t] += mij * pi[t];
    }
  }
  for (std::size_t x = 0; x < c * k; ++x) q[x] = static_cast<float>(acc[x]);
}

void matmul_nt(const float* p, const float* q, float* m, std::size_t n, std::size_t c, std::size_t k) {
  for (std::size_t i = 0; i < n; ++i) {
    const float* pi = p + i * k;
    for (std::size_t j = 0; j < c; ++j) {
      const float* qj = q + j * k;
      double s = 0.0;
      for (std::size_t t = 0; t < k; ++t) s += static_cast<double>(pi[t]) * qj[t];
      m[i * c + j] = static_cast<float>(s);
    }
  }
}

void orthogonalize(float* a, std::size_t n, std::size_t k, float epsilon) {
  // Works in double, column by column: remove the projections on the columns before (two passes, since
  // one pass of Gram-Schmidt loses orthogonality when a column is nearly dependent on earlier ones, as
  // the extra columns of P are when rank exceeds the gradient's true rank), then normalize.
  std::vector<double> w(a, a + n * k);
  const auto at = [&](std::size_t r, std::size_t c) -> double& { return w[r * k + c]; };
  for (std::size_t i = 0; i < k; ++i) {
    for (int pass = 0; pass < 2; ++pass)
      for (std::size_t j = 0; j < i; ++j) {
        double dot = 0.0;
        for (std::size_t r = 0; r < n; ++r) dot += at(r, j) * at(r, i);
        for (std::size_t r = 0; r < n; ++r) at(r, i) -= dot * at(r, j);
      }
    double norm = 0.0;
    for (std::size_t r = 0; r < n; ++r) norm += at(r, i) * at(r, i);
    const double denom = std::sqrt(norm) + static_cast<double>(epsilon);
    // PyTorch divides by zero here (NaN) when a column vanishes and epsilon is 0; a zero column is kept
    // at zero instead, which is what its error branch intends.
    for (std::size_t r = 0; r < n; ++r) at(r, i) = denom > 0.0 ? at(r, i) / denom : 0.0;
  }
  for (std::size_t x = 0; x < n * k; ++x) a[x] = static_cast<float>(w[x]);
}

double orthogonalize_flops(std::size_t n, std::size_t k) {
  // Per column: norm (2n) and scale (n); per earlier column and pass: dot (2n) and update (2n).
  const double dn = static_cast<double>(n), dk = static_cast<double>(k);
  return 3.0 * dn * dk + 4.0 * dn * dk * (dk - 1.0);
}

namespace {
std::uint64_t splitmix64(std::uint64_t& state) {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}
}  // namespace

std::uint64_t mix_seed(std::uint64_t a, std::uint64_t b) {
  std::uint64_t s = a ^ (b * 0xd1b54a32d192ed03ull);
  splitmix64(s);
  return splitmix64(s);
}

void fill_standard_normal(float* out, std::size_t count, std::uint64_t seed) {
  std::uint64_t state = seed;
  const double two_pi = 2.0 * std::numbers::pi;
  for (std::size_t i = 0; i < count; i += 2) {
    // Box-Muller; u1 in (0, 1] so the log is finite.
    const double u1 = static_cast<double>((splitmix64(state) >> 11) + 1) * 0x1.0p-53;
    const double u2 = static_cast<double>(splitmix64(state) >> 11) * 0x1.0p-53;
    const double r = std::sqrt(-2.0 * std::log(u1));
    out[i] = static_cast<float>(r * std::cos(two_pi * u2));
    if (i + 1 < count) out[i + 1] = static_cast<float>(r * std::sin(two_pi * u2));
  }
}

}  // namespace ddplab::codec_detail
