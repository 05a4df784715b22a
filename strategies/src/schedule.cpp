#include "ddplab/strategies/schedule.hpp"

#include <stdexcept>

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

Schedule ring_allreduce(int n, std::size_t count) {
  if (n < 1) throw std::invalid_argument("ring_allreduce: world size must be >= 1");
  Schedule s{"ring", "allreduce", n, count, std::vector<std::vector<ScheduleStep>>(static_cast<std::size_t>(n))};
  auto mod = [n](int x) { return ((x % n) + n) % n; };
  for (int r = 0; r < n; ++r) {
    auto& steps = s.ranks[static_cast<std::size_t>(r)];
    const int next = mod(r + 1), prev = mod(r - 1);
    // Reduce-scatter: after step k, rank r holds the partial sum of chunk r-k-1 over k+2 ranks;
    // at the end rank r owns the full sum of chunk r+1.
    for (int k = 0; k < n - 1; ++k)
      steps.push_back({{{next, chunk_of(count, n, mod(r - k))}},
                       {{prev, chunk_of(count, n, mod(r - k - 1)), RecvMode::Reduce}}});
    // All-gather: pass the finished chunks around the ring.
    for (int k = 0; k < n - 1; ++k)
      steps.push_back({{{next, chunk_of(count, n, mod(r + 1 - k))}},
                       {{prev, chunk_of(count, n, mod(r - k)), RecvMode::Copy}}});
  }
  return s;
}

Schedule make_schedule(const std::string& name, int world_size, std::size_t count) {
  if (name == "ring") return ring_allreduce(world_size, count);
  throw std::invalid_argument("unknown schedule \"" + name + "\" (known: ring, native)");
}

}  // namespace ddplab
