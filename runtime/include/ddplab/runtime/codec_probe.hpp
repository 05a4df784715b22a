// What `ddplab calibrate` measures of the codecs' local work (codec.hpp LocalWork): every kind a codec
// announces, timed on the backend's CodecCompute (Ops::codec_compute: the host loops on the CPU, the CUDA
// kernels on a device) at a few sizes, so that the simulator charges top-k, casts, scatter-adds and
// PowerSGD's products and orthogonalisation at what they cost here rather than at the GEMM rate.
#pragma once
#include <vector>

#include "ddplab/runtime/communicator.hpp"
#include "ddplab/runtime/ops.hpp"
#include "ddplab/strategies/codec.hpp"

namespace ddplab {

struct CodecWorkTiming {
  LocalWork work;
  double seconds = 0;  // the median of reps, averaged over the communicator's ranks
};

// The works timed: each kind at three sizes (elements up to max_elements; products and orthogonalisation
// at low-rank shapes of 256 to 2048 rows and ranks 1 to 8), casts in F16 and BF16, top-k at ratios 0.1 and 0.01.
std::vector<LocalWork> codec_probe_works(std::size_t max_elements);

// Every rank runs every work at once (loading the machine as training does), `reps` times after 2
// warm-ups; device backends are timed with their events, host ones by the clock. Collective.
std::vector<CodecWorkTiming> measure_codec_work(Communicator& comm, Ops& ops, int reps,
                                                std::size_t max_elements = 1u << 21);

}  // namespace ddplab
