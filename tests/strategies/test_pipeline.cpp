// Pipeline schedules (pipeline.hpp): every registered schedule runs each pass of each microbatch once per
// stage and does not deadlock; its step time, from the passes' dependencies alone, is the published one;
// and what a stage holds in flight is what the memory references count. References: with equal stages, a
// forward of tf and a backward of tb per stage, GPipe and 1F1B take (M + P - 1)(tf + tb) (Narayanan et al.
// 2021, section 2.2.1: bubble (P - 1)(tf + tb)); interleaving v chunks of tf/v and tb/v takes
// (M + (P - 1)/v)(tf + tb) (section 2.2.2). 1F1B's stage s holds min(P - s, M) microbatches (Korthikanti et
// al. 2022, section 4.2.3); interleaved stage 0 holds 1 + (P - 1)/(P v) times the layers of a whole stage.
#include <gtest/gtest.h>

#include <set>
#include <tuple>

#include "ddplab/strategies/pipeline.hpp"

namespace ddplab {
namespace {

const PipelineInfo& schedule(const std::string& name) {
  const PipelineInfo* p = find_pipeline_schedule(name);
  if (!p) throw std::runtime_error("no pipeline schedule " + name);
  return *p;
}

std::vector<PipelineShape> shapes(const PipelineInfo& info) {
  std::vector<PipelineShape> out;
  for (int P : {1, 2, 4, 8})
    for (int mult : {1, 2, 3})
      for (int v : info.interleaved ? std::vector<int>{2, 3} : std::vector<int>{1}) {
        if (info.interleaved && P < 2) continue;
        out.push_back({P, P * mult, v});
      }
  if (!info.interleaved) out.push_back({4, 3, 1});  // fewer microbatches than stages
  return out;
}

TEST(Pipeline, EverySchedulePassesEachMicrobatchOnceForwardThenBackward) {
  for (const PipelineInfo& info : pipeline_schedules())
    for (const PipelineShape& sh : shapes(info))
      for (int s = 0; s < sh.stages; ++s) {
        SCOPED_TRACE(info.name + " P " + std::to_string(sh.stages) + " M " + std::to_string(sh.microbatches) + " v " +
                     std::to_string(sh.chunks) + " stage " + std::to_string(s));
        std::set<std::tuple<bool, int, int>> seen;
        for (const PipeOp& op : info.order(sh, s)) {
          EXPECT_TRUE(seen.insert({op.forward, op.microbatch, op.chunk}).second) << "a pass twice";
          if (!op.forward) {
            EXPECT_TRUE(seen.count({true, op.microbatch, op.chunk})) << "a backward before its forward";
          }
          EXPECT_GE(op.chunk, 0);
          EXPECT_LT(op.chunk, sh.chunks);
        }
        EXPECT_EQ(seen.size(), static_cast<std::size_t>(2 * sh.microbatches * sh.chunks));
      }
}

TEST(Pipeline, StepTimesAreThePublishedOnes) {
  const double tf = 1.0, tb = 2.0;
  for (const PipelineInfo& info : pipeline_schedules())
    for (const PipelineShape& sh : shapes(info)) {
      SCOPED_TRACE(info.name + " P " + std::to_string(sh.stages) + " M " + std::to_string(sh.microbatches) + " v " +
                   std::to_string(sh.chunks));
      const double P = sh.stages, M = sh.microbatches, v = sh.chunks;
      const double want = (M + (P - 1) / v) * (tf + tb);
      EXPECT_NEAR(pipeline_makespan(info, sh, tf / v, tb / v), want, 1e-9);
    }
}

TEST(Pipeline, InFlightMicrobatchesAreWhatTheMemoryReferencesCount) {
  for (int P : {2, 4, 8})
    for (int M : {P, 2 * P}) {
      for (int s = 0; s < P; ++s) {
        EXPECT_EQ(peak_in_flight(schedule("gpipe").order({P, M, 1}, s)), M);
        EXPECT_EQ(peak_in_flight(schedule("1f1b").order({P, M, 1}, s)), std::min(P - s, M))
            << "P " << P << " stage " << s;
      }
      if (M == P) continue;  // with M = P every forward runs first
      for (int v : {2, 3}) {
        // Chunk-microbatches in flight on stage 0, each of 1/(P v) of the layers: 1 + (P - 1)/(P v) stages' worth.
        const int chunks = peak_in_flight(schedule("interleaved").order({P, M, v}, 0));
        EXPECT_NEAR(chunks / static_cast<double>(P * v), 1.0 + (P - 1.0) / (P * v), 1e-12) << "P " << P << " v " << v;
      }
    }
}

TEST(Pipeline, OneFOneBStartsWithItsWarmUpAndAlternates) {
  // P = 4, M = 6, stage 1: two warm-up forwards, then F2 B0 F3 B1 F4 B2 F5 B3, then B4 B5.
  const std::vector<PipeOp> want = {{true, 0, 0}, {true, 1, 0},  {true, 2, 0},  {false, 0, 0},
                                    {true, 3, 0}, {false, 1, 0}, {true, 4, 0},  {false, 2, 0},
                                    {true, 5, 0}, {false, 3, 0}, {false, 4, 0}, {false, 5, 0}};
  EXPECT_EQ(schedule("1f1b").order({4, 6, 1}, 1), want);
}

}  // namespace
}  // namespace ddplab
