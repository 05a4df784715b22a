// A test backend that forwards every op to a real one (CPU by default), so a test overrides only the
// behaviour it examines: claiming device memory, counting allocations, holding a prefetch back.
#pragma once
#include <memory>
#include <string>

#include "ddplab/runtime/ops.hpp"

namespace ddplab {

class ForwardingOps : public Ops {
 public:
  explicit ForwardingOps(std::unique_ptr<Ops> in = make_ops("cpu")) : in_(std::move(in)) {}
  std::string name() const override { return in_->name(); }
  float* alloc(std::size_t n) override { return in_->alloc(n); }
  void free(float* p) override { in_->free(p); }
  std::int32_t* alloc_labels(std::size_t n) override { return in_->alloc_labels(n); }
  void free_labels(std::int32_t* p) override { in_->free_labels(p); }
  void to_device(float* d, const float* h, std::size_t n) override { in_->to_device(d, h, n); }
  void to_host(float* h, const float* d, std::size_t n) override { in_->to_host(h, d, n); }
  void labels_to_device(std::int32_t* d, const std::int32_t* h, std::size_t n) override {
    in_->labels_to_device(d, h, n);
  }
  void synchronize() override { in_->synchronize(); }
  void gemm(bool ta, bool tb, int m, int n, int k, float alpha, const float* a, int lda, const float* b, int ldb,
            float beta, float* c, int ldc) override {
    in_->gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  }
  void add_bias(float* y, const float* b, int r, int c) override { in_->add_bias(y, b, r, c); }
  void bias_grad(const float* dy, float* db, int r, int c, bool acc) override { in_->bias_grad(dy, db, r, c, acc); }
  void relu(float* y, std::size_t n) override { in_->relu(y, n); }
  void relu_backward(float* dx, const float* y, std::size_t n) override { in_->relu_backward(dx, y, n); }
  double softmax_xent(const float* z, const std::int32_t* y, int r, int c, float* dz, const float* w) override {
    return in_->softmax_xent(z, y, r, c, dz, w);
  }
  void scale(float* x, std::size_t n, float a) override { in_->scale(x, n, a); }
  void im2col(const float* x, float* col, int n, int h, int w, int c, int k) override {
    in_->im2col(x, col, n, h, w, c, k);
  }
  void col2im(const float* col, float* dx, int n, int h, int w, int c, int k) override {
    in_->col2im(col, dx, n, h, w, c, k);
  }
  void max_pool(const float* x, float* y, int n, int h, int w, int c) override { in_->max_pool(x, y, n, h, w, c); }
  void max_pool_backward(const float* x, const float* y, const float* dy, float* dx, int n, int h, int w,
                         int c) override {
    in_->max_pool_backward(x, y, dy, dx, n, h, w, c);
  }
  void channel_moments(const float* x, int r, int c, float* out) override { in_->channel_moments(x, r, c, out); }
  void batch_norm_statistics(const float* m, int c, float* mean, float* var, float* rm, float* rv, float mom) override {
    in_->batch_norm_statistics(m, c, mean, var, rm, rv, mom);
  }
  void batch_norm(const float* x, float* y, int r, int c, const float* mean, const float* var, const float* g,
                  const float* b, float eps) override {
    in_->batch_norm(x, y, r, c, mean, var, g, b, eps);
  }
  void batch_norm_backward_sums(const float* dy, const float* x, int r, int c, const float* mean, const float* var,
                                float eps, float* out) override {
    in_->batch_norm_backward_sums(dy, x, r, c, mean, var, eps, out);
  }
  void batch_norm_backward(const float* dy, const float* x, int r, int c, const float* mean, const float* var,
                           const float* g, float eps, const float* sums, const float* count, float* dx) override {
    in_->batch_norm_backward(dy, x, r, c, mean, var, g, eps, sums, count, dx);
  }
  CodecCompute& codec_compute() override { return in_->codec_compute(); }
  TransformerKernels* transformer() override { return in_->transformer(); }
  void prefetch(void* dst, const void* host, std::size_t bytes) override { in_->prefetch(dst, host, bytes); }
  void wait_prefetch() override { in_->wait_prefetch(); }
  void bind_thread() override { in_->bind_thread(); }
  bool can_release() const override { return in_->can_release(); }
  std::size_t release(float* p, std::size_t n) override { return in_->release(p, n); }

 protected:
  std::unique_ptr<Ops> in_;
};

// The CPU backend, claiming device memory (so PlanExecutor stages its comm through host memory, as for
// cuda+mpi) and counting host allocations.
class StagedCpuOps final : public ForwardingOps {
 public:
  std::string name() const override { return "cpu-staged"; }
  bool device_memory() const override { return true; }
  void* alloc_host(std::size_t bytes) override { return ++host_allocs, Ops::alloc_host(bytes); }
  int host_allocs = 0;
};

}  // namespace ddplab
