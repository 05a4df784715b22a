// Parsing and formatting of unit-bearing values: sizes, bandwidths and durations.
#include "ddplab/core/units.hpp"

#include <charconv>
#include <cmath>
#include <limits>
#include <sstream>
#include <stdexcept>

#include <fmt/format.h>

namespace ddplab {
namespace {

struct Unit {
  std::string_view name;
  double factor;   // multiply the number by this ...
  double divisor;  // ... then divide by this (keeps "13ms" == 0.013 exactly)
};

// Splits "<number><spaces><unit>" (surrounding spaces allowed) and converts with the unit table.
// Returns NaN on any malformation; callers turn that into their own message.
double parse_with_units(std::string_view text, std::initializer_list<Unit> units) {
  constexpr double bad = std::numeric_limits<double>::quiet_NaN();
  auto is_space = [](char c) { return c == ' ' || c == '\t'; };
  while (!text.empty() && is_space(text.front())) text.remove_prefix(1);
  while (!text.empty() && is_space(text.back())) text.remove_suffix(1);
  if (text.empty()) return bad;
  // The number must start with a digit (or ".5"): rejects signs, "inf", "nan" and hex.
  const char c0 = text.front();
  const bool digit_start =
      (c0 >= '0' && c0 <= '9') || (c0 == '.' && text.size() > 1 && text[1] >= '0' && text[1] <= '9');
  if (!digit_start) return bad;
  double value = 0;
  auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (ec != std::errc{} || !std::isfinite(value)) return bad;
  std::string_view unit(end, static_cast<std::size_t>(text.data() + text.size() - end));
  while (!unit.empty() && is_space(unit.front())) unit.remove_prefix(1);
  for (const Unit& u : units)
    if (u.name == unit) return value * u.factor / u.divisor;
  return bad;
}

[[noreturn]] void reject(std::string_view kind, std::string_view example, std::string_view text) {
  const std::string expected = fmt::format("a {} such as \"{}\"", kind, example);
  throw UnitError(fmt::format("expected {}, got \"{}\"", expected, text), expected);
}

}  // namespace

std::uint64_t parse_bytes(std::string_view text) {
  const double v = parse_with_units(text, {
                                              {"", 1, 1},
                                              {"B", 1, 1},
                                              {"KB", 1e3, 1},
                                              {"kB", 1e3, 1},
                                              {"MB", 1e6, 1},
                                              {"GB", 1e9, 1},
                                              {"TB", 1e12, 1},
                                              {"KiB", 0x1p10, 1},
                                              {"MiB", 0x1p20, 1},
                                              {"GiB", 0x1p30, 1},
                                              {"TiB", 0x1p40, 1},
                                          });
  // Fractions are allowed ("1.5KiB") and rounded to whole bytes; 2^64 and above do not fit.
  if (std::isnan(v) || v >= 0x1p64) reject("size", "25MiB", text);
  return static_cast<std::uint64_t>(std::nearbyint(v));
}

double parse_bandwidth(std::string_view text) {
  const double v =
      parse_with_units(text, {
                                 {"", 1, 1},           {"B/s", 1, 1},        {"bit/s", 1, 8},      {"kbit/s", 1e3, 8},
                                 {"Kbit/s", 1e3, 8},   {"Mbit/s", 1e6, 8},   {"Gbit/s", 1e9, 8},   {"Tbit/s", 1e12, 8},
                                 {"bps", 1, 8},        {"kbps", 1e3, 8},     {"Mbps", 1e6, 8},     {"Gbps", 1e9, 8},
                                 {"Tbps", 1e12, 8},    {"KB/s", 1e3, 1},     {"kB/s", 1e3, 1},     {"MB/s", 1e6, 1},
                                 {"GB/s", 1e9, 1},     {"TB/s", 1e12, 1},    {"KiB/s", 0x1p10, 1}, {"MiB/s", 0x1p20, 1},
                                 {"GiB/s", 0x1p30, 1}, {"TiB/s", 0x1p40, 1},
                             });
  if (std::isnan(v) || !std::isfinite(v)) reject("bandwidth", "10Gbit/s", text);
  return v;
}

double parse_duration(std::string_view text) {
  const double v = parse_with_units(text, {
                                              {"", 1, 1},
                                              {"s", 1, 1},
                                              {"ns", 1, 1e9},
                                              {"us", 1, 1e6},
                                              {"\xC2\xB5s", 1, 1e6},  // µs
                                              {"ms", 1, 1e3},
                                              {"min", 60, 1},
                                              {"h", 3600, 1},
                                          });
  if (std::isnan(v) || !std::isfinite(v)) reject("duration", "2us", text);
  return v;
}

std::string format_bytes(double bytes) {
  if (std::signbit(bytes) && bytes != 0) return fmt::format("-{}", format_bytes(-bytes));
  if (!std::isfinite(bytes)) return fmt::format("{} B", bytes);
  if (bytes < 1023.5) return fmt::format("{:.0f} B", bytes);
  static constexpr std::string_view names[] = {"KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double v = bytes / 1024;
  std::size_t i = 0;
  // Move up while the value would print as 1024.0 or more in this unit.
  while (v >= 1023.95 && i + 1 < std::size(names)) {
    v /= 1024;
    ++i;
  }
  return fmt::format("{:.1f} {}", v, names[i]);
}

std::string format_duration(double seconds) {
  if (std::signbit(seconds) && seconds != 0) return fmt::format("-{}", format_duration(-seconds));
  if (seconds == 0) return "0 s";
  if (!std::isfinite(seconds)) return fmt::format("{} s", seconds);
  // Three significant digits in the largest unit that keeps the value >= 1.
  struct Scale {
    std::string_view name;
    double size;
    double next;
  };  // next: where the next unit starts
  static constexpr Scale scales[] = {{"ns", 1e-9, 1e3}, {"us", 1e-6, 1e3}, {"ms", 1e-3, 1e3},
                                     {"s", 1, 60},      {"min", 60, 60},   {"h", 3600, 0}};
  if (seconds < 1e-9) return fmt::format("{:.3g} ns", seconds * 1e9);
  std::size_t i = 0;
  while (scales[i].next != 0 && seconds / scales[i].size >= scales[i].next) ++i;
  double v = seconds / scales[i].size;
  auto render = [](double x) {
    return x >= 99.95 ? fmt::format("{:.0f}", x) : x >= 9.995 ? fmt::format("{:.1f}", x) : fmt::format("{:.2f}", x);
  };
  std::string digits = render(v);
  // 999.7 us rounds to "1000"; show it as "1.00 ms" instead.
  if (scales[i].next != 0 && std::stod(digits) >= scales[i].next) {
    ++i;
    v = seconds / scales[i].size;
    digits = render(v);
  }
  return fmt::format("{} {}", digits, scales[i].name);
}

std::vector<int> parse_world_list(std::string_view text) {
  auto fail = [&](const std::string& why) { return InputError(fmt::format("world sizes \"{}\": {}", text, why)); };
  std::vector<std::string> items;
  std::stringstream in{std::string(text)};
  for (std::string item; std::getline(in, item, ',');) items.push_back(item);
  if (text.empty() || text.back() == ',') items.push_back("");
  std::vector<int> out;
  for (std::size_t i = 0; i < items.size(); ++i) {
    const std::string& item = items[i];
    if (item == "...") {
      if (out.size() < 2 || i + 1 >= items.size() || items[i + 1] == "...")
        throw fail("\"...\" needs two sizes before it and one after it, e.g. 2,4,...,1024");
      continue;  // expanded when the size after it is read
    }
    long v = 0;
    const auto [end, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
    if (item.empty() || ec != std::errc() || end != item.data() + item.size())
      throw fail(fmt::format("\"{}\" is not a whole number", item));
    if (v < 1 || v > (1L << 24)) throw fail(fmt::format("world sizes must be 1 to {}, got {}", 1L << 24, v));
    if (i > 0 && items[i - 1] == "...") {
      // Multiplying when b is a multiple of a (2,4,...,1024), adding otherwise (8,16,24,...,64): a mistyped end
      // is an error, never a silently different list.
      const long a = out[out.size() - 2], b = out.back();
      if (b <= a) throw fail(fmt::format("{},{},... does not grow", a, b));
      if (v <= b) throw fail(fmt::format("the size after \"...\" must be larger than {}, got {}", b, v));
      const bool geometric = b % a == 0;
      long next = geometric ? b * (b / a) : 2 * b - a;
      for (; next < v; next = geometric ? next * (b / a) : next + (b - a)) out.push_back(static_cast<int>(next));
      if (next != v)
        throw fail(fmt::format(
            "{} is not in the progression {},{},{},... ({} {}){}", v, a, b, geometric ? b * (b / a) : 2 * b - a,
            geometric ? "times" : "plus", geometric ? b / a : b - a,
            geometric ? fmt::format("; for equal steps write three sizes, e.g. {},{},{},...", a, 2 * a, 3 * a)
                      : std::string()));
    }
    out.push_back(static_cast<int>(v));
  }
  return out;
}

}  // namespace ddplab
