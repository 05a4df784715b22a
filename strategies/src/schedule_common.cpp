// Shared pieces of every schedule: chunking and byte accounting.
#include <algorithm>

#include "ddplab/strategies/schedule.hpp"

namespace ddplab {

Chunk chunk_of(std::size_t count, int parts, int i) {
  const std::size_t p = static_cast<std::size_t>(parts), idx = static_cast<std::size_t>(i);
  const std::size_t base = count / p, extra = count % p;
  return {idx * base + std::min(idx, extra), base + (idx < extra ? 1 : 0)};
}

std::size_t Schedule::bytes_sent(int rank, std::size_t elem_bytes) const {
  std::size_t elems = 0;
  for (const auto& step : ranks.at(static_cast<std::size_t>(rank)))
    for (const auto& s : step.sends) elems += s.chunk.count;
  return elems * elem_bytes;
}

}  // namespace ddplab
