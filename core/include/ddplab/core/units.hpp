// Unit-bearing values in scenarios: sizes ("25MiB"), rates ("10Gbit/s"), durations ("2us").
#pragma once
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "ddplab/core/error.hpp"

namespace ddplab {

// A malformed unit-bearing value: "expected a size such as "25MiB", got "x"". expected() is the middle part,
// "a size such as "25MiB"", for a caller that phrases the message itself.
class UnitError : public InputError {
 public:
  UnitError(const std::string& message, std::string expected) : InputError(message), expected_(std::move(expected)) {}
  const std::string& expected() const noexcept { return expected_; }

 private:
  std::string expected_;
};

// Each parser accepts "<number><unit>" with optional spaces between, and throws UnitError
// with a message naming what was expected when the text is malformed.
std::uint64_t parse_bytes(std::string_view text);  // B, KB, MB, GB (10^3), KiB, MiB, GiB (2^10); bare number = bytes
double parse_bandwidth(
    std::string_view text);  // bytes/s: bit/s, kbit/s, Mbit/s, Gbit/s, B/s, KB/s, MB/s, GB/s, KiB/s, MiB/s, GiB/s
double parse_duration(std::string_view text);  // seconds: ns, us, ms, s, min, h

// World sizes: "8,64,512", where "..." continues the progression of the two sizes before it up to the size
// after it: multiplying when the second is a multiple of the first ("2,4,...,1024"), otherwise adding
// ("8,16,24,...,64"). An end off the progression throws InputError, as does any malformed item.
std::vector<int> parse_world_list(std::string_view text);

std::string format_bytes(double bytes);       // "25.0 MiB"
std::string format_duration(double seconds);  // "2.00 us", "13.4 ms"

}  // namespace ddplab
