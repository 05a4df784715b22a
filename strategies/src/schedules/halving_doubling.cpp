// Rabenseifner's allreduce (Thakur, Rabenseifner & Gropp 2005): a reduce-scatter by recursive vector
// halving with distance doubling, then an all-gather by vector doubling with distance halving, over the
// largest power of two p <= n ranks. Bandwidth-optimal (2(p-1)/p of the buffer per rank) in 2 log2 p steps.
// Non-powers of two: with r = n - p, the first 2r ranks pair up; each even one folds its whole buffer into
// its odd partner before (one step) and gets the result back after (one step).
#include <utility>

#include "builder.hpp"

namespace ddplab {

Schedule halving_doubling_allreduce(int n, std::size_t count) {
  sched::Builder b("halving_doubling", Collective::Allreduce, n, count);
  const sched::PowerOfTwoCore core(n);
  const int p = core.p, levels = core.levels;
  // Ranks taking part in the power-of-two phase, by their index ("new rank") in it.
  auto real = [&core](int nr) { return core.real(nr); };
  const Chunk all{0, count};
  int k = core.fold_in(b, 0, all);

  // The buffer is cut into p blocks; kept[nr][s] is the window of blocks [lo, hi) that new rank nr is
  // responsible for after reduce-scatter step s. Each step halves it: the rank whose bit s is clear keeps
  // the lower half and sends the upper half to its partner nr ^ 2^s, which keeps the upper half.
  const std::vector<Chunk> blocks = sched::split(all, p);
  auto range = [&](std::pair<int, int> w) {
    return sched::span(blocks[static_cast<std::size_t>(w.first)], blocks[static_cast<std::size_t>(w.second - 1)]);
  };
  std::vector<std::vector<std::pair<int, int>>> kept(static_cast<std::size_t>(p));
  for (int nr = 0; nr < p; ++nr) {
    std::pair<int, int> w{0, p};
    for (int s = 0; s < levels; ++s) {
      const int mid = (w.first + w.second) / 2;
      const bool low = (nr & (1 << s)) == 0;
      const std::pair<int, int> give = low ? std::pair{mid, w.second} : std::pair{w.first, mid};
      b.move(k + s, real(nr), real(nr ^ (1 << s)), range(give), RecvMode::Reduce);
      w = low ? std::pair{w.first, mid} : std::pair{mid, w.second};
      kept[static_cast<std::size_t>(nr)].push_back(w);
    }
  }
  k += levels;
  // All-gather: undo the steps in reverse; at step s each rank copies its window to the partner, which is
  // exactly the half that partner gave away, so windows double back to the whole buffer. Each block's sum
  // was formed on one rank only and is copied from there, so all ranks end bit-identical.
  for (int s = levels - 1; s >= 0; --s, ++k)
    for (int nr = 0; nr < p; ++nr)
      b.move(k, real(nr), real(nr ^ (1 << s)), range(kept[static_cast<std::size_t>(nr)][static_cast<std::size_t>(s)]),
             RecvMode::Copy);

  k = core.fold_out(b, k, all);
  b.use_rounds(k);
  return b.finish();
}

}  // namespace ddplab
