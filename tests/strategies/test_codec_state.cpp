// Every codec of the registry, checkpointed mid-run: a fresh codec restored from state() continues bit for
// bit as the original does. A codec that reports no state must not need any: a fresh one, not restored,
// continues bit for bit too; one that reports state must need it (a fresh codec without it parts).
#include <gtest/gtest.h>

#include <cstring>
#include <random>

#include "codec_harness.hpp"
#include "ddplab/core/error.hpp"

namespace ddplab {
namespace {

constexpr int kWorld = 3, kBefore = 4, kAfter = 3;

// A bucket with a matrix PowerSGD compresses and a vector it sends plainly.
BucketLayout state_bucket() {
  BucketLayout b;
  b.id = 2;
  b.tensors = {{0, 12, 10}, {120, 12, 1}};
  b.count = 132;
  return b;
}

std::vector<std::vector<float>> step_grads(std::int64_t step) {
  std::mt19937 rng(static_cast<unsigned>(1000 + step));
  std::normal_distribution<float> d;
  std::vector<std::vector<float>> g(kWorld, std::vector<float>(state_bucket().count));
  for (auto& r : g)
    for (float& v : r) v = d(rng);
  return g;
}

// The option sets tried for a codec: every option at its fallback, every one at its example, and each one
// alone at its example (PowerSGD compressing from step 3 with its warm start and error feedback on).
std::vector<CodecOptions> option_sets(const CodecInfo& info) {
  CodecOptions fallback, example;
  for (const OptionSpec& s : info.options) fallback[s.name] = s.fallback, example[s.name] = s.example;
  std::vector<CodecOptions> sets = {fallback, example};
  for (const OptionSpec& s : info.options) {
    CodecOptions one = fallback;
    one[s.name] = s.example;
    sets.push_back(one);
  }
  return sets;
}

std::string describe(const CodecOptions& o) {
  std::string s;
  for (const auto& [k, v] : o) s += (s.empty() ? "" : ", ") + k + " = " + v;
  return "{" + s + "}";
}

std::vector<std::unique_ptr<Codec>> make(const CodecInfo& info, const CodecOptions& options) {
  std::vector<std::unique_ptr<Codec>> v;
  for (int r = 0; r < kWorld; ++r) v.push_back(make_codec(info.name, options, 42));
  return v;
}

// The ranks' outputs of steps [first, last).
std::vector<std::vector<std::vector<float>>> run(std::vector<std::unique_ptr<Codec>>& codecs, std::int64_t first,
                                                 std::int64_t last) {
  std::vector<std::vector<std::vector<float>>> out;
  for (std::int64_t s = first; s < last; ++s) {
    const auto step = testing::run_codec_step(testing::raw(codecs), state_bucket(), step_grads(s), s);
    EXPECT_TRUE(step.ok) << "step " << s;
    out.push_back(step.grads);
  }
  return out;
}

bool bitwise_equal(const std::vector<std::vector<std::vector<float>>>& a,
                   const std::vector<std::vector<std::vector<float>>>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t s = 0; s < a.size(); ++s)
    for (int r = 0; r < kWorld; ++r)
      if (a[s][r].size() != b[s][r].size() ||
          std::memcmp(a[s][r].data(), b[s][r].data(), a[s][r].size() * sizeof(float)) != 0)
        return false;
  return true;
}

TEST(CodecState, EveryCodecContinuesBitForBitFromItsState) {
  int stateful = 0;
  for (const CodecInfo& info : codecs())
    for (const CodecOptions& options : option_sets(info)) {
      SCOPED_TRACE(info.name + " " + describe(options));
      auto straight = make(info, options);
      run(straight, 0, kBefore);
      std::vector<Codec::State> saved;
      for (const auto& c : straight) saved.push_back(c->state());
      const auto expected = run(straight, kBefore, kBefore + kAfter);

      auto restored = make(info, options);
      for (int r = 0; r < kWorld; ++r)
        restored[static_cast<std::size_t>(r)]->restore(saved[static_cast<std::size_t>(r)]);
      EXPECT_TRUE(bitwise_equal(run(restored, kBefore, kBefore + kAfter), expected)) << "the restored codec parted";

      auto fresh = make(info, options);
      const bool needs_state = !bitwise_equal(run(fresh, kBefore, kBefore + kAfter), expected);
      EXPECT_EQ(needs_state, !saved[0].empty()) << (needs_state ? "its outputs depend on state that state() leaves out"
                                                                : "it reports state that its outputs do not depend on");
      stateful += !saved[0].empty();
    }
  EXPECT_GE(stateful, 2) << "fewer than two option sets kept state: the restore above proved little";
}

TEST(CodecState, RestoreRefusesStateOfAnotherCodec) {
  for (const CodecInfo& info : codecs()) {
    SCOPED_TRACE(info.name);
    auto c = make_codec(info.name, option_sets(info).front(), 42);
    EXPECT_THROW(c->restore({{"0/no_such_state", {1.0f}}}), ddplab::InputError);
    EXPECT_THROW(c->restore({{"not a key", {1.0f}}}), ddplab::InputError);
  }
}

}  // namespace
}  // namespace ddplab
