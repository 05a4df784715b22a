// Hierarchical allreduce (as in Horovod's hierarchical allreduce and NCCL's tree/ring split by node):
// with L ranks per node (consecutive ranks share a node), 1) a ring reduce-scatter inside each node over
// L chunks, 2) a ring allreduce across nodes among the ranks that own the same chunk, 3) a ring all-gather
// inside each node. Only 2(N-1)/N of one chunk (S/L) per rank crosses the node boundary.
// The last node may hold m < L ranks: its local rank j then owns the contiguous run of chunks
// chunk_of(L, m, j) and joins the cross-node ring of each of them (with distinct peers, so these rings
// still run side by side).
#include <algorithm>
#include <stdexcept>

#include "builder.hpp"
#include "ddplab/core/error.hpp"

namespace ddplab {

Schedule hierarchical_allreduce(int n, std::size_t count, int ranks_per_node) {
  if (ranks_per_node < 1) throw InputError("hierarchical allreduce: ranks per node must be >= 1");
  sched::Builder b("hierarchical", Collective::Allreduce, n, count);
  const int L = std::min(ranks_per_node, n);
  const int nodes = (n + L - 1) / L;
  const std::vector<Chunk> chunks = sched::split({0, count}, L);

  // Per node: its ranks, and for each local rank the contiguous region (run of chunks) it owns.
  struct Node {
    std::vector<int> ranks;
    std::vector<Chunk> regions;
    std::vector<int> owner;  // owner[c] = the local rank owning chunk c
  };
  std::vector<Node> node(static_cast<std::size_t>(nodes));
  for (int i = 0; i < nodes; ++i) {
    Node& nd = node[static_cast<std::size_t>(i)];
    for (int r = i * L; r < std::min(n, (i + 1) * L); ++r) nd.ranks.push_back(r);
    const int m = static_cast<int>(nd.ranks.size());
    for (int j = 0; j < m; ++j) {
      const Chunk run = chunk_of(static_cast<std::size_t>(L), m, j);  // chunk indices [offset, offset+count)
      nd.regions.push_back(sched::span(chunks[run.offset], chunks[run.offset + run.count - 1]));
      for (std::size_t c = run.offset; c < run.offset + run.count; ++c) nd.owner.push_back(j);
    }
  }

  // 1) Intra-node reduce-scatter: local rank j ends with its node's sum of its region.
  for (const Node& nd : node) sched::group_ring_reduce_scatter(b, nd.ranks, nd.regions, 0);
  int k = L - 1;
  // 2) Cross-node ring allreduce of each chunk among its owners, one per node. Each sub-chunk's total is
  // formed once (ring reduce-scatter) and then only copied, so all ranks end bit-identical.
  if (nodes > 1) {
    for (int c = 0; c < L; ++c) {
      std::vector<int> group;
      for (const Node& nd : node)
        group.push_back(nd.ranks[static_cast<std::size_t>(nd.owner[static_cast<std::size_t>(c)])]);
      const std::vector<Chunk> parts = sched::split(chunks[static_cast<std::size_t>(c)], nodes);
      sched::group_ring_reduce_scatter(b, group, parts, k);
      sched::group_ring_all_gather(b, group, parts, k + nodes - 1);
    }
    k += 2 * (nodes - 1);
  }
  // 3) Intra-node all-gather of the finished regions.
  for (const Node& nd : node) sched::group_ring_all_gather(b, nd.ranks, nd.regions, k);
  b.use_rounds(k + L - 1);
  return b.finish();
}

}  // namespace ddplab
