// The codec registry: every codec listed, built by name, and options validated with messages that name the
// codec, the option and the bad text.
#include <gtest/gtest.h>

#include <set>
#include <stdexcept>

#include "ddplab/core/error.hpp"
#include "ddplab/strategies/codec.hpp"

namespace ddplab {
namespace {

std::string error_of(const std::string& name, const CodecOptions& options) {
  try {
    make_codec(name, options, 0);
  } catch (const ddplab::InputError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(CodecRegistry, ListsEveryCodecAndBuildsItByName) {
  std::set<std::string> names;
  for (const auto& info : codecs()) {
    names.insert(info.name);
    EXPECT_FALSE(info.summary.empty()) << info.name;
    EXPECT_EQ(make_codec(info.name, {}, 1)->name(), info.name);
  }
  EXPECT_EQ(names, (std::set<std::string>{"none", "fp16", "bf16", "topk", "powersgd"}));
  EXPECT_EQ(error_of("zip", {}), "unknown codec \"zip\" (known: none, fp16, bf16, topk, powersgd)");
}

TEST(CodecRegistry, RejectsUnknownOptions) {
  EXPECT_EQ(error_of("powersgd", {{"rnak", "2"}}),
            "codec powersgd: unknown option \"rnak\" (known: rank, start_iter, min_compression_rate, warm_start, "
            "error_feedback, orthogonalization_epsilon)");
  EXPECT_EQ(error_of("topk", {{"k", "5"}}), "codec topk: unknown option \"k\" (known: ratio, error_feedback)");
  EXPECT_EQ(error_of("fp16", {{"scale", "2"}}), "codec fp16: unknown option \"scale\" (it takes no options)");
}

TEST(CodecRegistry, RejectsBadValues) {
  EXPECT_EQ(error_of("topk", {{"ratio", "2"}}), "codec topk: ratio must be in (0, 1], got \"2\"");
  EXPECT_EQ(error_of("topk", {{"ratio", "0"}}), "codec topk: ratio must be in (0, 1], got \"0\"");
  EXPECT_EQ(error_of("topk", {{"ratio", "abc"}}), "codec topk: ratio must be in (0, 1], got \"abc\"");
  EXPECT_EQ(error_of("topk", {{"ratio", "0.1x"}}), "codec topk: ratio must be in (0, 1], got \"0.1x\"");
  EXPECT_EQ(error_of("topk", {{"error_feedback", "yes"}}),
            "codec topk: error_feedback must be true or false, got \"yes\"");
  EXPECT_EQ(error_of("powersgd", {{"rank", "0"}}), "codec powersgd: rank must be an integer >= 1, got \"0\"");
  EXPECT_EQ(error_of("powersgd", {{"rank", "1.5"}}), "codec powersgd: rank must be an integer >= 1, got \"1.5\"");
  EXPECT_EQ(error_of("powersgd", {{"start_iter", "-1"}}),
            "codec powersgd: start_iter must be an integer >= 0, got \"-1\"");
  EXPECT_EQ(error_of("powersgd", {{"min_compression_rate", "-2"}}),
            "codec powersgd: min_compression_rate must be a number >= 0, got \"-2\"");
  EXPECT_EQ(error_of("powersgd", {{"orthogonalization_epsilon", "nan"}}),
            "codec powersgd: orthogonalization_epsilon must be a number >= 0, got \"nan\"");
  EXPECT_EQ(error_of("powersgd", {{"warm_start", "maybe"}}),
            "codec powersgd: warm_start must be true or false, got \"maybe\"");
}

TEST(CodecRegistry, AcceptsGoodValues) {
  EXPECT_NO_THROW(make_codec("topk", {{"ratio", "1"}, {"error_feedback", "false"}}, 0));
  EXPECT_NO_THROW(make_codec("topk", {{"ratio", "1e-3"}}, 0));
  EXPECT_NO_THROW(make_codec("powersgd",
                             {{"rank", "4"},
                              {"start_iter", "0"},
                              {"min_compression_rate", "1.5"},
                              {"warm_start", "false"},
                              {"error_feedback", "true"},
                              {"orthogonalization_epsilon", "1e-8"}},
                             0));
}

}  // namespace
}  // namespace ddplab
