// Numeric option checks with plain messages. CLI11's own (PositiveNumber, Range) print the type's limits,
// e.g. "Value 0 not in range 0.000000 to 1797693134862315708...", which says neither what is wrong nor what
// is allowed.
#pragma once
#include <limits>
#include <stdexcept>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include "ddplab/core/error.hpp"
#include "ddplab/core/units.hpp"

namespace ddplab::cli {

// Accepts numbers v with lo <= v (lo < v when `strict`) and v <= hi; `what` names the kind ("integer").
inline CLI::Validator number_in(double lo, double hi, bool strict = false, const char* what = "number") {
  const std::string allowed = hi == std::numeric_limits<double>::max() ? fmt::format("{} {}", strict ? ">" : ">=", lo)
                              : strict                                 ? fmt::format("> {} and <= {}", lo, hi)
                                                                       : fmt::format("{} to {}", lo, hi);
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        std::size_t used = 0;
        double v = 0;
        try {
          v = std::stod(text, &used);
        } catch (const std::exception&) {
          used = 0;
        }
        if (used == 0 || used != text.size()) return fmt::format("expected a {}, got \"{}\"", what, text);
        if (v < lo || (strict && v == lo) || v > hi) return fmt::format("must be {}, got {}", allowed, text);
        return {};
      },
      allowed);
}
inline CLI::Validator positive_int() { return number_in(0, std::numeric_limits<double>::max(), true, "whole number"); }
inline CLI::Validator non_negative_int() {
  return number_in(0, std::numeric_limits<double>::max(), false, "whole number");
}

// A --world list (units.hpp's parse_world_list: "8,64,512", "2,4,...,1024"), its errors prefixed with the option.
inline std::vector<int> world_sizes_option(const char* option, const std::string& text) {
  try {
    return parse_world_list(text);
  } catch (const InputError& e) {
    throw InputError(fmt::format("{}: {}", option, e.what()), option);
  }
}

}  // namespace ddplab::cli
