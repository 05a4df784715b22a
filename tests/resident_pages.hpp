// Which pages of a host range are resident (mincore), for the tests of Ops::release and ZeRO-2. A page read
// after its release maps the zero page, which mincore counts as resident: look before reading.
#pragma once
#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <stdexcept>
#include <vector>

namespace ddplab::test {

// One flag per page that [p, p + bytes) touches, from the page holding p.
inline std::vector<bool> resident_pages(const void* p, std::size_t bytes) {
  const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto begin = reinterpret_cast<std::uintptr_t>(p) / page * page;
  const auto end = reinterpret_cast<std::uintptr_t>(p) + bytes;
  std::vector<unsigned char> in((end - begin + page - 1) / page);
  if (mincore(reinterpret_cast<void*>(begin), end - begin, in.data()) != 0) throw std::runtime_error("mincore failed");
  std::vector<bool> out;
  for (unsigned char c : in) out.push_back(c & 1);
  return out;
}

// The bytes of [p, p + bytes) on resident pages.
inline std::size_t resident_bytes(const void* p, std::size_t bytes) {
  const auto page = static_cast<std::uintptr_t>(sysconf(_SC_PAGESIZE));
  const auto lo = reinterpret_cast<std::uintptr_t>(p), hi = lo + bytes, base = lo / page * page;
  const std::vector<bool> in = resident_pages(p, bytes);
  std::size_t held = 0;
  for (std::size_t i = 0; i < in.size(); ++i)
    if (in[i])
      held += std::min<std::uintptr_t>(base + (i + 1) * page, hi) - std::max<std::uintptr_t>(base + i * page, lo);
  return held;
}

}  // namespace ddplab::test
