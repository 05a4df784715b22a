#include "ddplab/strategies/options.hpp"

#include <charconv>
#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "ddplab/core/error.hpp"

namespace ddplab {
namespace {

bool parse(const std::string& text, double& out) {
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, out);
  return !text.empty() && ec == std::errc() && ptr == end && std::isfinite(out);
}

bool parse(const std::string& text, long long& out) {
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, out);
  return !text.empty() && ec == std::errc() && ptr == end;
}

const char* kind_name(OptionKind k) {
  return k == OptionKind::Integer ? "an integer" : k == OptionKind::Number ? "a number" : "a boolean";
}

// The text of option `name` (set, else its fallback), checked; `as` is how the caller reads it: a number
// reads integers too, the others only their own kind.
const std::string& value_of(const std::vector<OptionSpec>& specs, const OptionValues& values, const std::string& name,
                            OptionKind as) {
  const OptionSpec* spec = find_option(specs, name);
  if (!spec) throw InternalError(fmt::format("no option {} (known: {})", name, option_names(specs)));
  if (spec->kind != as && !(as == OptionKind::Number && spec->kind == OptionKind::Integer))
    throw InternalError(fmt::format("option {} is {}, not {}", name, kind_name(spec->kind), kind_name(as)));
  const auto it = values.find(name);
  const std::string& text = it == values.end() ? spec->fallback : it->second;
  if (!option_accepts(*spec, text))
    throw InputError(fmt::format("{} must be {}, got \"{}\"", name, spec->requirement(), text), name);
  return text;
}

}  // namespace

std::string OptionSpec::requirement() const {
  if (kind == OptionKind::Boolean) return "true or false";
  const bool bounded = std::isfinite(max);
  if (kind == OptionKind::Number && bounded)
    return fmt::format("in {}{:g}, {:g}{}", min_excluded ? "(" : "[", min, max, max_excluded ? ")" : "]");
  const char* what = kind == OptionKind::Integer ? "an integer" : "a number";
  if (bounded) return fmt::format("{} from {:g} to {:g}", what, min, max);
  return fmt::format("{} {} {:g}", what, min_excluded ? ">" : ">=", min);
}

const OptionSpec* find_option(const std::vector<OptionSpec>& specs, const std::string& name) {
  for (const auto& s : specs)
    if (s.name == name) return &s;
  return nullptr;
}

std::string option_names(const std::vector<OptionSpec>& specs) {
  std::string out;
  for (const auto& s : specs) out += (out.empty() ? "" : ", ") + s.name;
  return out;
}

bool option_accepts(const OptionSpec& spec, const std::string& text) {
  if (spec.kind == OptionKind::Boolean) return text == "true" || text == "false" || text == "1" || text == "0";
  double v = 0;
  if (spec.kind == OptionKind::Integer) {
    long long i = 0;
    if (!parse(text, i)) return false;
    v = static_cast<double>(i);
  } else if (!parse(text, v)) {
    return false;
  }
  return (spec.min_excluded ? v > spec.min : v >= spec.min) && (spec.max_excluded ? v < spec.max : v <= spec.max);
}

void check_options(const std::string& what, const std::vector<OptionSpec>& specs, const OptionValues& values) {
  for (const auto& [key, value] : values) {
    const OptionSpec* spec = find_option(specs, key);
    if (!spec) {
      const std::string keys = option_names(specs);
      throw InputError(fmt::format("{}: unknown option \"{}\" ({})", what, key,
                                   keys.empty() ? std::string("it takes no options") : "known: " + keys),
                       key);
    }
    if (!option_accepts(*spec, value))
      throw InputError(fmt::format("{}: {} must be {}, got \"{}\"", what, key, spec->requirement(), value), key);
  }
}

long long option_integer(const std::vector<OptionSpec>& specs, const OptionValues& values, const std::string& name) {
  const std::string& text = value_of(specs, values, name, OptionKind::Integer);
  long long v = 0;
  parse(text, v);
  return v;
}

double option_number(const std::vector<OptionSpec>& specs, const OptionValues& values, const std::string& name) {
  const std::string& text = value_of(specs, values, name, OptionKind::Number);
  double v = 0;
  parse(text, v);
  return v;
}

bool option_bool(const std::vector<OptionSpec>& specs, const OptionValues& values, const std::string& name) {
  const std::string& text = value_of(specs, values, name, OptionKind::Boolean);
  return text == "true" || text == "1";
}

}  // namespace ddplab
