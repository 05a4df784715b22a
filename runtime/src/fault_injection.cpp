#include "ddplab/runtime/fault_injection.hpp"

#include <algorithm>
#include <charconv>
#include <vector>

#include <fmt/format.h>

#include "ddplab/core/error.hpp"

namespace ddplab {
namespace {

struct Syntax {
  FaultKind kind;
  std::string_view name, fields;
};
constexpr Syntax kSyntax[] = {{FaultKind::Exit, "exit", "RANK:STEP"},
                              {FaultKind::Perturb, "perturb", "RANK"},
                              {FaultKind::Bitflip, "bitflip", "RANK:STEP"},
                              {FaultKind::Wrong, "wrong", "SCHEDULE:BYTES"}};

std::vector<std::string_view> fields_of(std::string_view text) {
  std::vector<std::string_view> out;
  for (std::size_t start = 0;;) {
    const std::size_t colon = text.find(':', start);
    out.push_back(text.substr(start, colon == std::string_view::npos ? std::string_view::npos : colon - start));
    if (colon == std::string_view::npos) return out;
    start = colon + 1;
  }
}

// A whole number >= 0 written in decimal digits only (no sign, no spaces), that fits T.
template <class T>
bool whole(std::string_view s, T& v) {
  if (s.empty() || !std::all_of(s.begin(), s.end(), [](char c) { return c >= '0' && c <= '9'; })) return false;
  const auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  return ec == std::errc{} && end == s.data() + s.size();
}

}  // namespace

FaultInjection parse_fault_injection(std::string_view text, std::string_view option,
                                     std::initializer_list<FaultKind> accepted) {
  std::vector<std::string> forms, numbers;
  const Syntax* syntax = nullptr;
  const std::vector<std::string_view> f = fields_of(text);
  for (const Syntax& s : kSyntax) {
    if (std::find(accepted.begin(), accepted.end(), s.kind) == accepted.end()) continue;
    forms.push_back(fmt::format("{}:{}", s.name, s.fields));
    for (const char* n : {"RANK", "STEP", "BYTES"})
      if (s.fields.find(n) != std::string_view::npos && std::find(numbers.begin(), numbers.end(), n) == numbers.end())
        numbers.push_back(n);
    if (s.name == f.front()) syntax = &s;
  }
  const auto refuse = [&] {
    const auto listed = [](const std::vector<std::string>& v, const char* last) {
      std::string out = v.empty() ? "" : v.front();
      for (std::size_t i = 1; i < v.size(); ++i) out += (i + 1 == v.size() ? last : ", ") + v[i];
      return out;
    };
    const std::string whole = numbers.empty()       ? ""
                              : numbers.size() == 1 ? fmt::format(" ({} a whole number)", numbers.front())
                                                    : fmt::format(" ({} whole numbers)", listed(numbers, " and "));
    return InputError(fmt::format("{}: expected {}{}, got \"{}\"", option,
                                  forms.empty() ? "no fault" : listed(forms, " or "), whole, text),
                      std::string(option));
  };
  if (!syntax) throw refuse();
  FaultInjection out;
  out.kind = syntax->kind;
  const std::size_t wanted = syntax->kind == FaultKind::Perturb ? 2 : 3;
  if (f.size() != wanted) throw refuse();
  if (out.kind == FaultKind::Wrong) {
    out.schedule = std::string(f[1]);
    if (out.schedule.empty() || !whole(f[2], out.bytes)) throw refuse();
    return out;
  }
  if (!whole(f[1], out.rank) || (wanted == 3 && !whole(f[2], out.step))) throw refuse();
  return out;
}

std::string fault_injection_text(const FaultInjection& fault) {
  switch (fault.kind) {
    case FaultKind::None:
      return "";
    case FaultKind::Exit:
      return fmt::format("exit:{}:{}", fault.rank, fault.step);
    case FaultKind::Perturb:
      return fmt::format("perturb:{}", fault.rank);
    case FaultKind::Bitflip:
      return fmt::format("bitflip:{}:{}", fault.rank, fault.step);
    case FaultKind::Wrong:
      return fmt::format("wrong:{}:{}", fault.schedule, fault.bytes);
  }
  throw InternalError("fault_injection_text: a fault kind without a text");
}

}  // namespace ddplab
