// Ring allreduce, as in Baidu's ring-allreduce and NCCL's ring algorithm: bandwidth-optimal
// (each rank sends 2(n-1)/n of the buffer), latency linear in n.
#include <stdexcept>

#include "ddplab/core/error.hpp"
#include "ddplab/strategies/schedule.hpp"

namespace ddplab {

Schedule ring_allreduce(int n, std::size_t count) {
  if (n < 1) throw InputError("ring_allreduce: world size must be >= 1");
  Schedule s{
      "ring", Collective::Allreduce, n, count, std::vector<std::vector<ScheduleStep>>(static_cast<std::size_t>(n)), {}};
  auto mod = [n](int x) { return ((x % n) + n) % n; };
  for (int r = 0; r < n; ++r) {
    auto& steps = s.ranks[static_cast<std::size_t>(r)];
    const int next = mod(r + 1), prev = mod(r - 1);
    // Reduce-scatter: after step k, rank r holds the partial sum of chunk r-k-1 over k+2 ranks;
    // at the end rank r owns the full sum of chunk r+1.
    for (int k = 0; k < n - 1; ++k)
      steps.push_back(
          {{{next, chunk_of(count, n, mod(r - k))}}, {{prev, chunk_of(count, n, mod(r - k - 1)), RecvMode::Reduce}}});
    // All-gather: pass the finished chunks around the ring.
    for (int k = 0; k < n - 1; ++k)
      steps.push_back(
          {{{next, chunk_of(count, n, mod(r + 1 - k))}}, {{prev, chunk_of(count, n, mod(r - k)), RecvMode::Copy}}});
  }
  return s;
}

}  // namespace ddplab
