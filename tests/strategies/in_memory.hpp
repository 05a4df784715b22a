// Test harness shared by the schedule tests: executes a Schedule on n in-memory buffers, with the
// transport's semantics (a step's messages carry the senders' data as it was before the step), and
// checks that every receive has exactly one matching send of the same size in the same step.
#pragma once
#include <gtest/gtest.h>

#include <vector>

#include "ddplab/strategies/schedule.hpp"

namespace ddplab {

inline void run_in_memory(const Schedule& s, std::vector<std::vector<double>>& bufs) {
  ASSERT_EQ(s.ranks.size(), bufs.size());
  std::size_t steps = 0;
  for (const auto& r : s.ranks) steps = std::max(steps, r.size());
  // Ranks may have different step counts: step k of a rank pairs with step k of its peer only when
  // both use the same step numbering, which every schedule here guarantees by padding with empty steps.
  for (const auto& r : s.ranks) ASSERT_EQ(r.size(), steps) << "schedule " << s.name << ": ranks differ in step count";
  for (std::size_t k = 0; k < steps; ++k) {
    const auto snapshot = bufs;
    for (std::size_t r = 0; r < bufs.size(); ++r) {
      for (const RecvOp& rv : s.ranks[r][k].recvs) {
        int matches = 0;
        for (const SendOp& sd : s.ranks[static_cast<std::size_t>(rv.peer)][k].sends) {
          if (sd.peer != static_cast<int>(r)) continue;
          ++matches;
          ASSERT_EQ(sd.chunk.count, rv.chunk.count) << s.name << " step " << k << ": " << rv.peer << "->" << r;
          for (std::size_t i = 0; i < rv.chunk.count; ++i) {
            double& dst = bufs[r][rv.chunk.offset + i];
            const double v = snapshot[static_cast<std::size_t>(rv.peer)][sd.chunk.offset + i];
            dst = rv.mode == RecvMode::Reduce ? dst + v : v;
          }
        }
        ASSERT_EQ(matches, 1) << s.name << " step " << k << ": rank " << r << " receives from " << rv.peer;
      }
      // Every send has a receiver.
      for (const SendOp& sd : s.ranks[r][k].sends) {
        int matches = 0;
        for (const RecvOp& rv : s.ranks[static_cast<std::size_t>(sd.peer)][k].recvs)
          matches += rv.peer == static_cast<int>(r);
        ASSERT_EQ(matches, 1) << s.name << " step " << k << ": rank " << r << " sends to " << sd.peer;
      }
    }
  }
}

}  // namespace ddplab
