// Shared pieces of every schedule: chunking and byte accounting.
#include <algorithm>

#include "ddplab/strategies/schedule.hpp"

namespace ddplab {

std::size_t Schedule::bytes_sent(int rank, std::size_t elem_bytes) const {
  std::size_t elems = 0;
  for (const auto& step : ranks.at(static_cast<std::size_t>(rank)))
    for (const auto& s : step.sends) elems += s.chunk.count;
  return elems * elem_bytes;
}

}  // namespace ddplab
