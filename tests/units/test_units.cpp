// Unit parsers and formatters: exact values for valid input, exact messages for invalid input.
#include <gtest/gtest.h>

#include <cmath>
#include <stdexcept>
#include <string>

#include "ddplab/core/error.hpp"
#include "ddplab/core/stats.hpp"
#include "ddplab/core/units.hpp"

using namespace ddplab;

namespace {

// The message thrown by `f(text)`, or "" when it did not throw ddplab::InputError.
template <typename F>
std::string error_of(F f, std::string_view text) {
  try {
    (void)f(text);
  } catch (const ddplab::InputError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

TEST(Units, ParseBytesDecimalAndBinary) {
  EXPECT_EQ(parse_bytes("25MiB"), 26214400u);
  EXPECT_EQ(parse_bytes("0"), 0u);
  EXPECT_EQ(parse_bytes("512"), 512u);
  EXPECT_EQ(parse_bytes("512B"), 512u);
  EXPECT_EQ(parse_bytes("1KB"), 1000u);
  EXPECT_EQ(parse_bytes("1kB"), 1000u);
  EXPECT_EQ(parse_bytes("4MB"), 4000000u);
  EXPECT_EQ(parse_bytes("2GB"), 2000000000u);
  EXPECT_EQ(parse_bytes("1KiB"), 1024u);
  EXPECT_EQ(parse_bytes("1GiB"), 1073741824u);
  EXPECT_EQ(parse_bytes("1TiB"), 1099511627776u);
  EXPECT_EQ(parse_bytes("1.5KiB"), 1536u);
  EXPECT_EQ(parse_bytes("1.1KB"), 1100u);
  EXPECT_EQ(parse_bytes("1e6"), 1000000u);
}

TEST(Units, ParseBytesAllowsSpaces) {
  EXPECT_EQ(parse_bytes("25 MiB"), 26214400u);
  EXPECT_EQ(parse_bytes("  25MiB  "), 26214400u);
  EXPECT_EQ(parse_bytes("25\tMiB"), 26214400u);
}

TEST(Units, ParseBytesRejects) {
  EXPECT_EQ(error_of(parse_bytes, "25Mx"), R"(expected a size such as "25MiB", got "25Mx")");
  EXPECT_EQ(error_of(parse_bytes, ""), R"(expected a size such as "25MiB", got "")");
  EXPECT_EQ(error_of(parse_bytes, "   "), R"(expected a size such as "25MiB", got "   ")");
  EXPECT_EQ(error_of(parse_bytes, "-1MiB"), R"(expected a size such as "25MiB", got "-1MiB")");
  EXPECT_EQ(error_of(parse_bytes, "+1MiB"), R"(expected a size such as "25MiB", got "+1MiB")");
  EXPECT_EQ(error_of(parse_bytes, "MiB"), R"(expected a size such as "25MiB", got "MiB")");
  EXPECT_EQ(error_of(parse_bytes, "25MiB!"), R"(expected a size such as "25MiB", got "25MiB!")");
  EXPECT_EQ(error_of(parse_bytes, "25 MiB x"), R"(expected a size such as "25MiB", got "25 MiB x")");
  EXPECT_EQ(error_of(parse_bytes, "25mib"), R"(expected a size such as "25MiB", got "25mib")");
  EXPECT_EQ(error_of(parse_bytes, "inf"), R"(expected a size such as "25MiB", got "inf")");
  EXPECT_EQ(error_of(parse_bytes, "nan"), R"(expected a size such as "25MiB", got "nan")");
  EXPECT_EQ(error_of(parse_bytes, "0x10"), R"(expected a size such as "25MiB", got "0x10")");
  EXPECT_EQ(error_of(parse_bytes, "1e30"), R"(expected a size such as "25MiB", got "1e30")");  // > 2^64
  EXPECT_EQ(error_of(parse_bytes, "10Gbit/s"), R"(expected a size such as "25MiB", got "10Gbit/s")");
}

TEST(Units, ParseBandwidth) {
  EXPECT_DOUBLE_EQ(parse_bandwidth("10Gbit/s"), 1.25e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth("10 Gbit/s"), 1.25e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth("100Mbit/s"), 12.5e6);
  EXPECT_DOUBLE_EQ(parse_bandwidth("8kbit/s"), 1000.0);
  EXPECT_DOUBLE_EQ(parse_bandwidth("8bit/s"), 1.0);
  EXPECT_DOUBLE_EQ(parse_bandwidth("25Gbps"), 3.125e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth("1B/s"), 1.0);
  EXPECT_DOUBLE_EQ(parse_bandwidth("3KB/s"), 3e3);
  EXPECT_DOUBLE_EQ(parse_bandwidth("3MB/s"), 3e6);
  EXPECT_DOUBLE_EQ(parse_bandwidth("12.5GB/s"), 12.5e9);
  EXPECT_DOUBLE_EQ(parse_bandwidth("1KiB/s"), 1024.0);
  EXPECT_DOUBLE_EQ(parse_bandwidth("1MiB/s"), 1048576.0);
  EXPECT_DOUBLE_EQ(parse_bandwidth("1GiB/s"), 1073741824.0);
  EXPECT_DOUBLE_EQ(parse_bandwidth("1250000000"), 1.25e9);  // bare number = bytes/s
  EXPECT_DOUBLE_EQ(parse_bandwidth("0Gbit/s"), 0.0);        // range is the caller's business
}

TEST(Units, ParseBandwidthRejects) {
  const std::string prefix = R"(expected a bandwidth such as "10Gbit/s", got )";
  EXPECT_EQ(error_of(parse_bandwidth, "10Gb"), prefix + R"("10Gb")");
  EXPECT_EQ(error_of(parse_bandwidth, "10Gbit"), prefix + R"("10Gbit")");
  EXPECT_EQ(error_of(parse_bandwidth, "10GB"), prefix + R"("10GB")");
  EXPECT_EQ(error_of(parse_bandwidth, "-10Gbit/s"), prefix + R"("-10Gbit/s")");
  EXPECT_EQ(error_of(parse_bandwidth, ""), prefix + R"("")");
  EXPECT_EQ(error_of(parse_bandwidth, "fast"), prefix + R"("fast")");
  EXPECT_EQ(error_of(parse_bandwidth, "10Gbit/s/s"), prefix + R"("10Gbit/s/s")");
}

TEST(Units, ParseDuration) {
  EXPECT_DOUBLE_EQ(parse_duration("2us"), 2e-6);
  EXPECT_EQ(parse_duration("13ms"), 0.013);  // exact: divides rather than multiplies by 1e-3
  EXPECT_EQ(parse_duration("500ns"), 500e-9);
  EXPECT_DOUBLE_EQ(parse_duration("2\xC2\xB5s"), 2e-6);  // "2µs"
  EXPECT_EQ(parse_duration("1.5s"), 1.5);
  EXPECT_EQ(parse_duration("2min"), 120.0);
  EXPECT_EQ(parse_duration("1h"), 3600.0);
  EXPECT_EQ(parse_duration("0.25"), 0.25);  // bare number = seconds
  EXPECT_EQ(parse_duration("3 ms"), 0.003);
  EXPECT_EQ(parse_duration("0"), 0.0);
}

TEST(Units, ParseDurationRejects) {
  const std::string prefix = R"(expected a duration such as "2us", got )";
  EXPECT_EQ(error_of(parse_duration, "2x"), prefix + R"("2x")");
  EXPECT_EQ(error_of(parse_duration, "2 sec"), prefix + R"("2 sec")");
  EXPECT_EQ(error_of(parse_duration, "-2us"), prefix + R"("-2us")");
  EXPECT_EQ(error_of(parse_duration, ""), prefix + R"("")");
  EXPECT_EQ(error_of(parse_duration, "us"), prefix + R"("us")");
  EXPECT_EQ(error_of(parse_duration, "2us3"), prefix + R"("2us3")");
  EXPECT_EQ(error_of(parse_duration, "2MS"), prefix + R"("2MS")");
}

TEST(Units, FormatBytes) {
  EXPECT_EQ(format_bytes(0), "0 B");
  EXPECT_EQ(format_bytes(512), "512 B");
  EXPECT_EQ(format_bytes(1023), "1023 B");
  EXPECT_EQ(format_bytes(1024), "1.0 KiB");
  EXPECT_EQ(format_bytes(1536), "1.5 KiB");
  EXPECT_EQ(format_bytes(26214400), "25.0 MiB");
  EXPECT_EQ(format_bytes(1073741824.0), "1.0 GiB");
  EXPECT_EQ(format_bytes(1048575), "1.0 MiB");  // would print as "1024.0 KiB"
  EXPECT_EQ(format_bytes(11677736), "11.1 MiB");
  EXPECT_EQ(format_bytes(-2048), "-2.0 KiB");
}

TEST(Units, FormatDuration) {
  EXPECT_EQ(format_duration(2e-6), "2.00 us");
  EXPECT_EQ(format_duration(0.0134), "13.4 ms");
  EXPECT_EQ(format_duration(0.123), "123 ms");
  EXPECT_EQ(format_duration(5e-9), "5.00 ns");
  EXPECT_EQ(format_duration(1.5), "1.50 s");
  EXPECT_EQ(format_duration(42.0), "42.0 s");
  EXPECT_EQ(format_duration(90.0), "1.50 min");
  EXPECT_EQ(format_duration(7200.0), "2.00 h");
  EXPECT_EQ(format_duration(0.0), "0 s");
  EXPECT_EQ(format_duration(0.9999), "1.00 s");  // would print as "1000 ms"
  EXPECT_EQ(format_duration(-0.0134), "-13.4 ms");
}

TEST(Units, RoundTripThroughFormat) {
  EXPECT_EQ(parse_bytes("25.0 MiB"), 26214400u);
  EXPECT_DOUBLE_EQ(parse_duration("2.00 us"), 2e-6);
}

TEST(Units, WorldLists) {
  EXPECT_EQ(parse_world_list("8"), (std::vector<int>{8}));
  EXPECT_EQ(parse_world_list("8,64,512"), (std::vector<int>{8, 64, 512}));
  EXPECT_EQ(parse_world_list("2,4,...,64"), (std::vector<int>{2, 4, 8, 16, 32, 64}));        // doubles
  EXPECT_EQ(parse_world_list("8,16,...,64"), (std::vector<int>{8, 16, 32, 64}));             // 16 = 2 x 8: doubles
  EXPECT_EQ(parse_world_list("8,16,24,...,48"), (std::vector<int>{8, 16, 24, 32, 40, 48}));  // 24 = 16 + 8: adds 8
  EXPECT_EQ(parse_world_list("2,4,8,...,32"), (std::vector<int>{2, 4, 8, 16, 32}));
  EXPECT_EQ(parse_world_list("3,9,...,81,100"), (std::vector<int>{3, 9, 27, 81, 100}));
  EXPECT_EQ(parse_world_list("4,6,...,10"), (std::vector<int>{4, 6, 8, 10}));  // 6 % 4 != 0: adds 2
  EXPECT_EQ(parse_world_list("2,4,...,8"), (std::vector<int>{2, 4, 8}));
  auto error_of = [](const char* text) {
    try {
      parse_world_list(text);
    } catch (const ddplab::InputError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  // A mistyped end is refused, never read as another progression (2,4,6,...,1000 would be 500 simulations).
  EXPECT_NE(error_of("2,4,...,1000").find("1000 is not in the progression 2,4,8,... (times 2)"), std::string::npos)
      << error_of("2,4,...,1000");
  EXPECT_NE(error_of("4,6,...,11").find("11 is not in the progression 4,6,8,... (plus 2)"), std::string::npos);
  EXPECT_NE(error_of("...,8").find("needs two sizes before it"), std::string::npos);
  EXPECT_NE(error_of("2,4,...").find("needs two sizes before it and one after it"), std::string::npos);
  EXPECT_NE(error_of("8,4,...,1").find("does not grow"), std::string::npos);
  EXPECT_NE(error_of("2,4,...,4").find("must be larger than 4, got 4"), std::string::npos);
  EXPECT_NE(error_of("8,x").find("\"x\" is not a whole number"), std::string::npos);
  EXPECT_NE(error_of("8,").find("\"\" is not a whole number"), std::string::npos);
  EXPECT_NE(error_of("").find("is not a whole number"), std::string::npos);
  EXPECT_NE(error_of("0").find("world sizes must be 1 to"), std::string::npos);
  EXPECT_NE(error_of("2.5").find("\"2.5\" is not a whole number"), std::string::npos);
}

TEST(Stats, KendallTauAgainstHandCountedPairs) {
  EXPECT_DOUBLE_EQ(kendall_tau({1, 2, 3, 4}, {10, 20, 30, 40}), 1.0);
  EXPECT_DOUBLE_EQ(kendall_tau({1, 2, 3, 4}, {4, 3, 2, 1}), -1.0);
  // 6 pairs, one swapped: (5 - 1) / 6.
  EXPECT_DOUBLE_EQ(kendall_tau({1, 2, 3, 4}, {1, 3, 2, 4}), 4.0 / 6.0);
  // A tie in b: pair (0,1) tied there; tau-b = (5 - 0) / sqrt(6 * 5).
  EXPECT_NEAR(kendall_tau({1, 2, 3, 4}, {1, 1, 2, 3}), 5.0 / std::sqrt(30.0), 1e-12);
  EXPECT_TRUE(std::isnan(kendall_tau({1}, {1})));
  EXPECT_TRUE(std::isnan(kendall_tau({1, 1}, {2, 2})));
}
