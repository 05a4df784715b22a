// Closed sets of choices (model type, backend, run status, collective, ...) as enums with one name table
// each. Text becomes an enum once, where it enters (a scenario, a command line, a stored row), and back to
// text only where it leaves; the libraries compare enums, never strings.
//
// A choice is an enum E with a specialisation of ChoiceNames<E> holding `static constexpr std::array
// names` of {value, "text"} pairs and `static constexpr std::string_view what` (for error messages).
#pragma once
#include <array>
#include <optional>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>

#include <fmt/format.h>

#include "ddplab/core/error.hpp"

namespace ddplab {

template <class E>
struct ChoiceNames;  // specialised next to each enum

// The text of a value (as written in scenarios, stored rows and output).
template <class E>
constexpr std::string_view name_of(E value) {
  for (const auto& [v, text] : ChoiceNames<E>::names)
    if (v == value) return text;
  return "?";  // unreachable while every enumerator has a row; a test enumerates them
}

template <class E>
std::string to_string(E value) requires requires {
  ChoiceNames<E>::names;
}
{ return std::string(name_of(value)); }

// The value named `text`, if any.
template <class E>
constexpr std::optional<E> choice_from(std::string_view text) {
  for (const auto& [v, name] : ChoiceNames<E>::names)
    if (name == text) return v;
  return std::nullopt;
}

// "a, b, c": the names, for "known: ..." in errors and --help.
template <class E>
std::string choice_names(std::string_view separator = ", ") {
  std::string out;
  for (const auto& [v, name] : ChoiceNames<E>::names) {
    if (!out.empty()) out += separator;
    out += name;
  }
  return out;
}

// The value named `text`, or an InputError at `where` naming the choices.
template <class E>
E parse_choice(std::string_view text, InputLocation where = {}) {
  if (auto v = choice_from<E>(text)) return *v;
  std::string detail =
      std::string(ChoiceNames<E>::what) + " \"" + std::string(text) + "\" is not one of " + choice_names<E>();
  if (where.file.empty()) throw InputError((where.field.empty() ? "" : where.field + ": ") + detail, where.field);
  throw InputError(std::move(where), detail);
}

// A value read back from storage the program wrote itself: an unknown name is a broken invariant unless
// the caller treats it as input (a store from a newer version), so it throws Err (InputError unless the
// reader has its own kind, as the results store has) naming `context`.
template <class E, class Err = InputError>
E stored_choice(std::string_view text, std::string_view context) {
  if (auto v = choice_from<E>(text)) return *v;
  throw Err(std::string(context) + ": " + std::string(ChoiceNames<E>::what) + " \"" + std::string(text) +
            "\" is not one of " + choice_names<E>());
}

// Streams (and GoogleTest's messages) print a choice as its name.
template <class E>
requires requires { ChoiceNames<E>::names; }
std::ostream& operator<<(std::ostream& os, E value) { return os << name_of(value); }

// nlohmann::json writes a choice as its name and reads it back by name (found by ADL). ddplab_core defines
// JSON_DISABLE_ENUM_SERIALIZATION, so an enum without a name table cannot slip into JSON as a number.
template <class Json, class E>
requires requires { ChoiceNames<E>::names; }
void to_json(Json& j, E value) { j = std::string(name_of(value)); }
template <class Json, class E>
requires requires { ChoiceNames<E>::names; }
void from_json(const Json& j, E& value) { value = stored_choice<E>(j.template get<std::string>(), "JSON"); }

}  // namespace ddplab

// fmt prints a choice as its name.
namespace fmt {
template <class E>
requires requires { ddplab::ChoiceNames<E>::names; }
struct formatter<E> : formatter<std::string_view> {
  template <class Context>
  auto format(E value, Context& ctx) const {
    return formatter<std::string_view>::format(ddplab::name_of(value), ctx);
  }
};
}  // namespace fmt
