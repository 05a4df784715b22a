// Double binary tree allreduce, as NCCL 2.4 uses it (after Sanders, Speck & Traeff 2009, "Two-tree
// algorithms for full bandwidth broadcast, reduction and scan"): two binary trees over the ranks, each
// reducing half of the buffer up to its root and broadcasting it back down, pipelined in chunks. The trees
// are complementary: the leaves of one (half the ranks) are the interior nodes of the other, so every rank
// sends about the full buffer S in total (S/2 up its one tree, S/2 to each of two children in the other)
// and latency grows with log2 n instead of n.
#include <algorithm>
#include <tuple>

#include "builder.hpp"

namespace ddplab {

namespace {

// An in-order binary tree over positions 0..n-1: position x > 0 with lowest set bit b has children
// x - b/2 and x + b/2 (the right one lowered to x + b/4, ... when past the end); position 0 is the root and
// has one child, the largest power of two below n. Odd positions are the leaves.
std::vector<std::vector<int>> tree_children(int n) {
  std::vector<std::vector<int>> kids(static_cast<std::size_t>(n));
  if (n < 2) return kids;
  int top = 1;
  while (top * 2 < n) top *= 2;
  kids[0].push_back(top);
  for (int x = 1; x < n; ++x) {
    const int low = x & -x;
    if (low < 2) continue;
    kids[static_cast<std::size_t>(x)].push_back(x - low / 2);
    int c = low / 2;
    while (c >= 1 && x + c >= n) c /= 2;
    if (c >= 1) kids[static_cast<std::size_t>(x)].push_back(x + c);
  }
  return kids;
}

struct Transfer {
  int from = 0, to = 0;
  Chunk chunk;
  RecvMode mode = RecvMode::Reduce;
  int q = 0;  // pipeline chunk
  std::vector<int> dependents;
  int waiting = 0;  // dependencies not yet scheduled
  int ready = 0;    // earliest round once they are
};

// Default pipeline depth: one chunk per 32Ki elements of a half (128 KiB of float), between 1 and 8.
int auto_pipeline(std::size_t half) { return static_cast<int>(std::clamp<std::size_t>((half + 32767) / 32768, 1, 8)); }

}  // namespace

Schedule double_binary_tree_allreduce(int n, std::size_t count, int pipeline_chunks) {
  sched::Builder b("double_binary_tree", Collective::Allreduce, n, count);
  if (n == 1) return b.finish();
  const auto kids = tree_children(n);
  // Tree 0 places rank = position; tree 1 mirrors it (n even) or shifts it by one (n odd), which turns
  // the odd-position leaves of tree 0 into interior nodes.
  auto rank_of = [n](int tree, int pos) { return tree == 0 ? pos : (n % 2 == 0 ? n - 1 - pos : (pos + 1) % n); };
  const int P = pipeline_chunks > 0 ? pipeline_chunks : auto_pipeline(chunk_of(count, 2, 0).count);

  // Pre-order of the tree (parents before children); reversed, it puts children before parents.
  std::vector<int> parent(static_cast<std::size_t>(n), -1), order{0};
  for (std::size_t i = 0; i < order.size(); ++i)
    for (int c : kids[static_cast<std::size_t>(order[i])]) {
      parent[static_cast<std::size_t>(c)] = order[i];
      order.push_back(c);
    }

  // Every transfer with its dependencies: a node sends chunk q up once its children's chunk q has arrived,
  // the root sends it down once all its children's have, and a node forwards it down once it has it.
  std::vector<Transfer> xs;
  auto add = [&xs](int from, int to, Chunk c, RecvMode mode, int q, const std::vector<int>& deps) {
    const int id = static_cast<int>(xs.size());
    Transfer t;
    t.from = from, t.to = to, t.chunk = c, t.mode = mode, t.q = q;
    t.waiting = static_cast<int>(deps.size());
    xs.push_back(std::move(t));
    for (int d : deps) xs[static_cast<std::size_t>(d)].dependents.push_back(id);
    return id;
  };
  for (int tree = 0; tree < 2; ++tree)
    for (int q = 0; q < P; ++q) {
      const Chunk part = sched::sub_chunk(chunk_of(count, 2, tree), P, q);
      if (part.count == 0) continue;
      std::vector<int> up(static_cast<std::size_t>(n), -1), down(static_cast<std::size_t>(n), -1);
      auto ups_into = [&](int pos) {
        std::vector<int> deps;
        for (int c : kids[static_cast<std::size_t>(pos)]) deps.push_back(up[static_cast<std::size_t>(c)]);
        return deps;
      };
      for (auto it = order.rbegin(); it != order.rend(); ++it)
        if (*it != 0)
          up[static_cast<std::size_t>(*it)] =
              add(rank_of(tree, *it), rank_of(tree, parent[static_cast<std::size_t>(*it)]), part, RecvMode::Reduce, q,
                  ups_into(*it));
      for (int pos : order) {
        if (pos == 0) continue;
        const int pp = parent[static_cast<std::size_t>(pos)];
        down[static_cast<std::size_t>(pos)] =
            add(rank_of(tree, pp), rank_of(tree, pos), part, RecvMode::Copy, q,
                pp == 0 ? ups_into(0) : std::vector<int>{down[static_cast<std::size_t>(pp)]});
      }
    }

  // List scheduling, round by round: a transfer goes in the first round after its dependencies in which
  // its (sender, receiver) pair is still free (one send per pair per step); among those competing, the
  // one waiting longest, then the earlier pipeline chunk, goes first.
  std::vector<int> pending;
  for (int i = 0; i < static_cast<int>(xs.size()); ++i)
    if (xs[static_cast<std::size_t>(i)].waiting == 0) pending.push_back(i);
  std::size_t placed = 0;
  for (int round = 0; placed < xs.size(); ++round) {
    std::sort(pending.begin(), pending.end(), [&xs](int a, int c) {
      const Transfer &x = xs[static_cast<std::size_t>(a)], &y = xs[static_cast<std::size_t>(c)];
      return std::tie(x.ready, x.q, x.mode, a) < std::tie(y.ready, y.q, y.mode, c);
    });
    std::vector<int> still, unlocked;
    for (int id : pending) {
      Transfer& t = xs[static_cast<std::size_t>(id)];
      if (t.ready > round || b.sends_to(round, t.from, t.to)) {
        still.push_back(id);
        continue;
      }
      b.move(round, t.from, t.to, t.chunk, t.mode);
      ++placed;
      for (int d : t.dependents) {
        Transfer& u = xs[static_cast<std::size_t>(d)];
        u.ready = std::max(u.ready, round + 1);
        if (--u.waiting == 0) unlocked.push_back(d);
      }
    }
    pending = std::move(still);
    pending.insert(pending.end(), unlocked.begin(), unlocked.end());
  }
  return b.finish();
}

}  // namespace ddplab
