#include "ddplab/core/nccl_tests.hpp"

#include <charconv>
#include <cmath>
#include <map>
#include <sstream>

#include <fmt/format.h>

namespace ddplab {
namespace {

std::vector<std::string> words(const std::string& line) {
  std::istringstream in(line);
  std::vector<std::string> out;
  for (std::string w; in >> w;) out.push_back(w);
  return out;
}

}  // namespace

NcclTestsLog parse_nccl_tests(const std::string& text, const std::string& path) {
  NcclTestsLog log;
  std::vector<std::string> columns;  // the column header, without its leading '#'
  std::string first_host;
  std::istringstream in(text);
  int no = 0;
  auto fail = [&](int line, const std::string& what) -> NcclTestsError {
    return NcclTestsError(fmt::format("{}:{}: {}", path, line, what));
  };
  for (std::string line; std::getline(in, line);) {
    ++no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    const std::vector<std::string> w = words(line);
    if (w.empty()) continue;
    if (w[0] == "#") {
      // "#  Rank  0 Group  0 Pid 123 on host device  0 [0x07] NVIDIA H100 80GB HBM3"
      if (w.size() >= 3 && w[1] == "Rank") {
        ++log.ranks;
        std::string host, device;
        for (std::size_t i = 2; i + 1 < w.size(); ++i)
          if (w[i] == "on") host = w[i + 1];
        for (std::size_t i = 2; i < w.size(); ++i)
          if (w[i].size() > 1 && w[i].front() == '[') {
            for (std::size_t j = i + 1; j < w.size(); ++j) device += (device.empty() ? "" : " ") + w[j];
            break;
          }
        log.devices.push_back(device);
        if (log.ranks == 1) first_host = host;
        if (host == first_host) ++log.ranks_per_node;
        continue;
      }
      // "# nThread 1 nGpus 1 ... warmup iters: 5 iters: 20 ..."
      for (std::size_t i = 1; i + 1 < w.size(); ++i) {
        if (w[i] == "iters:" && w[i - 1] == "warmup")
          log.warmup = std::atoi(w[i + 1].c_str());
        else if (w[i] == "iters:" && w[i - 1] != "agg" && w[i - 1] != "warmup")
          log.iters = std::atoi(w[i + 1].c_str());
      }
      if (w.size() >= 3 && w[1] == "size" && w[2] == "count") columns.assign(w.begin() + 1, w.end());
      if (line.find("Avg bus bandwidth") != std::string::npos) {
        const auto colon = line.find(':');
        if (colon != std::string::npos) log.avg_busbw_gbs = std::atof(line.c_str() + colon + 1);
      }
      continue;
    }
    if (columns.empty())
      throw fail(no,
                 "a row before the column header (\"#  size  count  type ...\"): is this all_reduce_perf's output?");
    if (w.size() != columns.size())
      throw fail(no, fmt::format("{} fields where the column header has {} ({})", w.size(), columns.size(), line));
    NcclTestsRow row;
    row.line = no;
    int timing = 0;  // 0: out-of-place, 1: in-place
    auto number = [&](const std::string& field, const std::string& column) {
      double v = 0;
      const auto [p, ec] = std::from_chars(field.data(), field.data() + field.size(), v);
      if (ec != std::errc() || p != field.data() + field.size() || !std::isfinite(v))
        throw fail(no, fmt::format("column {}: \"{}\" is not a number", column, field));
      return v;
    };
    // Sizes, counts and #wrong are printed as integers; a fraction or a value past int64 is refused.
    auto integer = [&](const std::string& field, const std::string& column) {
      std::int64_t v = 0;
      const auto [p, ec] = std::from_chars(field.data(), field.data() + field.size(), v);
      if (ec != std::errc() || p != field.data() + field.size())
        throw fail(no, fmt::format("column {}: \"{}\" is not an integer", column, field));
      return v;
    };
    for (std::size_t i = 0; i < columns.size(); ++i) {
      const std::string& c = columns[i];
      const std::string& f = w[i];
      NcclTestsTiming& t = timing == 0 ? row.out_of_place : row.in_place;
      if (c == "size")
        row.bytes = integer(f, c);
      else if (c == "count")
        row.count = integer(f, c);
      else if (c == "type")
        row.type = f;
      else if (c == "redop")
        row.redop = f;
      else if (c == "time")
        t.time_us = number(f, c);
      else if (c == "algbw")
        t.algbw_gbs = number(f, c);
      else if (c == "busbw")
        t.busbw_gbs = number(f, c);
      else if (c == "#wrong" || c == "error") {
        if (c == "#wrong" && f != "N/A") t.wrong = integer(f, c);
        if (c == "error" && f != "N/A") number(f, c);  // a float difference: checked, not kept
        ++timing;                                      // the in-place columns follow
      }
    }
    if (row.redop == "none")
      throw fail(no, "redop none: not an allreduce (all_gather_perf or similar); import all_reduce_perf's output");
    if (row.bytes <= 0 || row.out_of_place.time_us <= 0)
      throw fail(no, fmt::format("size {} B and time {} us must be positive", row.bytes, row.out_of_place.time_us));
    log.rows.push_back(row);
  }
  if (log.rows.empty())
    throw NcclTestsError(fmt::format("{}:{}: no result rows (an all_reduce_perf run prints one per size)", path, no));
  // busbw / algbw = 2(n-1)/n for an allreduce: n = 2 / (2 - f). Check it against the Rank lines, or take it.
  const NcclTestsRow* big = &log.rows.front();
  for (const auto& r : log.rows)
    if (r.out_of_place.algbw_gbs > big->out_of_place.algbw_gbs) big = &r;
  if (big->out_of_place.algbw_gbs > 0) {
    const double f = big->out_of_place.busbw_gbs / big->out_of_place.algbw_gbs;
    const int n = f < 2 ? static_cast<int>(std::lround(2 / (2 - f))) : 0;
    if (log.ranks == 0) {
      if (n < 1) throw fail(big->line, "no Rank lines, and busbw / algbw does not give the world size");
      log.ranks = n;
    } else if (n >= 1 && std::abs(f - 2.0 * (log.ranks - 1) / log.ranks) > 0.02 * f + 0.01) {
      throw fail(big->line,
                 fmt::format("busbw / algbw = {:.3f} is not an allreduce's 2(n-1)/n for the {} ranks of the Rank "
                             "lines ({:.3f})",
                             f, log.ranks, 2.0 * (log.ranks - 1) / log.ranks));
    }
  } else if (log.ranks == 0) {
    throw fail(big->line, "no Rank lines and no bandwidths: the world size is unknown");
  }
  if (log.ranks_per_node == 0) log.ranks_per_node = 1;
  return log;
}

}  // namespace ddplab
