// A collective's bandwidths, written once for the runtime's bench, the simulator's, imported nccl-tests
// logs and validate, as nccl-tests defines them (n ranks, each reducing a buffer of `bytes`):
//   algbw = bytes / time
//   busbw = algbw x factor: allreduce 2(n-1)/n, reduce-scatter and all-gather (n-1)/n
// busbw is the bandwidth each link needs, to compare with the link's peak.
#pragma once
#include <stdexcept>
#include <string>

#include "ddplab/core/error.hpp"
#include "ddplab/core/store.hpp"

namespace ddplab {

inline double bus_factor(Collective collective, int n) {
  if (n < 1) throw InputError("world size must be >= 1");
  const double f = static_cast<double>(n - 1) / n;
  if (collective == Collective::Allreduce) return 2 * f;
  if (collective == Collective::ReduceScatter || collective == Collective::AllGather) return f;
  throw InputError("no bus bandwidth factor for collective \"" + to_string(collective) + "\"");
}

// Sets a row's time_us, algbw_gbs and busbw_gbs (GB/s = 10^9 bytes/s) from its bytes and a time in seconds.
inline void set_bandwidths(CollectiveBenchRow& row, double time_s, int n) {
  row.time_us = time_s * 1e6;
  row.algbw_gbs = time_s > 0 ? static_cast<double>(row.bytes) / time_s / 1e9 : 0.0;
  row.busbw_gbs = row.algbw_gbs * bus_factor(row.collective, n);
}

}  // namespace ddplab
