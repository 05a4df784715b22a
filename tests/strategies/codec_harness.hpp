// Test harness shared by the codec tests: runs one codec instance per simulated rank, each in its own
// thread, over an in-memory CollectiveFn that really sums (in the call's element type, in rank order, so
// every rank gets the same bits) or concatenates. Every call is checked against the codec's plan():
// same collective, type, count and label, in the announced order, and plans must agree across ranks.
// Each rank's input and output bytes of every call are logged for the tests to inspect.
#pragma once
#include <gtest/gtest.h>

#include <condition_variable>
#include <cstddef>
#include <cstring>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "ddplab/strategies/codec.hpp"
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

struct CallLog {
  CollectiveCall call;
  std::vector<std::byte> input;   // this rank's contribution (count elements)
  std::vector<std::byte> output;  // the whole buffer after the collective
  template <class T>
  std::vector<T> input_as() const { return as<T>(input); }
  template <class T>
  std::vector<T> output_as() const { return as<T>(output); }
  template <class T>
  static std::vector<T> as(const std::vector<std::byte>& b) {
    std::vector<T> v(b.size() / sizeof(T));
    if (!v.empty()) std::memcpy(v.data(), b.data(), v.size() * sizeof(T));
    return v;
  }
};

struct CodecStep {
  std::vector<std::vector<float>> grads;   // per rank, after run()
  std::vector<std::vector<CallLog>> calls; // per rank, in order
  std::vector<CollectiveCall> plan;        // rank 0's plan
  bool ok = true;
};

inline bool same_call(const CollectiveCall& a, const CollectiveCall& b) {
  return a.collective == b.collective && a.type == b.type && a.count == b.count && a.label == b.label &&
         a.flops_before == b.flops_before;
}

inline std::string describe(const CollectiveCall& c) {
  return c.collective + "(" + elem_name(c.type) + " x " + std::to_string(c.count) + ", \"" + c.label + "\")";
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
    CollectiveFn fn = [&](const CollectiveCall& c, void* buf) {
      if (next >= plan.size()) {
        errors[rank] = "extra call " + describe(c) + " beyond the " + std::to_string(plan.size()) + " planned";
        throw Rendezvous::Aborted{};
      }
      if (!same_call(c, plan[next])) {
        errors[rank] = "call " + std::to_string(next) + " is " + describe(c) + ", plan says " + describe(plan[next]);
        throw Rendezvous::Aborted{};
      }
      const std::size_t own = c.count * elem_bytes(c.type);
      const bool gather = c.collective == "all_gather";
      if (!gather && c.collective != "allreduce") {
        errors[rank] = "unknown collective " + c.collective;
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
      codecs[rank]->run(bucket, grads[rank].data(), world, step, fn);
      if (next != plan.size())
        errors[rank] = "issued " + std::to_string(next) + " calls, plan says " + std::to_string(plan.size());
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
    if (g.size() != s.grads[0].size() || (!g.empty() && std::memcmp(g.data(), s.grads[0].data(), g.size() * sizeof(float)) != 0))
      return false;
  return true;
}

}  // namespace ddplab::testing
