// Checks shared by the schedule tests: the structural rules of schedule.hpp, the allreduce result against a
// reference sum (with the in-memory harness), and bit-identity across ranks in float with random values,
// which catches schedules that form the same element's sum in different orders on different ranks.
#pragma once
#include <gtest/gtest.h>

#include <cstring>
#include <random>
#include <set>
#include <utility>
#include <vector>

#include "ddplab/strategies/schedule.hpp"
#include "in_memory.hpp"

namespace ddplab::test {

// The rules of schedule.hpp, plus: peers valid and not self, chunks inside the buffer, and no receive
// range that a Copy receive of the same step also writes (its result would depend on the apply order).
inline void check_rules(const Schedule& s) {
  ASSERT_EQ(s.ranks.size(), static_cast<std::size_t>(s.world_size)) << s.name;
  for (const auto& steps : s.ranks) ASSERT_EQ(steps.size(), s.ranks[0].size()) << s.name << ": step counts differ";
  for (int r = 0; r < s.world_size; ++r)
    for (std::size_t k = 0; k < s.ranks[static_cast<std::size_t>(r)].size(); ++k) {
      const ScheduleStep& st = s.ranks[static_cast<std::size_t>(r)][k];
      std::set<int> to, from;
      for (const SendOp& snd : st.sends) {
        EXPECT_TRUE(snd.peer >= 0 && snd.peer < s.world_size && snd.peer != r)
            << s.name << " rank " << r << " step " << k;
        EXPECT_TRUE(to.insert(snd.peer).second)
            << s.name << ": two sends " << r << "->" << snd.peer << " in step " << k;
        EXPECT_LE(snd.chunk.offset + snd.chunk.count, s.count) << s.name;
      }
      for (const RecvOp& rv : st.recvs) {
        EXPECT_TRUE(rv.peer >= 0 && rv.peer < s.world_size && rv.peer != r) << s.name << " rank " << r << " step " << k;
        EXPECT_TRUE(from.insert(rv.peer).second)
            << s.name << ": two recvs " << rv.peer << "->" << r << " in step " << k;
        EXPECT_LE(rv.chunk.offset + rv.chunk.count, s.count) << s.name;
      }
      for (std::size_t a = 0; a < st.recvs.size(); ++a)
        for (std::size_t b = a + 1; b < st.recvs.size(); ++b) {
          const Chunk &x = st.recvs[a].chunk, &y = st.recvs[b].chunk;
          const bool overlap = x.offset < y.offset + y.count && y.offset < x.offset + x.count;
          const bool copy = st.recvs[a].mode == RecvMode::Copy || st.recvs[b].mode == RecvMode::Copy;
          EXPECT_FALSE(overlap && copy) << s.name << " rank " << r << " step " << k
                                        << ": a copy overlaps another receive";
        }
    }
}

// The executors' semantics for any element type: a step's messages carry the senders' data from before
// the step; each rank applies its receives in the order listed once the step completes.
template <class T>
void run_typed(const Schedule& s, std::vector<std::vector<T>>& bufs) {
  const std::size_t steps = s.ranks.empty() ? 0 : s.ranks[0].size();
  for (std::size_t k = 0; k < steps; ++k) {
    const auto before = bufs;
    for (std::size_t r = 0; r < bufs.size(); ++r)
      for (const RecvOp& rv : s.ranks[r][k].recvs) {
        const auto& src = before[static_cast<std::size_t>(rv.peer)];
        for (std::size_t i = rv.chunk.offset; i < rv.chunk.offset + rv.chunk.count; ++i)
          bufs[r][i] = rv.mode == RecvMode::Reduce ? bufs[r][i] + src[i] : src[i];
      }
  }
}

// Integer-valued doubles (exact in any order) through the shared harness, which also checks matching.
inline void check_allreduce_sum(const Schedule& s) {
  SCOPED_TRACE(s.name + " n=" + std::to_string(s.world_size) + " count=" + std::to_string(s.count));
  check_rules(s);
  const auto n = static_cast<std::size_t>(s.world_size);
  std::vector<std::vector<double>> bufs(n, std::vector<double>(s.count));
  std::vector<double> ref(s.count, 0.0);
  for (std::size_t r = 0; r < n; ++r)
    for (std::size_t i = 0; i < s.count; ++i) ref[i] += bufs[r][i] = static_cast<double>((r + 1) * 1000 + i % 251);
  run_in_memory(s, bufs);
  for (std::size_t r = 0; r < n; ++r) EXPECT_EQ(bufs[r], ref) << "rank " << r;
}

// Random floats: every rank must end with the same bits, and close to the exact sum.
inline void check_bit_identical(const Schedule& s, unsigned seed = 1) {
  SCOPED_TRACE(s.name + " n=" + std::to_string(s.world_size) + " count=" + std::to_string(s.count));
  const auto n = static_cast<std::size_t>(s.world_size);
  std::mt19937 rng(seed);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::vector<std::vector<float>> bufs(n, std::vector<float>(s.count));
  std::vector<double> ref(s.count, 0.0);
  for (std::size_t r = 0; r < n; ++r)
    for (std::size_t i = 0; i < s.count; ++i) ref[i] += bufs[r][i] = dist(rng);
  run_typed(s, bufs);
  for (std::size_t r = 1; r < n; ++r)
    EXPECT_EQ(0, std::memcmp(bufs[r].data(), bufs[0].data(), s.count * sizeof(float)))
        << "rank " << r << " differs from rank 0";
  for (std::size_t i = 0; i < s.count; ++i)
    ASSERT_NEAR(bufs[0][i], ref[i], 1e-5 * static_cast<double>(n)) << "element " << i;
}

// Counts that exercise the chunking: empty, fewer elements than ranks, just around n, primes, larger.
inline std::vector<std::size_t> counts_for(int n) {
  const auto u = static_cast<std::size_t>(n);
  return {0, 1, u - 1 > 0 ? u - 1 : 2, u + 1, 2 * u + 3, 13, 97, 1000};
}

// Sum of bytes every rank sends, the most any rank sends, and the step count.
struct Traffic {
  std::size_t total = 0, max_rank = 0, steps = 0;
};
inline Traffic traffic(const Schedule& s, std::size_t elem_bytes = 4) {
  Traffic t;
  t.steps = s.ranks.empty() ? 0 : s.ranks[0].size();
  for (int r = 0; r < s.world_size; ++r) {
    const std::size_t b = s.bytes_sent(r, elem_bytes);
    t.total += b;
    t.max_rank = std::max(t.max_rank, b);
  }
  return t;
}

}  // namespace ddplab::test
