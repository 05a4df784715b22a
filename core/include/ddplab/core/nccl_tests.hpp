// Reads the output of nccl-tests' all_reduce_perf (NVIDIA/nccl-tests), so that users with real clusters can
// compare ddplab's predictions with their own measurements: the header's iterations, the "#  Rank  r ...
// on HOST device d" lines (world size and ranks per node), the column header (which names the columns:
// current versions print size count type redop root time algbw busbw #wrong twice, out-of-place then
// in-place; older ones lack root and print a float "error" instead of #wrong), and one row per size.
#pragma once
#include <cstdint>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>
#include "ddplab/core/error.hpp"

namespace ddplab {

// A malformed log: the message starts with "FILE:LINE: ".
struct NcclTestsError : InputError {
  using InputError::InputError;
};

struct NcclTestsTiming {
  double time_us = 0, algbw_gbs = 0, busbw_gbs = 0;
  std::optional<std::int64_t> wrong;  // #wrong; none when printed N/A, or in versions with a float "error"
};

struct NcclTestsRow {
  int line = 0;  // in the file, 1-based
  std::int64_t bytes = 0, count = 0;
  std::string type, redop;
  NcclTestsTiming out_of_place, in_place;
};

struct NcclTestsLog {
  int ranks = 0;                     // "Rank" lines, else derived from busbw / algbw = 2(n-1)/n
  int ranks_per_node = 0;            // ranks on the first rank's host (0 when no Rank lines)
  int iters = 0, warmup = 0;         // from the header line, 0 when absent
  std::vector<std::string> devices;  // the Rank lines' device names, in rank order
  std::vector<NcclTestsRow> rows;
  std::optional<double> avg_busbw_gbs;  // "# Avg bus bandwidth"
};

// Throws NcclTestsError naming path:line: no column header, a row whose fields do not match it, a number
// that does not parse, rows of another collective than an allreduce (redop none), no rows, a world size
// that neither Rank lines nor busbw/algbw give, or busbw/algbw that contradicts the Rank lines.
NcclTestsLog parse_nccl_tests(const std::string& text, const std::string& path);

}  // namespace ddplab
