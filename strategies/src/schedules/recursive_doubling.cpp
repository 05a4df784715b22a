// Recursive doubling allreduce: in step s every rank exchanges its whole buffer with the rank 2^s away and
// both add, so after log2 p steps every rank of the largest power of two p <= n holds the sum. log2 p
// messages of the whole buffer per rank: latency-optimal, bandwidth log2 p times the ring's, which is why
// Open MPI picks it for small buffers only (4.1's fixed rules: below 8 KiB on 4 to 15 ranks; `native`'s
// model in native.cpp). Non-powers of two fold as halving-doubling does: with r = n - p, even rank 2i sends
// its buffer to 2i + 1 first and gets the sum back last.
#include "builder.hpp"

namespace ddplab {

Schedule recursive_doubling_allreduce(int n, std::size_t count) {
  sched::Builder b("recursive_doubling", Collective::Allreduce, n, count);
  const sched::PowerOfTwoCore core(n);
  const Chunk all{0, count};
  int k = core.fold_in(b, 0, all);
  // Both partners add the other's buffer as it was at the step's start: a + b on one, b + a on the other,
  // the same bits (one commutative addition per element), so every rank ends bit-identical.
  for (int s = 0; s < core.levels; ++s, ++k)
    for (int nr = 0; nr < core.p; ++nr) b.move(k, core.real(nr), core.real(nr ^ (1 << s)), all, RecvMode::Reduce);
  k = core.fold_out(b, k, all);
  b.use_rounds(k);
  return b.finish();
}

}  // namespace ddplab
