// The flight recorder's records: JSON dumps read back (or refused, saying why), stored with their run, and the
// merged view that finds the first call where the ranks part, as fr_trace does.
#include <gtest/gtest.h>

#include <stdexcept>

#include "ddplab/core/error.hpp"
#include "ddplab/core/flight.hpp"
#include "ddplab/core/store.hpp"
#include "store_test_util.hpp"

using namespace ddplab;
using ddplab::test::RawDb;
using ddplab::test::sample_info;
using ddplab::test::TempDir;

namespace {

// `calls` completed allreduces per rank, one per step, 10 ms each from t = 100 s.
std::vector<FlightRecord> agreeing(int ranks, int calls) {
  std::vector<FlightRecord> out;
  for (int r = 0; r < ranks; ++r)
    for (int c = 0; c < calls; ++c)
      out.push_back({r, c, c, "sync_grads #0 on ring", "allreduce of 100 f32", 400, 100.0 + c, 100.01 + c, false});
  return out;
}

}  // namespace

TEST(Flight, DumpsRoundTripAsJsonAndBadOnesAreRefused) {
  std::vector<FlightRecord> calls = agreeing(1, 2);
  calls.push_back({0, 2, 2, "", "point-to-point wait", 64, 102.0, -1, false});  // in flight
  calls.push_back({0, 3, 2, "", "MPI barrier", 0, 102.5, 102.6, true});         // failed
  const auto back = flight_from_json(flight_to_json(calls));
  ASSERT_EQ(back.size(), calls.size());
  for (std::size_t i = 0; i < calls.size(); ++i) {
    EXPECT_EQ(back[i].seq, calls[i].seq);
    EXPECT_EQ(back[i].call, calls[i].call);
    EXPECT_EQ(back[i].op, calls[i].op);
    EXPECT_EQ(back[i].bytes, calls[i].bytes);
    EXPECT_DOUBLE_EQ(back[i].start_s, calls[i].start_s);
    EXPECT_EQ(back[i].in_flight(), calls[i].in_flight());
    EXPECT_EQ(back[i].failed, calls[i].failed);
  }
  EXPECT_THROW(flight_from_json("{}"), ddplab::InputError);
  try {
    flight_from_json(R"([{"rank":0,"seq":1}])");
    FAIL() << "a record without its fields was accepted";
  } catch (const ddplab::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("record 0"), std::string::npos) << e.what();
  }
}

TEST(Flight, RanksThatAgreeShowNoDivergence) {
  const std::string text = flight_report(agreeing(3, 8), 3);
  EXPECT_NE(text.find("flight recorder: 24 calls from 3 of 3 ranks"), std::string::npos) << text;
  EXPECT_NE(text.find("no divergence: every rank completed the same calls"), std::string::npos) << text;
  EXPECT_NE(text.find("#7\n  rank 0: allreduce of 100 f32 (sync_grads #0 on ring), step 7, +7.000 s for 10.000 ms"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("#2\n"), std::string::npos) << "only the last five calls are shown\n" << text;
}

TEST(Flight, FindsTheFirstCallWhereTheRanksPart) {
  // Rank 2 stopped before call 5 and left no record; rank 1 is still in call 5, rank 0 finished it.
  std::vector<FlightRecord> calls = agreeing(2, 5);
  calls.push_back({0, 5, 5, "sync_grads #0 on ring", "allreduce of 100 f32", 400, 105.0, 105.01, false});
  calls.push_back({1, 5, 5, "sync_grads #0 on ring", "allreduce of 100 f32", 400, 105.0, -1, false});
  std::string text = flight_report(calls, 3);
  EXPECT_NE(text.find("first divergence at call #5: call #5 did not complete on rank 1 (in flight)"), std::string::npos)
      << text;
  EXPECT_NE(text.find("rank 1: allreduce of 100 f32 (sync_grads #0 on ring), step 5, IN FLIGHT since +5.000 s"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("rank 2 left no record"), std::string::npos) << text;
  // A rank that never made call 5.
  calls = agreeing(2, 5);
  calls.push_back({0, 5, 5, "", "MPI barrier", 0, 105.0, -1, false});
  EXPECT_NE(flight_report(calls, 2).find("first divergence at call #5: rank 1 never reached call #5"),
            std::string::npos);
  // Different calls at one number (ranks that took different branches).
  calls = agreeing(2, 5);
  calls.push_back({0, 5, 5, "", "MPI barrier", 0, 105.0, 105.1, false});
  calls.push_back({1, 5, 5, "", "broadcast of 4 bytes from rank 0", 4, 105.0, 105.1, false});
  EXPECT_NE(flight_report(calls, 2).find("first divergence at call #5: ranks 0 and 1 made different calls at #5"),
            std::string::npos);
  // A failed call.
  calls = agreeing(2, 5);
  calls.back().failed = true;
  EXPECT_NE(flight_report(calls, 2).find("first divergence at call #4: call #4 did not complete on rank 1 (failed)"),
            std::string::npos);
  // Every rank that dumped waits in the same call: none is named alone.
  calls = agreeing(2, 5);
  for (FlightRecord& c : calls)
    if (c.seq == 4) c.end_s = -1;
  text = flight_report(calls, 3);
  EXPECT_NE(
      text.find("first divergence at call #4: call #4 completed on no rank that dumped: rank 0 (in flight), rank 1 "
                "(in flight)"),
      std::string::npos)
      << text;
  // Ranks that agree, but one left nothing: not "every rank completed the same calls".
  text = flight_report(agreeing(2, 3), 3);
  EXPECT_NE(text.find("no divergence among the ranks that dumped; the others left no record"), std::string::npos)
      << text;
  EXPECT_EQ(text.find("every rank completed"), std::string::npos) << text;
}

TEST(Flight, StoredWithTheirRunAndDeletedWithIt) {
  TempDir dir;
  Store store(dir.file("flight.db"));
  const std::int64_t run = store.begin_run(sample_info());
  std::vector<FlightRecord> calls = agreeing(2, 3);
  calls.push_back({1, 3, 3, "", "MPI barrier", 0, 103.0, -1, false});
  calls.push_back({0, 3, 3, "", "MPI barrier", 0, 103.0, 103.5, true});
  store.add_flight(run, calls);
  store.finish_run(run, RunStatus::Failed, "rank 0 step 3: ...");
  const auto back = store.flight(run);
  ASSERT_EQ(back.size(), calls.size());
  EXPECT_EQ(back.front().rank, 0);
  EXPECT_TRUE(back[3].failed);           // rank 0's call 3 (by rank, then seq)
  EXPECT_TRUE(back.back().in_flight());  // rank 1's call 3
  EXPECT_TRUE(store.flight(run + 1).empty());
  store.delete_runs({run});
  EXPECT_EQ(RawDb(dir.file("flight.db")).integer("SELECT COUNT(*) FROM flight_records"), 0);
}
