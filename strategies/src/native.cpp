// What a backend's own collective ("native") does, as one of strategies/' schedules, so that the simulator
// replays it as it runs instead of as a ring.
//
// Open MPI 4.1 (Debian 12's 4.1.4; the rules are the same in every 4.1.x and in 5.0): coll/tuned's fixed
// decision for MPI_Allreduce with a commutative op, by communicator size p and whole-buffer bytes
// (ompi/mca/coll/tuned/coll_tuned_decision_fixed.c, ompi_coll_tuned_allreduce_intra_dec_fixed; checked on
// this machine by fingerprinting each algorithm's reductions). Its algorithms map onto ours: ring (4, and 5,
// "segmented ring", which runs as a plain ring with the segment size 0 the fixed rules pass), recursive
// doubling (3), Rabenseifner (6, halving_doubling here). Reduce-then-broadcast (2, large p and small
// buffers) has no schedule here and replays as recursive doubling, which has the same log p whole-buffer
// latency. Open MPI's ring falls back to recursive doubling when count < p.
#include <cstddef>
#include <string>

#include "ddplab/strategies/schedule.hpp"

namespace ddplab {
namespace {

// Open MPI's algorithm number for the allreduce of `bytes` over p ranks.
int open_mpi_allreduce_algorithm(int p, std::size_t b) {
  if (p < 4) {
    if (b < 8) return 4;
    if (b < 4096) return 3;
    if (b < 8192) return 4;
    if (b < 16384) return 3;
    if (b < 65536) return 4;
    if (b < 262144) return 5;
    return 6;
  }
  if (p < 8) return b < 16 ? 4 : b < 8192 ? 3 : 6;
  if (p < 16) return b < 8192 ? 3 : 6;
  if (p < 32) return b < 64 ? 5 : b < 4096 ? 3 : 6;
  if (p < 64) return b < 128 ? 5 : 6;
  if (p < 128) return b < 262144 ? 3 : 6;
  if (p < 256) return b < 131072 ? 2 : b < 262144 ? 3 : 6;
  if (p < 512) return b < 4096 ? 2 : 6;
  if (p < 2048) return b < 2048 ? 2 : b < 16384 ? 3 : 6;
  if (p < 4096) return b < 2048 ? 2 : b < 4096 ? 5 : b < 16384 ? 3 : 6;
  return b < 2048 ? 2 : b < 16384 ? 5 : b < 32768 ? 3 : 6;
}

}  // namespace

std::string native_schedule(Transport transport, Collective collective, int world_size, std::size_t count,
                            std::size_t elem_bytes) {
  if (transport != Transport::Mpi || collective != Collective::Allreduce) return "ring";
  switch (open_mpi_allreduce_algorithm(world_size, count * elem_bytes)) {
    case 4:
    case 5:
      return count < static_cast<std::size_t>(world_size) ? "recursive_doubling" : "ring";
    case 6:
      return "halving_doubling";
    default:
      return "recursive_doubling";  // 3, and 2 (reduce then broadcast) as the nearest
  }
}

}  // namespace ddplab
