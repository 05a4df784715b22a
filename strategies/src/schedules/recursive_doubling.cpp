// Recursive doubling allreduce: in step s every rank exchanges its whole buffer with the rank 2^s away and
// both add, so after log2 p steps every rank of the largest power of two p <= n holds the sum. log2 p
// messages of the whole buffer per rank: latency-optimal, bandwidth log2 p times the ring's, which is why
// Open MPI picks it for small buffers only (4.1's fixed rules: below 8 KiB on 4 to 15 ranks; `native`'s
// model in native.cpp). Non-powers of two fold as halving-doubling does: with r = n - p, even rank 2i sends
// its buffer to 2i + 1 first and gets the sum back last.
#include "builder.hpp"

namespace ddplab {

Schedule recursive_doubling_allreduce(int n, std::size_t count) {
  sched::Builder b("recursive_doubling", "allreduce", n, count);
  int p = 1, levels = 0;
  while (p * 2 <= n) p *= 2, ++levels;
  const int extra = n - p;
  auto real = [extra](int nr) { return nr < extra ? 2 * nr + 1 : nr + extra; };
  const Chunk all{0, count};
  int k = 0;
  if (extra > 0) {
    for (int i = 0; i < extra; ++i) b.move(k, 2 * i, 2 * i + 1, all, RecvMode::Reduce);
    ++k;
  }
  // Both partners add the other's buffer as it was at the step's start: a + b on one, b + a on the other,
  // the same bits (one commutative addition per element), so every rank ends bit-identical.
  for (int s = 0; s < levels; ++s, ++k)
    for (int nr = 0; nr < p; ++nr) b.move(k, real(nr), real(nr ^ (1 << s)), all, RecvMode::Reduce);
  if (extra > 0) {
    for (int i = 0; i < extra; ++i) b.move(k, 2 * i + 1, 2 * i, all, RecvMode::Copy);
    ++k;
  }
  b.use_rounds(k);
  return b.finish();
}

}  // namespace ddplab
