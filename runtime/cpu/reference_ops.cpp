// Reference backend: every op as the plainest loop over host memory, accumulating in double, with no BLAS.
// Speed is no goal: its job is to be obviously right, so that the CUDA ops (and
// anything else) can be checked against it on machines that have no OpenBLAS, such as the GPU check host.
#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include "ddplab/runtime/ops.hpp"
#include "host_layers.hpp"
#include "ddplab/strategies/codec_compute.hpp"

namespace ddplab {
namespace {

template <class T>
T* zeroed(std::size_t n) {
  return new T[n == 0 ? 1 : n]();
}

class ReferenceOps final : public HostLayerOps {
 public:
  std::string name() const override { return "reference"; }
  CodecCompute& codec_compute() override { return host_codec_compute(); }
  float* alloc(std::size_t n) override { return zeroed<float>(n); }
  void free(float* p) override { delete[] p; }
  std::int32_t* alloc_labels(std::size_t n) override { return zeroed<std::int32_t>(n); }
  void free_labels(std::int32_t* p) override { delete[] p; }
  void to_device(float* dst, const float* host, std::size_t n) override { std::copy(host, host + n, dst); }
  void to_host(float* host, const float* src, std::size_t n) override { std::copy(src, src + n, host); }
  void labels_to_device(std::int32_t* dst, const std::int32_t* host, std::size_t n) override {
    std::copy(host, host + n, dst);
  }
  void synchronize() override {}

  // Row-major: A(i,p) is a[i*lda + p] untransposed, a[p*lda + i] transposed; likewise B.
  void gemm(bool ta, bool tb, int m, int n, int k, float alpha, const float* a, int lda, const float* b, int ldb,
            float beta, float* c, int ldc) override {
    std::vector<double> row(static_cast<std::size_t>(n));
    for (int i = 0; i < m; ++i) {
      std::fill(row.begin(), row.end(), 0.0);
      for (int p = 0; p < k; ++p) {
        const double aip = ta ? a[static_cast<std::size_t>(p) * lda + i] : a[static_cast<std::size_t>(i) * lda + p];
        if (aip == 0.0) continue;
        for (int j = 0; j < n; ++j)
          row[static_cast<std::size_t>(j)] +=
              aip * (tb ? b[static_cast<std::size_t>(j) * ldb + p] : b[static_cast<std::size_t>(p) * ldb + j]);
      }
      float* ci = c + static_cast<std::size_t>(i) * ldc;
      for (int j = 0; j < n; ++j) {
        // beta == 0 ignores C, as BLAS does (it may hold NaN from uninitialised memory).
        const double prior = beta == 0.0f ? 0.0 : static_cast<double>(beta) * ci[j];
        ci[j] = static_cast<float>(alpha * row[static_cast<std::size_t>(j)] + prior);
      }
    }
  }
  void add_bias(float* y, const float* bias, int rows, int cols) override {
    for (int i = 0; i < rows; ++i)
      for (int j = 0; j < cols; ++j) y[static_cast<std::size_t>(i) * cols + j] += bias[j];
  }
  void bias_grad(const float* dy, float* db, int rows, int cols, bool accumulate) override {
    for (int j = 0; j < cols; ++j) {
      double s = accumulate ? db[j] : 0.0;
      for (int i = 0; i < rows; ++i) s += dy[static_cast<std::size_t>(i) * cols + j];
      db[j] = static_cast<float>(s);
    }
  }
  void relu(float* y, std::size_t n) override {
    for (std::size_t i = 0; i < n; ++i) y[i] = y[i] > 0.0f ? y[i] : 0.0f;
  }
  void relu_backward(float* dx, const float* y, std::size_t n) override {
    for (std::size_t i = 0; i < n; ++i) dx[i] = y[i] > 0.0f ? dx[i] : 0.0f;
  }
  double softmax_xent(const float* logits, const std::int32_t* labels, int rows, int cols, float* dlogits,
                      const float* w) override {
    double total = 0, weights = rows;
    if (w) {
      weights = 0;
      for (int i = 0; i < rows; ++i) weights += labels[i] >= 0 && labels[i] < cols ? w[labels[i]] : 0.0;
    }
    for (int i = 0; i < rows; ++i) {
      const float* z = logits + static_cast<std::size_t>(i) * cols;
      const int y = labels[i];
      if (y < 0 || y >= cols)
        throw std::out_of_range("softmax_xent: label " + std::to_string(y) + " outside [0, " + std::to_string(cols) +
                                ")");
      double zmax = -std::numeric_limits<double>::infinity();
      for (int j = 0; j < cols; ++j) zmax = std::max(zmax, static_cast<double>(z[j]));
      double sum = 0;
      for (int j = 0; j < cols; ++j) sum += std::exp(z[j] - zmax);
      const double log_sum = std::log(sum);
      const double rw = w ? w[y] : 1.0;
      total += rw * (log_sum - (z[y] - zmax));
      if (dlogits)
        for (int j = 0; j < cols; ++j)
          dlogits[static_cast<std::size_t>(i) * cols + j] =
              static_cast<float>(rw * (std::exp(z[j] - zmax - log_sum) - (j == y ? 1.0 : 0.0)) / weights);
    }
    return rows > 0 ? total / weights : 0.0;
  }
  void scale(float* x, std::size_t n, float alpha) override {
    for (std::size_t i = 0; i < n; ++i) x[i] = static_cast<float>(static_cast<double>(x[i]) * alpha);
  }
};

}  // namespace

std::unique_ptr<Ops> make_reference_ops() { return std::make_unique<ReferenceOps>(); }

}  // namespace ddplab
