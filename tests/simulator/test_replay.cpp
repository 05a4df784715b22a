// Schedule replay on the SimGrid star: analytic ring times, byte records, and child-process isolation.
#include <gtest/gtest.h>

#include <cstdlib>
#include <stdexcept>

#include "ddplab/core/error.hpp"
#include "ddplab/simulator/simulator.hpp"
#include "isolate.hpp"
#include "sim_test_util.hpp"

namespace ddplab {
namespace {

constexpr double kB = 10e9 / 8;  // bytes/s per link direction
constexpr double kL = 2e-6;      // s per link

ClusterConfig star() {
  ClusterConfig c;
  c.link_bandwidth = kB;
  c.link_latency = kL;
  return c;
}

using test::alpha_beta;

// Ring allreduce under alpha-beta: 2(n-1) steps, each moving the largest chunk over one host->switch->host
// route (latency 2L). Every rank waits for its whole step, so the largest chunk paces every step.
double ring_time(int n, std::size_t count, std::size_t elem_bytes) {
  const double chunk_bytes = static_cast<double>(chunk_of(count, n, 0).count * elem_bytes);
  return 2.0 * (n - 1) * (chunk_bytes / kB + 2 * kL);
}

TEST(SimulatorReplay, RingAllreduceMatchesAlphaBeta) {
  const std::size_t count = (64u << 20) / 4;  // 64 MiB of float32
  for (int n : {2, 3, 4, 5, 8, 16, 32, 64}) {
    const auto r = simulate_schedule(star(), ring_allreduce(n, count), 4, alpha_beta());
    const double expected = ring_time(n, count, 4);
    EXPECT_NEAR(r.step_s, expected, 0.02 * expected) << "n=" << n;
    EXPECT_DOUBLE_EQ(r.comm_s, r.step_s);
    EXPECT_EQ(r.world_size, n);
    EXPECT_EQ(r.schedule, "ring");
    EXPECT_EQ(r.comms, static_cast<std::uint64_t>(n) * 2 * (n - 1));
    EXPECT_GT(r.wall_s, 0.0);
  }
}

TEST(SimulatorReplay, BytesMatchTheSchedule) {
  const int n = 5;
  const std::size_t count = 1003, elem = 4;  // not divisible by 5: chunks of 201 and 200
  const Schedule s = ring_allreduce(n, count);
  const auto r = simulate_schedule(star(), s, elem, alpha_beta());
  ASSERT_EQ(r.bytes_sent.size(), static_cast<std::size_t>(n));
  std::map<std::pair<int, int>, std::uint64_t> expected;
  for (int rank = 0; rank < n; ++rank) {
    EXPECT_EQ(r.bytes_sent[static_cast<std::size_t>(rank)], s.bytes_sent(rank, elem)) << "rank " << rank;
    for (const auto& step : s.ranks[static_cast<std::size_t>(rank)])
      for (const auto& op : step.sends) expected[{rank, op.peer}] += op.chunk.count * elem;
  }
  EXPECT_EQ(r.bytes_between, expected);
  ASSERT_EQ(r.ranks.size(), static_cast<std::size_t>(n));
}

TEST(SimulatorReplay, EveryRegisteredScheduleReplays) {
  // Whatever the strategies register, the simulator runs it to completion and moves exactly its bytes.
  for (const auto& info : schedules()) {
    if (info.backend_own) continue;  // no Schedule: the backend runs it
    if (info.collective != Collective::Allreduce) continue;
    for (int n : {1, 2, 3, 5, 8}) {
      const Schedule s = make_schedule(info.name, n, 1001);
      const auto r = simulate_schedule(star(), s, 4, alpha_beta());
      for (int rank = 0; rank < n; ++rank)
        EXPECT_EQ(r.bytes_sent[static_cast<std::size_t>(rank)], s.bytes_sent(rank, 4)) << info.name << " n=" << n;
      if (n > 1) {
        EXPECT_GT(r.step_s, 0.0) << info.name << " n=" << n;
      }
    }
  }
}

// Open MPI over TCP (Calibration::tcp_rendezvous_bytes): the two directions of a pairwise exchange take
// turns from the threshold on. Halving-doubling on 4 ranks is all exchanges: each step twice as long. A
// ring of 4 never exchanges with one peer, and below the threshold nothing changes.
TEST(SimulatorReplay, ExchangesAboveTheThresholdTakeTurns) {
  const ClusterConfig c;
  SimOptions o = alpha_beta(), tcp = alpha_beta();
  tcp.serialize_exchanges_from = 64 * 1024;
  const std::size_t count = 4u << 20;  // 16 MiB: every message far above 64 KiB
  const auto hd = simulate_schedule(c, halving_doubling_allreduce(4, count), 4, o);
  const auto hd_tcp = simulate_schedule(c, halving_doubling_allreduce(4, count), 4, tcp);
  const double latencies = 4 * 2 * c.link_latency;  // 4 steps of one message each, two links per route
  EXPECT_NEAR(hd_tcp.step_s - latencies, 2 * (hd.step_s - latencies), 0.01 * hd.step_s);
  const auto ring = simulate_schedule(c, ring_allreduce(4, count), 4, o);
  EXPECT_DOUBLE_EQ(simulate_schedule(c, ring_allreduce(4, count), 4, tcp).step_s, ring.step_s);
  const auto small = simulate_schedule(c, halving_doubling_allreduce(4, 4096), 4, o);
  EXPECT_DOUBLE_EQ(simulate_schedule(c, halving_doubling_allreduce(4, 4096), 4, tcp).step_s, small.step_s);
}

TEST(SimulatorReplay, EmptyChunksAreStillMessages) {
  // 3 elements over 5 ranks: some chunks are empty, yet every step exchanges a message.
  const auto r = simulate_schedule(star(), ring_allreduce(5, 3), 4, alpha_beta());
  EXPECT_EQ(r.comms, 5u * 8u);
  EXPECT_GT(r.step_s, 8 * 2 * kL * 0.99);  // at least the latency of 8 steps
}

TEST(SimulatorReplay, DefaultModelIsSlowerThanAlphaBeta) {
  const auto schedule = ring_allreduce(8, (1u << 20) / 4);
  const auto ab = simulate_schedule(star(), schedule, 4, alpha_beta());
  const auto lv08 = simulate_schedule(star(), schedule, 4);  // LV08, cross-traffic on
  EXPECT_GT(lv08.step_s, ab.step_s);
}

TEST(SimulatorReplay, AutomaticTimePrecisionStaysWithinItsBound) {
  // Uneven chunks (count % n != 0) under the default model: merging events closer than 1% of a link latency
  // must keep the collective within 0.5% of SimGrid's 1 ns default.
  const auto schedule = ring_allreduce(7, 1000003);
  SimOptions fine;
  fine.time_precision_s = 1e-9;
  const auto exact = simulate_schedule(star(), schedule, 4, fine);
  const auto fast = simulate_schedule(star(), schedule, 4);
  EXPECT_NEAR(fast.step_s, exact.step_s, 0.005 * exact.step_s);
}

TEST(SimulatorReplay, RejectsBrokenInputs) {
  Schedule s = ring_allreduce(3, 30);
  s.ranks[0][0].recvs.clear();  // rank 0 never receives its first message: would deadlock
  EXPECT_THROW(simulate_schedule(star(), s, 4), ddplab::InternalError);

  ClusterConfig torus = star();
  torus.topology = "hypercube";  // not a known topology
  EXPECT_THROW(simulate_schedule(torus, ring_allreduce(2, 8), 4), ddplab::InputError);

  SimOptions bad;
  bad.network_model = "nope";
  EXPECT_THROW(simulate_schedule(star(), ring_allreduce(2, 8), 4, bad), ddplab::InputError);
}

TEST(SimulatorIsolation, ChildCrashNamesTheSimulation) {
  try {
    sim::run_in_child(
        "world size 7", []() -> nlohmann::json { std::abort(); }, false);
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("world size 7"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("crashed"), std::string::npos) << e.what();
  }
}

TEST(SimulatorIsolation, ChildExceptionIsReported) {
  try {
    sim::run_in_child(
        "world size 9", []() -> nlohmann::json { throw std::runtime_error("boom"); }, false);
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("world size 9 failed: boom"), std::string::npos) << e.what();
  }
}

TEST(SimulatorIsolation, ResultSurvivesTheRoundTrip) {
  SimStepResult r;
  r.world_size = 2;
  r.step_s = 0.1 + 1e-12;
  r.bytes_sent = {1, 2};
  r.bytes_between[{0, 1}] = 1;
  r.step = 1999;
  r.ranks = {{0.1, 0.2, 0.2, 0.3, 0.6, {{"comm", "sync_grads 0", 0.1, 0.3, 4096}}}, {}};
  r.schedule = "ring";
  const auto j = sim::run_in_child(
      "world size 2", [&] { return sim::result_to_json(r); }, false);
  const auto back = sim::result_from_json(j);
  EXPECT_EQ(back.step_s, r.step_s);
  EXPECT_EQ(back.bytes_between, r.bytes_between);
  EXPECT_EQ(back.ranks[0].step_s, 0.6);
  EXPECT_EQ(back.schedule, "ring");
  EXPECT_EQ(back.step, 1999);
  ASSERT_EQ(back.ranks[0].trace.size(), 1u);
  EXPECT_EQ(back.ranks[0].trace[0].name, "sync_grads 0");
  EXPECT_EQ(back.ranks[0].trace[0].stream, "comm");
  EXPECT_EQ(back.ranks[0].trace[0].end_s, 0.3);
  EXPECT_EQ(back.ranks[0].trace[0].bytes, 4096u);
  EXPECT_TRUE(back.ranks[1].trace.empty());
}

}  // namespace
}  // namespace ddplab
