// The scenario reader's machinery: renders TOML values and positions for messages, suggests the name a
// user most likely meant, and reads typed fields, throwing ScenarioError with file:line:col. Internal to
// core's scenario parsing (scenario.cpp reads the sections with it).
#pragma once

#include <algorithm>
#include <climits>
#include <cmath>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <toml++/toml.h>

#include "ddplab/core/choice.hpp"
#include "ddplab/core/scenario.hpp"
#include "ddplab/core/units.hpp"

namespace ddplab::scenario_detail {

using Choices = std::initializer_list<std::string_view>;

// ---- rendering values and positions for messages ----

inline std::string quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      case '\t':
        out += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20)
          out += fmt::format("\\u{:04x}", c);
        else
          out += c;
    }
  }
  return out + "\"";
}

// A value as the user would write it in TOML (strings double-quoted, floats keep their ".0").
inline std::string show(const toml::node& n) {
  if (auto s = n.as_string()) return quote(s->get());
  if (auto i = n.as_integer()) return std::to_string(i->get());
  if (auto b = n.as_boolean()) return b->get() ? "true" : "false";
  if (auto f = n.as_floating_point()) {
    const double v = f->get();
    if (std::isnan(v)) return "nan";
    if (std::isinf(v)) return v > 0 ? "inf" : "-inf";
    std::string t = fmt::format("{}", v);
    if (t.find_first_of(".e") == std::string::npos) t += ".0";
    return t;
  }
  if (auto a = n.as_array()) {
    std::string out = "[";
    for (std::size_t i = 0; i < a->size(); ++i) out += (i ? ", " : "") + show(*a->get(i));
    return out + "]";
  }
  if (n.is_table()) return "a table";
  std::ostringstream os;  // dates and times
  n.visit([&](auto&& v) { os << v; });
  return os.str();
}

// Edit distance counting a swap of neighbours as one edit (optimal string alignment), for "did you mean".
inline std::size_t edit_distance(std::string_view a, std::string_view b) {
  std::vector<std::vector<std::size_t>> d(a.size() + 1, std::vector<std::size_t>(b.size() + 1));
  for (std::size_t i = 0; i <= a.size(); ++i) d[i][0] = i;
  for (std::size_t j = 0; j <= b.size(); ++j) d[0][j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i)
    for (std::size_t j = 1; j <= b.size(); ++j) {
      d[i][j] = std::min({d[i - 1][j] + 1, d[i][j - 1] + 1, d[i - 1][j - 1] + (a[i - 1] != b[j - 1])});
      if (i > 1 && j > 1 && a[i - 1] == b[j - 2] && a[i - 2] == b[j - 1])
        d[i][j] = std::min(d[i][j], d[i - 2][j - 2] + 1);
    }
  return d[a.size()][b.size()];
}

// The known name the user most likely meant: a close spelling, or one that adds a prefix or
// suffix to what was written ("bandwidth" -> "link_bandwidth").
template <class Names>
inline std::optional<std::string_view> closest(std::string_view key, const Names& known) {
  std::optional<std::string_view> best;
  std::size_t best_d = SIZE_MAX;
  for (std::string_view k : known) {
    const std::size_t d = edit_distance(key, k);
    const std::size_t limit = std::clamp<std::size_t>(std::max(key.size(), k.size()) / 3, 1, 3);
    if (d <= limit && d < best_d) {
      best_d = d;
      best = k;
    }
  }
  if (best || key.size() < 3) return best;
  for (std::string_view k : known)
    if (k.ends_with(fmt::format("_{}", key)) || k.starts_with(fmt::format("{}_", key))) return k;
  return std::nullopt;
}

inline std::string choice_list(Choices choices) {
  std::string out;
  for (std::string_view c : choices) out += (out.empty() ? "" : ", ") + quote(c);
  return out;
}

// ---- the reader: walks tables, checks fields, throws ScenarioError with positions ----

class Reader {
 public:
  explicit Reader(std::string path) : path_(std::move(path)) {}

  // "FILE:LINE:COL: MESSAGE", the field (when one is at fault) carried beside it.
  [[noreturn]] void fail(const toml::source_region& where, const std::string& message, std::string field = {}) const {
    throw ScenarioError(InputLocation{path_, static_cast<int>(where.begin.line), static_cast<int>(where.begin.column),
                                      std::move(field)},
                        message);
  }
  [[noreturn]] void fail(const toml::node& node, const std::string& field, std::string_view problem) const {
    fail(node.source(), fmt::format("{} {}, got {}", field, problem, show(node)), field);
  }

  // Rejects keys of `table` outside `known`; reports the first one in the file.
  void check_keys(const toml::table& table, const std::string& prefix, Choices known) const {
    const toml::key* first = nullptr;
    for (auto&& [key, value] : table) {
      if (std::find(known.begin(), known.end(), key.str()) != known.end()) continue;
      if (!first || key.source().begin < first->source().begin) first = &key;
    }
    if (!first) return;
    std::string message = fmt::format("unknown key {}{}", prefix, first->str());
    if (auto guess = closest(first->str(), known)) message += fmt::format(" (did you mean {}{}?)", prefix, *guess);
    fail(first->source(), message, prefix + std::string(first->str()));
  }

  // A registry entry's options table (`key = { ratio = 0.01 }`): values as text into `out`, and each
  // value's position into where["KEY.NAME"]. The registry types them later.
  void read_option_table(const toml::table& t, const std::string& prefix, std::string_view key,
                         std::map<std::string, std::string>& out, std::map<std::string, std::string>& where,
                         std::string_view example) const {
    const toml::node* n = t.get(key);
    if (!n) return;
    const toml::table* opts = n->as_table();
    if (!opts) fail(*n, prefix + std::string(key), fmt::format("must be a table such as {}", example));
    for (auto&& [name, value] : *opts) {
      const std::string field = fmt::format("{}.{}", key, name.str());
      if (!(value.is_string() || value.is_integer() || value.is_floating_point() || value.is_boolean()))
        fail(value, prefix + field, "must be a string, number or boolean");
      out[std::string(name.str())] = value.is_string() ? value.as_string()->get() : show(value);
      where[field] = position(value.source());
    }
  }

  std::string position(const toml::source_region& where) const {
    return fmt::format("{}:{}:{}", path_, where.begin.line, where.begin.column);
  }

  // A size with units ("25MiB") or a plain number of bytes; must be positive.
  void read_size(const toml::table& t, const std::string& prefix, std::string_view key, std::uint64_t& out) const {
    if (const toml::node* n = t.get(key))
      out = static_cast<std::uint64_t>(read_unit(*n, prefix + std::string(key), parse_bytes_as_double, true));
  }
  static double parse_bytes_as_double(std::string_view text) { return static_cast<double>(parse_bytes(text)); }

  // Integer in [min, INT_MAX]; `problem` describes the range ("must be a positive integer").
  void read_int(const toml::table& t, const std::string& prefix, std::string_view key, int& out, long long min,
                std::string_view problem) const {
    const toml::node* n = t.get(key);
    if (!n) return;
    const auto v = n->as_integer();
    if (!v || v->get() < min || v->get() > INT_MAX) fail(*n, prefix + std::string(key), problem);
    out = static_cast<int>(v->get());
  }

  // Integer or float accepted by `ok`.
  void read_number(const toml::table& t, const std::string& prefix, std::string_view key, double& out,
                   const std::function<bool(double)>& ok, std::string_view problem) const {
    const toml::node* n = t.get(key);
    if (!n) return;
    const auto v = n->value<double>();
    if (!(n->is_integer() || n->is_floating_point()) || !v || !std::isfinite(*v) || !ok(*v))
      fail(*n, prefix + std::string(key), problem);
    out = *v;
  }

  void read_bool(const toml::table& t, const std::string& prefix, std::string_view key, bool& out) const {
    const toml::node* n = t.get(key);
    if (!n) return;
    const auto v = n->as_boolean();
    if (!v) fail(*n, prefix + std::string(key), "must be true or false");
    out = v->get();
  }

  void read_choice(const toml::table& t, const std::string& prefix, std::string_view key, std::string& out,
                   Choices choices) const {
    const toml::node* n = t.get(key);
    if (!n) return;
    const auto s = n->as_string();
    if (!s || std::find(choices.begin(), choices.end(), s->get()) == choices.end())
      fail(*n, prefix + std::string(key), fmt::format("must be one of {}", choice_list(choices)));
    out = s->get();
  }

  // A choice with its own enum (choice.hpp): the same message, from the enum's name table.
  template <class E>
  void read_choice(const toml::table& t, const std::string& prefix, std::string_view key, E& out) const {
    const toml::node* n = t.get(key);
    if (!n) return;
    const auto s = n->as_string();
    const auto v = s ? choice_from<E>(s->get()) : std::nullopt;
    if (!v) {
      std::string known;
      for (const auto& [value, name] : ChoiceNames<E>::names) known += (known.empty() ? "" : ", ") + quote(name);
      fail(*n, prefix + std::string(key), fmt::format("must be one of {}", known));
    }
    out = *v;
  }

  void read_string(const toml::table& t, const std::string& prefix, std::string_view key, std::string& out) const {
    const toml::node* n = t.get(key);
    if (!n) return;
    const auto s = n->as_string();
    if (!s || s->get().empty()) fail(*n, prefix + std::string(key), "must be a non-empty string");
    out = s->get();
  }

  // A unit-bearing value: a string parsed by `parse` ("10Gbit/s") or a plain number in base units.
  // Values that parse but are out of range (zero where `positive`) get their own message.
  double read_unit(const toml::node& n, const std::string& field, double (*parse)(std::string_view),
                   bool positive) const {
    double v = 0;
    try {
      if (auto s = n.as_string()) {
        v = parse(s->get());
      } else if (n.is_integer() || n.is_floating_point()) {
        v = *n.value<double>();
        if (!std::isfinite(v) || v < 0) parse("-");  // let the parser phrase "expected a ..."
      } else {
        parse("-");
      }
    } catch (const UnitError& e) {
      fail(n, field, fmt::format("must be {}", e.expected()));  // our own quoting of the value, not the parser's
    }
    if (positive && v <= 0) fail(n, field, "must be greater than 0");
    return v;
  }

  void read_unit(const toml::table& t, const std::string& prefix, std::string_view key, double& out,
                 double (*parse)(std::string_view), bool positive) const {
    if (const toml::node* n = t.get(key)) out = read_unit(*n, prefix + std::string(key), parse, positive);
  }
  void read_unit(const toml::table& t, const std::string& prefix, std::string_view key, std::optional<double>& out,
                 double (*parse)(std::string_view), bool positive) const {
    if (const toml::node* n = t.get(key)) out = read_unit(*n, prefix + std::string(key), parse, positive);
  }

  // Array of positive ints with at least `min_size` entries; `problem` describes the whole array.
  void read_int_array(const toml::table& t, const std::string& prefix, std::string_view key, std::vector<int>& out,
                      std::size_t min_size, std::string_view problem) const {
    const toml::node* n = t.get(key);
    if (!n) return;
    const std::string field = prefix + std::string(key);
    const toml::array* a = n->as_array();
    if (!a || a->size() < min_size) fail(*n, field, problem);
    std::vector<int> values;
    for (std::size_t i = 0; i < a->size(); ++i) {
      const toml::node& e = *a->get(i);
      const auto v = e.as_integer();
      if (!v || v->get() < 1 || v->get() > INT_MAX)
        fail(e, fmt::format("{}[{}]", field, i), "must be a positive integer");
      values.push_back(static_cast<int>(v->get()));
    }
    out = std::move(values);
  }

  // A section that must be a table when present; nullptr when absent.
  const toml::table* section(const toml::table& root, std::string_view key) const {
    const toml::node* n = root.get(key);
    if (!n) return nullptr;
    if (!n->is_table()) fail(*n, std::string(key), fmt::format("must be a table ([{}])", key));
    return n->as_table();
  }

 private:
  std::string path_;
};

// The sections read in files of their own.
void read_parallel(const Reader& r, const toml::table& t, ParallelConfig& p);  // scenario_parallel.cpp

}  // namespace ddplab::scenario_detail
