// A straggler's slowdown: a factor below 1 refused, work stretched to at least factor x its time, the
// slowed codec compute giving the host's results bit for bit, and buffers it allocated outliving it.
#include <gtest/gtest.h>

#include <chrono>
#include <cstring>
#include <vector>

#include "ddplab/core/error.hpp"
#include "ddplab/runtime/slowdown.hpp"

namespace ddplab {
namespace {

using Clock = std::chrono::steady_clock;

void busy_for(std::chrono::milliseconds d) {
  const auto end = Clock::now() + d;
  while (Clock::now() < end) {
  }
}

TEST(Slowdown, RefusesAFactorBelowOne) {
  EXPECT_THROW(Slowdown(0.5), ddplab::InputError);
  EXPECT_THROW(Slowdown(-1), ddplab::InputError);
  EXPECT_FALSE(Slowdown(1).active());
  EXPECT_TRUE(Slowdown(1.5).active());
}

TEST(Slowdown, StretchesWorkToAtLeastFactorTimesItsTime) {
  const Slowdown s(3.0);
  const auto start = Clock::now();
  s.run([] { busy_for(std::chrono::milliseconds(20)); });
  // A sleep never ends early: 20 ms of work then at least 40 ms asleep.
  EXPECT_GE(Clock::now() - start, std::chrono::milliseconds(60));
}

TEST(SlowedCodecCompute, SameResultsAsTheHostAndItsBuffersOutliveIt) {
  CodecCompute& host = host_codec_compute();
  const Slowdown s(1.01);
  std::vector<float> a(1000), b(1000);
  for (std::size_t i = 0; i < a.size(); ++i)
    a[i] = static_cast<float>(i % 37) - 18.5f, b[i] = 0.25f * static_cast<float>(i % 11);
  std::vector<float> x = a, y = a;
  std::vector<IndexValue> px(10), py(10);
  CodecBuffer kept;
  {
    auto slowed = slowed_codec_compute(host, s);
    EXPECT_EQ(&slowed->owner(), &host.owner());
    slowed->add(x.data(), b.data(), x.size());
    host.add(y.data(), b.data(), y.size());
    slowed->topk(x.data(), x.size(), px.size(), px.data());
    host.topk(y.data(), y.size(), py.size(), py.data());
    kept = CodecBuffer(*slowed, 4096);
    EXPECT_EQ(kept.compute(), &host) << "freed by the host compute, which outlives the slowed one";
  }
  EXPECT_EQ(std::memcmp(x.data(), y.data(), x.size() * sizeof(float)), 0);
  EXPECT_EQ(std::memcmp(px.data(), py.data(), px.size() * sizeof(IndexValue)), 0);
  kept.reset();  // would touch the slowed compute, gone by now, if it owned the buffer
}

}  // namespace
}  // namespace ddplab
