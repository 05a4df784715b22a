// Reading all_reduce_perf output (nccl-tests): both column layouts, the world size from the Rank lines or
// from busbw / algbw, and every malformed input refused with file:line.
#include <gtest/gtest.h>

#include "ddplab/core/nccl_tests.hpp"

namespace ddplab {
namespace {

// The current layout (redop, root, #wrong), two nodes of 2 ranks; the numbers are made up but consistent:
// busbw = algbw x 2(4-1)/4 = 1.5 algbw.
const char* kCurrent =
    R"(# nThread 1 nGpus 1 minBytes 1024 maxBytes 4194304 step: 4(factor) warmup iters: 5 iters: 20 agg iters: 1 validation: 1 graph: 0
#
# Using devices
#  Rank  0 Group  0 Pid   1001 on     node-a device  0 [0000:04:00] NVIDIA H100 80GB HBM3
#  Rank  1 Group  0 Pid   1002 on     node-a device  1 [0000:05:00] NVIDIA H100 80GB HBM3
#  Rank  2 Group  0 Pid   2001 on     node-b device  0 [0000:04:00] NVIDIA H100 80GB HBM3
#  Rank  3 Group  0 Pid   2002 on     node-b device  1 [0000:05:00] NVIDIA H100 80GB HBM3
#
#                                                              out-of-place                       in-place
#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw #wrong
#        (B)    (elements)                               (us)  (GB/s)  (GB/s)            (us)  (GB/s)  (GB/s)
        1024           256     float     sum      -1    20.00    0.05    0.08      0    19.50    0.05    0.08      0
       16384          4096     float     sum      -1    25.00    0.66    0.98      0    24.00    0.68    1.02      0
      262144         65536     float     sum      -1    40.00    6.55    9.83      0    41.00    6.39    9.59      0
     4194304       1048576     float     sum      -1   200.00   20.97   31.46      0   198.00   21.18   31.78    N/A
# Out of bounds values : 0 OK
# Avg bus bandwidth    : 10.5958
#
)";

TEST(NcclTests, ReadsTheCurrentLayout) {
  const NcclTestsLog log = parse_nccl_tests(kCurrent, "h100.log");
  EXPECT_EQ(log.ranks, 4);
  EXPECT_EQ(log.ranks_per_node, 2);
  EXPECT_EQ(log.iters, 20);
  EXPECT_EQ(log.warmup, 5);
  ASSERT_EQ(log.devices.size(), 4u);
  EXPECT_EQ(log.devices[0], "NVIDIA H100 80GB HBM3");
  ASSERT_EQ(log.rows.size(), 4u);
  const NcclTestsRow& r = log.rows.back();
  EXPECT_EQ(r.line, 15);
  EXPECT_EQ(r.bytes, 4194304);
  EXPECT_EQ(r.count, 1048576);
  EXPECT_EQ(r.type, "float");
  EXPECT_DOUBLE_EQ(r.out_of_place.time_us, 200.0);
  EXPECT_DOUBLE_EQ(r.out_of_place.busbw_gbs, 31.46);
  EXPECT_EQ(r.out_of_place.wrong, 0);
  EXPECT_DOUBLE_EQ(r.in_place.time_us, 198.0);
  EXPECT_FALSE(r.in_place.wrong.has_value());  // N/A
  ASSERT_TRUE(log.avg_busbw_gbs);
  EXPECT_DOUBLE_EQ(*log.avg_busbw_gbs, 10.5958);
}

TEST(NcclTests, ReadsTheOlderLayoutAndDerivesTheWorldFromBusbw) {
  // No redop/root columns, a float "error", no Rank lines: 8 ranks from busbw / algbw = 1.75.
  const std::string old =
      "#       size         count    type     time   algbw   busbw  error     time   algbw   busbw  error\n"
      "     1048576        262144   float   100.00   10.49   18.35  0e+00    99.00   10.59   18.53  0e+00\n"
      "\n"
      "     8388608       2097152   float   400.00   20.97   36.70  0e+00   401.00   20.92   36.61  0e+00\n";
  const NcclTestsLog log = parse_nccl_tests(old, "old.log");
  EXPECT_EQ(log.ranks, 8);
  EXPECT_EQ(log.ranks_per_node, 1);
  ASSERT_EQ(log.rows.size(), 2u);
  EXPECT_EQ(log.rows[1].line, 4);
  EXPECT_FALSE(log.rows[1].out_of_place.wrong.has_value());
  EXPECT_DOUBLE_EQ(log.rows[1].in_place.time_us, 401.0);
}

TEST(NcclTests, MalformedInputNamesFileAndLine) {
  auto error = [](const std::string& text) {
    try {
      parse_nccl_tests(text, "bad.log");
    } catch (const NcclTestsError& e) {
      return std::string(e.what());
    }
    return std::string("no error");
  };
  const std::string header =
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw "
      "#wrong\n";
  EXPECT_EQ(
      error("     1024   256   float   sum   -1   20.0   0.05   0.08   0   19.5   0.05   0.08   0\n"),
      "bad.log:1: a row before the column header (\"#  size  count  type ...\"): is this all_reduce_perf's output?");
  EXPECT_EQ(error(header + "     1024   256   float   sum   -1   20.0   0.05\n"),
            "bad.log:2: 7 fields where the column header has 13 (     1024   256   float   sum   -1   20.0   0.05)");
  EXPECT_EQ(error(header + "     1024   256   float   sum   -1   fast   0.05   0.08   0   19.5   0.05   0.08   0\n"),
            "bad.log:2: column time: \"fast\" is not a number");
  EXPECT_EQ(error(header + "     1024   256   float   none   -1   20.0   0.05   0.05   0   19.5   0.05   0.05   0\n"),
            "bad.log:2: redop none: not an allreduce (all_gather_perf or similar); import all_reduce_perf's output");
  EXPECT_EQ(error(header), "bad.log:1: no result rows (an all_reduce_perf run prints one per size)");
  // Two Rank lines, but busbw / algbw = 1.5 says 4 ranks.
  EXPECT_NE(error("#  Rank  0 Group 0 Pid 1 on a device 0 [0] GPU\n#  Rank  1 Group 0 Pid 2 on a device 1 [1] GPU\n" +
                  header +
                  "     1048576   262144   float   sum   -1   100.0   10.49   15.73   0   100.0   10.49   15.73   0\n")
                .find("bad.log:4: busbw / algbw = 1.500 is not an allreduce's 2(n-1)/n for the 2 ranks"),
            std::string::npos);
}

}  // namespace
}  // namespace ddplab

namespace ddplab {
namespace {

// Found by fuzzing (tests/fuzz/regressions/nccl_tests): a size past int64 was converted from a double,
// undefined behaviour. Sizes, counts and #wrong are integers, and anything else is refused with file:line.
TEST(NcclTests, SizesCountsAndWrongMustBeIntegers) {
  const std::string header =
      "#       size         count      type   redop    root     time   algbw   busbw #wrong     time   algbw   busbw "
      "#wrong\n";
  const std::string good = "1024 256 float sum -1 20.00 0.05 0.08 0 19.50 0.05 0.08 0\n";
  EXPECT_NO_THROW(parse_nccl_tests(header + good, "ok.log"));
  const std::vector<std::pair<std::string, std::string>> bad = {
      {"104857888888888888888888888888888 256 float sum -1 20.00 0.05 0.08 0 19.50 0.05 0.08 0\n",
       "big.log:2: column size: \"104857888888888888888888888888888\" is not an integer"},
      {"1024 25.6 float sum -1 20.00 0.05 0.08 0 19.50 0.05 0.08 0\n",
       "frac.log:2: column count: \"25.6\" is not an integer"},
      {"1024 256 float sum -1 20.00 0.05 0.08 1e30 19.50 0.05 0.08 0\n",
       "wrong.log:2: column #wrong: \"1e30\" is not an integer"},
  };
  for (const auto& [row, want] : bad) {
    const std::string path = want.substr(0, want.find(':'));
    try {
      parse_nccl_tests(header + row, path);
      ADD_FAILURE() << "accepted " << row;
    } catch (const NcclTestsError& e) {
      EXPECT_EQ(std::string(e.what()).rfind(want, 0), 0u) << e.what();
    }
  }
}

}  // namespace
}  // namespace ddplab
