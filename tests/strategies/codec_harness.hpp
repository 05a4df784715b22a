// Test harness shared by the codec tests: runs one codec instance per simulated rank, each in its own
// thread, over an in-memory CollectiveFn that really sums (in the call's element type, in rank order, so
// every rank gets the same bits) or concatenates. Every call is checked against the codec's plan():
// same collective, type, count and label, in the announced order, and plans must agree across ranks. The
// codec's local work goes through a WorkRecorder, and must be exactly the work its plan announced before
// and after each call (what the simulator charges).
// Each rank's input and output bytes of every call are logged for the tests to inspect.
#pragma once
#include <gtest/gtest.h>

#include <condition_variable>
#include <cstddef>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ddplab/strategies/codec.hpp"
#include "ddplab/strategies/codec_compute.hpp"
#include "ddplab/strategies/half.hpp"

namespace ddplab::testing {

// A reusable barrier that can be aborted, so a failing rank cannot leave the others waiting forever.
class Rendezvous {
 public:
  struct Aborted {};
  explicit Rendezvous(std::size_t n) : n_(n) {}
  void wait() {
    std::unique_lock lock(m_);
    if (aborted_) throw Aborted{};
    const std::size_t gen = generation_;
    if (++arrived_ == n_) {
      arrived_ = 0;
      ++generation_;
      cv_.notify_all();
      return;
    }
    cv_.wait(lock, [&] { return generation_ != gen || aborted_; });
    if (aborted_) throw Aborted{};
  }
  void abort() {
    std::lock_guard lock(m_);
    aborted_ = true;
    cv_.notify_all();
  }

 private:
  std::mutex m_;
  std::condition_variable cv_;
  std::size_t n_, arrived_ = 0, generation_ = 0;
  bool aborted_ = false;
};

// The host compute, logging each call that does work as the LocalWork a plan would announce for it.
class WorkRecorder final : public CodecCompute {
 public:
  std::vector<LocalWork> log;
  std::string name() const override { return "recorder"; }
  void* alloc(std::size_t bytes) override { return h().alloc(bytes); }
  void free(void* p) override { h().free(p); }
  void upload(void* dst, const void* host, std::size_t bytes) override { h().upload(dst, host, bytes); }
  void download(void* host, const void* src, std::size_t bytes) override { h().download(host, src, bytes); }
  void copy(void* dst, const void* src, std::size_t bytes) override {
    log.push_back({WorkKind::Copy, bytes});
    h().copy(dst, src, bytes);
  }
  void fill(float* x, std::size_t n, float v) override { log.push_back({WorkKind::Fill, n}), h().fill(x, n, v); }
  void divide(float* x, std::size_t n, float w) override { log.push_back({WorkKind::Divide, n}), h().divide(x, n, w); }
  void add(float* x, const float* y, std::size_t n) override { log.push_back({WorkKind::Add, n}), h().add(x, y, n); }
  void sub(float* o, const float* a, const float* b, std::size_t n) override {
    log.push_back({WorkKind::Sub, n}), h().sub(o, a, b, n);
  }
  // The optimizers' primitives are no codec work: a codec that called one would do work its plan hides.
  void scale(float* x, std::size_t n, float a) override { not_codec_work("scale"), h().scale(x, n, a); }
  void axpby(float* y, const float* x, std::size_t n, float a, float b) override {
    not_codec_work("axpby"), h().axpby(y, x, n, a, b);
  }
  void ema_square(float* v, const float* x, std::size_t n, float b) override {
    not_codec_work("ema_square"), h().ema_square(v, x, n, b);
  }
  void add_rms_ratio(float* y, const float* m, const float* v, std::size_t n, float a, float b, float vs,
                     float e) override {
    not_codec_work("add_rms_ratio"), h().add_rms_ratio(y, m, v, n, a, b, vs, e);
  }
  double sum_squares(const float* x, std::size_t n) override {
    return not_codec_work("sum_squares"), h().sum_squares(x, n);
  }
  void to_half(ElemType t, const float* in, std::uint16_t* out, std::size_t n) override {
    log.push_back({WorkKind::ToHalf, n, 0, 0, t}), h().to_half(t, in, out, n);
  }
  void from_half(ElemType t, const std::uint16_t* in, float* out, std::size_t n) override {
    log.push_back({WorkKind::FromHalf, n, 0, 0, t}), h().from_half(t, in, out, n);
  }
  void topk(const float* v, std::size_t n, std::size_t k, IndexValue* out) override {
    log.push_back({WorkKind::TopK, n, 0, k}), h().topk(v, n, k, out);
  }
  void zero_at(float* x, const IndexValue* pairs, std::size_t count) override {
    log.push_back({WorkKind::ZeroAt, count}), h().zero_at(x, pairs, count);
  }
  void scatter_add(float* dense, std::size_t n, const IndexValue* pairs, std::size_t groups, std::size_t per) override {
    log.push_back({WorkKind::ScatterAdd, n, groups, per}), h().scatter_add(dense, n, pairs, groups, per);
  }
  void matmul(const float* m, const float* q, float* p, std::size_t n, std::size_t c, std::size_t k) override {
    log.push_back({WorkKind::MatMul, n, c, k}), h().matmul(m, q, p, n, c, k);
  }
  void matmul_tn(const float* m, const float* p, float* q, std::size_t n, std::size_t c, std::size_t k) override {
    log.push_back({WorkKind::MatMulTN, n, c, k}), h().matmul_tn(m, p, q, n, c, k);
  }
  void matmul_nt(const float* p, const float* q, float* m, std::size_t n, std::size_t c, std::size_t k) override {
    log.push_back({WorkKind::MatMulNT, n, c, k}), h().matmul_nt(p, q, m, n, c, k);
  }
  void orthogonalize(float* a, std::size_t n, std::size_t k, float eps) override {
    log.push_back({WorkKind::Orthogonalize, n, 0, k}), h().orthogonalize(a, n, k, eps);
  }

 private:
  static CodecCompute& h() { return host_codec_compute(); }
  static void not_codec_work(const char* call) {
    ADD_FAILURE() << "a codec called " << call << ", which no plan announces";
  }
};

// One recorder per codec object, alive until the test process ends (codecs free their state through it).
inline WorkRecorder& recorder_for(const Codec* codec) {
  static std::mutex mu;
  static std::map<const Codec*, std::unique_ptr<WorkRecorder>> all;
  std::lock_guard lock(mu);
  auto& r = all[codec];
  if (!r) r = std::make_unique<WorkRecorder>();
  return *r;
}

inline std::string describe(const std::vector<LocalWork>& ws) {
  std::string out;
  for (const LocalWork& w : ws)
    out += (out.empty() ? "" : ", ") + work_key(w) + "(" + std::to_string(w.n) + "," + std::to_string(w.c) + "," +
           std::to_string(w.k) + ")";
  return "[" + out + "]";
}

struct CallLog {
  CollectiveCall call;
  std::vector<std::byte> input;   // this rank's contribution (count elements)
  std::vector<std::byte> output;  // the whole buffer after the collective
  template <class T>
  std::vector<T> input_as() const {
    return as<T>(input);
  }
  template <class T>
  std::vector<T> output_as() const {
    return as<T>(output);
  }
  template <class T>
  static std::vector<T> as(const std::vector<std::byte>& b) {
    std::vector<T> v(b.size() / sizeof(T));
    if (!v.empty()) std::memcpy(v.data(), b.data(), v.size() * sizeof(T));
    return v;
  }
};

struct CodecStep {
  std::vector<std::vector<float>> grads;    // per rank, after run()
  std::vector<std::vector<CallLog>> calls;  // per rank, in order
  std::vector<CollectiveCall> plan;         // rank 0's plan
  bool ok = true;
};

inline bool same_call(const CollectiveCall& a, const CollectiveCall& b) {
  return a.collective == b.collective && a.type == b.type && a.count == b.count && a.label == b.label &&
         a.before == b.before && a.after == b.after;
}

inline std::string describe(const CollectiveCall& c) {
  return ddplab::to_string(c.collective) + "(" + elem_name(c.type) + " x " + std::to_string(c.count) + ", \"" +
         c.label + "\")";
}

// One step of `codecs` (one per rank) on `grads` (one bucket's gradients per rank).
inline CodecStep run_codec_step(const std::vector<Codec*>& codecs, const BucketLayout& bucket,
                                std::vector<std::vector<float>> grads, std::int64_t step) {
  const std::size_t n = codecs.size();
  const int world = static_cast<int>(n);
  CodecStep out;
  out.calls.resize(n);
  std::vector<std::vector<CollectiveCall>> plans(n);
  for (std::size_t r = 0; r < n; ++r) {
    plans[r] = codecs[r]->plan(bucket, world, step);
    EXPECT_EQ(grads[r].size(), bucket.count) << "rank " << r;
    bool same = plans[r].size() == plans[0].size();
    for (std::size_t i = 0; same && i < plans[r].size(); ++i) same = same_call(plans[r][i], plans[0][i]);
    if (!same) {
      ADD_FAILURE() << "rank " << r << "'s plan differs from rank 0's";
      out.ok = false;
      return out;
    }
  }
  out.plan = plans[0];

  Rendezvous rv(n);
  std::vector<std::vector<std::byte>> slot(n);
  std::vector<std::string> errors(n);
  auto rank_main = [&](std::size_t rank) {
    std::size_t next = 0;
    const auto& plan = plans[rank];
    // A codec keeps state allocated by the compute it ran with, so each codec keeps its recorder for good.
    WorkRecorder& work = recorder_for(codecs[rank]);
    work.log.clear();
    std::vector<LocalWork> announced;  // the plan's work up to where run() is
    CollectiveFn fn = [&](const CollectiveCall& c, void* buf) {
      if (next < plan.size()) {
        announced.insert(announced.end(), plan[next].before.begin(), plan[next].before.end());
        if (work.log != announced) {
          errors[rank] = "local work before call " + std::to_string(next) + " was " + describe(work.log) +
                         ", plan says " + describe(announced);
          throw Rendezvous::Aborted{};
        }
        announced.insert(announced.end(), plan[next].after.begin(), plan[next].after.end());
      }
      if (next >= plan.size()) {
        errors[rank] = "extra call " + describe(c) + " beyond the " + std::to_string(plan.size()) + " planned";
        throw Rendezvous::Aborted{};
      }
      if (!same_call(c, plan[next])) {
        errors[rank] = "call " + std::to_string(next) + " is " + describe(c) + ", plan says " + describe(plan[next]);
        throw Rendezvous::Aborted{};
      }
      const std::size_t own = c.count * elem_bytes(c.type);
      const bool gather = c.collective == ddplab::Collective::AllGather;
      if (!gather && c.collective != ddplab::Collective::Allreduce) {
        errors[rank] = "unknown collective " + ddplab::to_string(c.collective);
        throw Rendezvous::Aborted{};
      }
      std::byte* b = static_cast<std::byte*>(buf);
      std::byte* mine = gather ? b + rank * own : b;
      CallLog log{c, std::vector<std::byte>(mine, mine + own), {}};
      slot[rank] = log.input;
      rv.wait();  // everyone's contribution is in
      if (gather) {
        for (std::size_t r = 0; r < n; ++r)
          if (own) std::memcpy(b + r * own, slot[r].data(), own);
      } else {
        std::vector<std::byte> sum = slot[0];
        for (std::size_t r = 1; r < n; ++r) sum_into(c.type, sum.data(), slot[r].data(), c.count);
        if (own) std::memcpy(b, sum.data(), own);
      }
      log.output.assign(b, b + (gather ? n * own : own));
      out.calls[rank].push_back(std::move(log));
      rv.wait();  // everyone has read the slots
      ++next;
    };
    try {
      codecs[rank]->run(bucket, grads[rank].data(), world, step, fn, work);
      if (next != plan.size())
        errors[rank] = "issued " + std::to_string(next) + " calls, plan says " + std::to_string(plan.size());
      else if (work.log != announced)
        errors[rank] = "local work was " + describe(work.log) + ", plan says " + describe(announced);
    } catch (const Rendezvous::Aborted&) {
      if (errors[rank].empty()) errors[rank] = "aborted by another rank";
    } catch (const std::exception& e) {
      errors[rank] = std::string("threw: ") + e.what();
    }
    if (!errors[rank].empty()) rv.abort();
  };
  std::vector<std::thread> threads;
  for (std::size_t r = 0; r < n; ++r) threads.emplace_back(rank_main, r);
  for (auto& t : threads) t.join();
  for (std::size_t r = 0; r < n; ++r)
    if (!errors[r].empty() && errors[r] != "aborted by another rank") {
      ADD_FAILURE() << codecs[r]->name() << " rank " << r << ": " << errors[r];
      out.ok = false;
    }
  out.grads = std::move(grads);
  return out;
}

// n codec instances built alike (same options, same seed), as every rank would build them.
inline std::vector<std::unique_ptr<Codec>> make_ranks(const std::string& name, const CodecOptions& options, int n,
                                                      std::uint64_t seed = 7) {
  std::vector<std::unique_ptr<Codec>> v;
  for (int r = 0; r < n; ++r) v.push_back(make_codec(name, options, seed));
  return v;
}
inline std::vector<Codec*> raw(const std::vector<std::unique_ptr<Codec>>& v) {
  std::vector<Codec*> p;
  for (const auto& c : v) p.push_back(c.get());
  return p;
}

// A bucket of one vector tensor (rows = count, cols = 1).
inline BucketLayout flat_bucket(std::size_t count, int id = 0) {
  BucketLayout b;
  b.id = id;
  b.count = count;
  b.tensors.push_back({0, count, 1});
  return b;
}

// Every rank holds the same bits.
inline bool all_ranks_identical(const CodecStep& s) {
  for (const auto& g : s.grads)
    if (g.size() != s.grads[0].size() ||
        (!g.empty() && std::memcmp(g.data(), s.grads[0].data(), g.size() * sizeof(float)) != 0))
      return false;
  return true;
}

}  // namespace ddplab::testing
