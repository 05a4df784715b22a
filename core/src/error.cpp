#include "ddplab/core/error.hpp"

#include <charconv>

#include <fmt/format.h>

namespace ddplab {
namespace {

// The number `text` holds entirely, if it is one.
std::optional<int> whole_number(std::string_view text) {
  int v = 0;
  const auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (text.empty() || ec != std::errc() || end != text.data() + text.size() || v < 0) return std::nullopt;
  return v;
}

}  // namespace

Error::~Error() = default;

InputLocation InputLocation::at(std::string_view position, std::string field) {
  InputLocation where;
  where.field = std::move(field);
  // From the right: FILE:LINE:COL, FILE:LINE, FILE (a file name may hold colons itself).
  std::optional<int> numbers[2];
  int found = 0;
  while (found < 2) {
    const auto colon = position.rfind(':');
    if (colon == std::string_view::npos) break;
    const std::optional<int> n = whole_number(position.substr(colon + 1));
    if (!n) break;
    numbers[found++] = n;
    position = position.substr(0, colon);
  }
  where.file = std::string(position);
  if (found == 2)
    where.line = numbers[1], where.column = numbers[0];
  else if (found == 1)
    where.line = numbers[0];
  return where;
}

std::string InputLocation::position() const {
  if (file.empty()) return "";
  if (line && column) return fmt::format("{}:{}:{}", file, *line, *column);
  if (line) return fmt::format("{}:{}", file, *line);
  return file;
}

InputError::InputError(const std::string& message, std::string field) : Error(message), detail_(message) {
  where_.field = std::move(field);
}

InputError::InputError(InputLocation where, const std::string& detail)
    : Error(where.file.empty() ? detail : where.position() + ": " + detail),
      where_(std::move(where)),
      detail_(detail) {}

InputError::InputError(const std::string& message, InputLocation where)
    : Error(message), where_(std::move(where)), detail_(message) {}

InputError::InputError(const std::string& message, InputLocation where, std::string detail)
    : Error(message), where_(std::move(where)), detail_(std::move(detail)) {}

InputError InputError::prefixed(std::string_view prefix) const {
  return InputError(std::string(prefix) + what(), where_, detail_);
}

RunFault::RunFault(const std::string& message, RunLocation where) : Error(message), where_(std::move(where)) {}

RunFault RunFault::prefixed(std::string_view prefix) const { return RunFault(std::string(prefix) + what(), where_); }

int exit_code_of(const std::exception& e) noexcept {
  if (const auto* error = dynamic_cast<const Error*>(&e)) return error->exit_code();
  return InternalError::kExitCode;
}

int rank_exit_code(const std::exception& e) noexcept {
  if (const auto* error = dynamic_cast<const Error*>(&e)) return error->exit_code();
  if (dynamic_cast<const std::logic_error*>(&e)) return InternalError::kExitCode;
  return RunFault::kExitCode;
}

}  // namespace ddplab
