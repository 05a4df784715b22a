// The steady state `ddplab validate` compares: whole blocks of the step pattern, medians per rank.
#include <gtest/gtest.h>

#include <stdexcept>

#include "ddplab/core/error.hpp"
#include "ddplab/simulator/steady_state.hpp"

namespace ddplab {
namespace {

StepMetrics row(std::int64_t step, int rank, double step_s, double comm_s) {
  StepMetrics m;
  m.step = step, m.rank = rank, m.step_s = step_s, m.comm_s = comm_s, m.compute_s = 0.01;
  return m;
}

TEST(SteadyState, MediansOfWholeBlocksPerRank) {
  StepPattern p;
  p.segments = {{0, 1, 1, "set-up"}, {1, 2, 0, "blocks of 2"}};
  std::vector<StepMetrics> rows;
  // Rank 0: blocks (1,2) = 0.3, (3,4) = 0.5, (5,6) = 0.4; rank 1: 0.2, 0.2, 9.0 (one preempted block).
  const double r0[] = {5, 0.1, 0.2, 0.2, 0.3, 0.1, 0.3}, r1[] = {5, 0.1, 0.1, 0.1, 0.1, 4.5, 4.5};
  for (int s = 0; s < 7; ++s) {
    rows.push_back(row(s, 0, r0[s], s % 2 ? 0.0 : 0.02));
    rows.push_back(row(s, 1, r1[s], s % 2 ? 0.0 : 0.04));
  }
  const SteadyState st = steady_state(rows, p, 0);
  EXPECT_EQ(st.first, 1);
  EXPECT_EQ(st.blocks, 3);
  EXPECT_EQ(st.period, 2);
  EXPECT_EQ(st.run_steps, 7);
  // Slowest rank's median block over 2 micro-steps: rank 0's 0.4 (rank 1's median is 0.2).
  EXPECT_NEAR(st.step_s, 0.4 / 2, 1e-12);
  // Comm: each block holds one communicating step, 0.02 on rank 0 and 0.04 on rank 1.
  EXPECT_NEAR(st.comm_s, (0.02 + 0.04) / 2 / 2, 1e-12);
  EXPECT_NEAR(st.compute_s, 0.01, 1e-12);
  EXPECT_EQ(st.describe(), "3 blocks of 2 micro-steps from step 1 of 7");

  // --warmup 2 moves to the next boundary (step 3): blocks (3,4) and (5,6).
  const SteadyState later = steady_state(rows, p, 2);
  EXPECT_EQ(later.first, 3);
  EXPECT_EQ(later.blocks, 2);
  // A --warmup past every block is dropped rather than leaving nothing to compare.
  EXPECT_EQ(steady_state(rows, p, 100).first, 1);
  // Fewer steps than the warm-up and one block: an error that says so.
  rows.resize(4);
  try {
    steady_state(rows, p, 0);
    FAIL() << "expected an error";
  } catch (const ddplab::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("the run has 2 steps"), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ddplab
