// CPU backend: GEMM on OpenBLAS (cblas_sgemm), the rest as plain loops the compiler vectorises.
#include <cblas.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <new>
#include <stdexcept>

#include "ddplab/core/error.hpp"
#include "ddplab/runtime/ops.hpp"
#include "host_layers.hpp"
#include "host_transformer.hpp"
#include "ddplab/strategies/codec_compute.hpp"

namespace ddplab {
namespace {

template <class T>
T* alloc_zeroed(std::size_t n) {
  // 64-byte alignment for AVX-512 loads; aligned_alloc needs a multiple of the alignment.
  std::size_t bytes = std::max<std::size_t>(64, (n * sizeof(T) + 63) / 64 * 64);
  void* p = std::aligned_alloc(64, bytes);
  if (!p) throw std::bad_alloc();
  std::memset(p, 0, bytes);
  return static_cast<T*>(p);
}

class CpuOps final : public HostLayerOps {
 public:
  std::string name() const override { return "cpu"; }
  CodecCompute& codec_compute() override { return host_codec_compute(); }
  TransformerKernels* transformer() override { return &blas_transformer_kernels(); }
  float* alloc(std::size_t n) override { return alloc_zeroed<float>(n); }
  void free(float* p) override { std::free(p); }
  std::int32_t* alloc_labels(std::size_t n) override { return alloc_zeroed<std::int32_t>(n); }
  void free_labels(std::int32_t* p) override { std::free(p); }
  void to_device(float* dst, const float* host, std::size_t n) override { copy(dst, host, n); }
  void to_host(float* host, const float* src, std::size_t n) override { copy(host, src, n); }
  void labels_to_device(std::int32_t* dst, const std::int32_t* host, std::size_t n) override {
    if (dst != host) std::memcpy(dst, host, n * sizeof(std::int32_t));
  }
  void synchronize() override {}

  void gemm(bool ta, bool tb, int m, int n, int k, float alpha, const float* a, int lda, const float* b, int ldb,
            float beta, float* c, int ldc) override {
    cblas_sgemm(CblasRowMajor, ta ? CblasTrans : CblasNoTrans, tb ? CblasTrans : CblasNoTrans, m, n, k, alpha, a, lda,
                b, ldb, beta, c, ldc);
  }
  void add_bias(float* y, const float* bias, int rows, int cols) override {
    for (int i = 0; i < rows; ++i) {
      float* row = y + static_cast<std::size_t>(i) * cols;
      for (int j = 0; j < cols; ++j) row[j] += bias[j];
    }
  }
  void bias_grad(const float* dy, float* db, int rows, int cols, bool accumulate) override {
    if (!accumulate) std::fill(db, db + cols, 0.0f);
    for (int i = 0; i < rows; ++i) {
      const float* row = dy + static_cast<std::size_t>(i) * cols;
      for (int j = 0; j < cols; ++j) db[j] += row[j];
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
    if (rows <= 0) return 0.0;
    double total = 0, weights = rows;
    if (w) {
      weights = 0;
      for (int i = 0; i < rows; ++i) weights += labels[i] >= 0 && labels[i] < cols ? w[labels[i]] : 0.0f;
    }
    const float inv_rows = 1.0f / static_cast<float>(weights);
    for (int i = 0; i < rows; ++i) {
      const float* z = logits + static_cast<std::size_t>(i) * cols;
      const int y = labels[i];
      if (y < 0 || y >= cols)
        throw std::out_of_range("softmax_xent: label " + std::to_string(y) + " outside [0, " + std::to_string(cols) +
                                ")");
      const float rw = w ? w[y] : 1.0f;
      float zmax = -std::numeric_limits<float>::infinity();
      for (int j = 0; j < cols; ++j) zmax = std::max(zmax, z[j]);
      double sum = 0;
      for (int j = 0; j < cols; ++j) sum += std::exp(static_cast<double>(z[j] - zmax));
      const double log_sum = std::log(sum);
      total += rw * (log_sum - static_cast<double>(z[y] - zmax));
      if (dlogits) {
        const float scale = w ? rw * inv_rows : inv_rows;
        float* d = dlogits + static_cast<std::size_t>(i) * cols;
        for (int j = 0; j < cols; ++j)
          d[j] = static_cast<float>(std::exp(static_cast<double>(z[j] - zmax) - log_sum)) * scale;
        d[y] -= scale;
      }
    }
    return total / weights;
  }
  void scale(float* x, std::size_t n, float alpha) override {
    for (std::size_t i = 0; i < n; ++i) x[i] *= alpha;
  }

 private:
  static void copy(float* dst, const float* src, std::size_t n) {
    if (dst != src) std::memcpy(dst, src, n * sizeof(float));
  }
};

}  // namespace

std::unique_ptr<Ops> make_ops(const std::string& backend) {
  if (backend == "cpu") return std::make_unique<CpuOps>();
  if (backend == "reference") return make_reference_ops();
  if (backend == "cuda") return make_cuda_ops();
  throw InputError("unknown backend \"" + backend + "\" (known: cpu, reference, cuda)");
}

std::unique_ptr<Ops> make_ops(Backend backend, bool tf32) {
  return backend == Backend::Cpu ? std::make_unique<CpuOps>() : make_cuda_ops(tf32);
}

}  // namespace ddplab
