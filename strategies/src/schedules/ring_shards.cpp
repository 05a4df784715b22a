// Standalone ring reduce-scatter and all-gather (ZeRO-1 shards): rank r owns chunk_of(count, n, r).
// Each sends (n-1)/n of the buffer in n-1 steps, the bandwidth optimum for these collectives.
#include "builder.hpp"

namespace ddplab {

namespace {
std::vector<int> all_ranks(int n) {
  std::vector<int> g;
  for (int r = 0; r < n; ++r) g.push_back(r);
  return g;
}
}  // namespace

// After it rank r holds the full sum of its shard; the rest of its buffer is left partially reduced.
Schedule ring_reduce_scatter(int n, std::size_t count) {
  sched::Builder b("ring", Collective::ReduceScatter, n, count);
  sched::group_ring_reduce_scatter(b, all_ranks(n), sched::split({0, count}, n), 0);
  return b.finish();
}

// Rank r starts with its shard valid; afterwards every rank holds every shard (copies only).
Schedule ring_all_gather(int n, std::size_t count) {
  sched::Builder b("ring", Collective::AllGather, n, count);
  sched::group_ring_all_gather(b, all_ranks(n), sched::split({0, count}, n), 0);
  return b.finish();
}

}  // namespace ddplab
