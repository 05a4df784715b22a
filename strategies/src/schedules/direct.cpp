// Direct (all-to-all) allreduce: every rank sends chunk j straight to rank j, which sums the n
// contributions (one step), then every rank sends its finished chunk to every other rank (one step).
// Bandwidth-optimal, 2(n-1)/n of the buffer per rank, in 2 steps, at the price of n-1 messages in flight
// per rank per step (good for small n or full-bisection networks).
#include "builder.hpp"

namespace ddplab {

Schedule direct_allreduce(int n, std::size_t count) {
  sched::Builder b("direct", Collective::Allreduce, n, count);
  if (n == 1) return b.finish();
  const std::vector<Chunk> chunks = sched::split({0, count}, n);
  // Step 0, reduce-scatter: rank j receives chunk j from every other rank and adds them in the order
  // listed (j+1, j+2, ...), so chunk j's sum is formed once, on rank j.
  for (int j = 0; j < n; ++j)
    for (int d = 1; d < n; ++d) b.move(0, (j + d) % n, j, chunks[static_cast<std::size_t>(j)], RecvMode::Reduce);
  // Step 1, all-gather: the owner of each chunk copies it to everyone else.
  for (int j = 0; j < n; ++j)
    for (int d = 1; d < n; ++d) b.move(1, j, (j + d) % n, chunks[static_cast<std::size_t>(j)], RecvMode::Copy);
  return b.finish();
}

}  // namespace ddplab
