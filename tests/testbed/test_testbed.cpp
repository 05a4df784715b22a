// The emulated cluster for real: `ddplab testbed up/status/down`, a collective bench and a training run across
// the namespaces, and crash leftovers. Needs root, iproute2, tc tbf and mpirun; skips with the reason otherwise.
// A test bed that is already up (ddpl-* objects) is never touched: the tests skip.
#include <fcntl.h>
#include <stdlib.h>
#include <sys/file.h>
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <iostream>
#include <string>
#include <vector>

#include <gtest/gtest.h>
#include <nlohmann/json.hpp>

#include "ddplab/core/scenario.hpp"
#include "ddplab/core/stats.hpp"
#include "ddplab/core/store.hpp"
#include "ddplab/strategies/strategy.hpp"
#include "ddplab/testbed/command.hpp"
#include "ddplab/testbed/testbed.hpp"

namespace tb = ddplab::testbed;

namespace {

std::string run_cmd(const std::vector<std::string>& argv, int* status) {
  const tb::CommandResult r = tb::run_command(argv);
  *status = r.status;
  return r.out + r.err;
}

bool works(const std::vector<std::string>& argv) {
  try {
    return tb::run_command(argv).status == 0;
  } catch (const std::exception&) {
    return false;
  }
}

// ddpl-* namespaces, links and qdiscs visible from the root namespace.
std::string prefixed_objects() {
  std::string found;
  int st = 0;
  for (const auto& argv : std::vector<std::vector<std::string>>{
           {"ip", "netns", "list"}, {"ip", "-o", "link", "show"}, {"tc", "qdisc", "show"}}) {
    const std::string out = run_cmd(argv, &st);
    if (out.find("ddpl-") != std::string::npos) found += out;
  }
  return found;
}

// Why these tests cannot run here, or empty when they can.
std::string missing_prerequisite() {
  if (geteuid() != 0) return "needs root (network namespaces and tc)";
  if (!works({"ip", "-V"})) return "needs iproute2 (`ip`)";
  if (!works({"tc", "-V"})) return "needs iproute2 (`tc`)";
  if (!works({"mpirun", "--version"})) return "needs Open MPI (`mpirun`)";
  if (!prefixed_objects().empty())
    return "ddpl-* objects exist (a test bed in use?); `ddplab testbed down` removes them";
  const std::string ns = "ddpl-tprobe";
  if (!works({"ip", "netns", "add", ns})) return "`ip netns add` fails here";
  const bool tbf = works(
      {"tc", "-n", ns, "qdisc", "add", "dev", "lo", "root", "tbf", "rate", "1gbit", "burst", "64k", "latency", "20ms"});
  works({"ip", "netns", "del", ns});
  return tbf ? "" : "the tbf qdisc is unavailable";
}

class Testbed : public ::testing::Test {
 protected:
  void SetUp() override {
    // One test bed per machine: tests from other build folders wait here.
    lock_ = open("/tmp/ddplab-testbed-tests.lock", O_RDWR | O_CREAT | O_CLOEXEC, 0666);
    if (lock_ >= 0) flock(lock_, LOCK_EX);
    const std::string why = missing_prerequisite();
    if (!why.empty()) GTEST_SKIP() << why;
    ready_ = true;
    char tmpl[] = "/tmp/ddplab-testbed-db-XXXXXX";
    ASSERT_NE(mkdtemp(tmpl), nullptr);
    dir_ = tmpl;
  }
  void TearDown() override {
    if (ready_) {
      // Remove whatever the test left up (a failed assertion may leave a test bed behind).
      if (!prefixed_objects().empty() || std::filesystem::exists(tb::state_path())) {
        int st = 0;
        const std::string out = ddplab({"testbed", "down"}, &st);
        EXPECT_EQ(st, 0) << out;
      }
      EXPECT_EQ(prefixed_objects(), "") << "left behind by the test";
      std::error_code ec;
      std::filesystem::remove_all(dir_, ec);
    }
    if (lock_ >= 0) close(lock_);
  }

  // Each command under its own limit: a launch that hangs (seen twice, once in `bench --testbed` right after
  // the full suite, never when rerun) fails its test with the output so far, and TearDown still takes the
  // test bed down, instead of ctest killing the test and leaving it up for the next ones to skip.
  std::string ddplab(std::vector<std::string> args, int* status, std::vector<std::string> env = {}, int limit_s = 100) {
    std::vector<std::string> argv = {"timeout", "-k", "5", std::to_string(limit_s), "env"};
    argv.insert(argv.end(), env.begin(), env.end());
    argv.push_back(DDPLAB_EXE);
    argv.insert(argv.end(), args.begin(), args.end());
    std::string out = run_cmd(argv, status);
    if (*status == 124 || *status == 137)
      out += "\n[test] ddplab " + args.front() + " " + (args.size() > 1 ? args[1] : "") + ": killed after " +
             std::to_string(limit_s) + " s\n";
    return out;
  }
  std::string db() const { return dir_ + "/r.db"; }

  // After a calibration named "tb": trains `run_args` (after `run`) on the test bed, takes it down and
  // validates the runs against the calibration; validate's output goes to *validated and to stdout.
  // compute: validate's --compute (auto: the calibration's per-layer times, as it measured this model).
  void train_and_validate(const std::vector<std::string>& run_args, int run_limit_s, std::string* validated,
                          const std::string& compute = "auto") {
    int st = 0;
    std::vector<std::string> run = {"run"};
    run.insert(run.end(), run_args.begin(), run_args.end());
    run.insert(run.end(), {"--testbed", "--db", db()});
    std::string out = ddplab(run, &st, {}, run_limit_s);
    ASSERT_EQ(st, 0) << out;
    out = ddplab({"testbed", "down"}, &st);
    ASSERT_EQ(st, 0) << out;
    *validated = ddplab({"validate", "--name", "tb", "--runs-only", "--compute", compute, "--db", db()}, &st);
    ASSERT_EQ(st, 0) << *validated;
    std::cout << *validated;
  }
  // The step-time comparisons validate stored, one per run.
  std::vector<ddplab::ValidationRow> step_validations() const {
    std::vector<ddplab::ValidationRow> rows;
    for (auto& v : ddplab::Store(db()).validations())
      if (v.metric == "step_s") rows.push_back(std::move(v));
    return rows;
  }

  int lock_ = -1;
  bool ready_ = false;
  std::string dir_;
};

}  // namespace

TEST_F(Testbed, UpStatusDownLeavesNothing) {
  int st = 0;
  std::string out = ddplab({"testbed", "up", "--hosts", "3", "--rate", "100mbit"}, &st);
  ASSERT_EQ(st, 0) << out;
  out = ddplab({"testbed", "status"}, &st);
  EXPECT_EQ(st, 0) << out;
  for (const char* want : {"ddpl-h0", "ddpl-h2", "10.77.0.3", "tbf 100mbit", "whole"})
    EXPECT_NE(out.find(want), std::string::npos) << want << " in\n" << out;
  out = ddplab({"testbed", "up", "--hosts", "2", "--rate", "1gbit"}, &st);
  EXPECT_NE(st, 0);
  EXPECT_NE(out.find("already up (3 hosts at 100mbit)"), std::string::npos) << out;
  out = ddplab({"testbed", "down"}, &st);
  EXPECT_EQ(st, 0) << out;
  EXPECT_NE(out.find("removed netns ddpl-h2"), std::string::npos) << out;
  EXPECT_EQ(prefixed_objects(), "");
  out = ddplab({"testbed", "status"}, &st);
  EXPECT_EQ(st, 1) << out;
}

TEST_F(Testbed, DelayNeedsNetem) {
  const bool netem = works({"ip", "netns", "add", "ddpl-tnetem"}) &&
                     works({"tc", "-n", "ddpl-tnetem", "qdisc", "add", "dev", "lo", "root", "netem", "delay", "1ms"});
  works({"ip", "netns", "del", "ddpl-tnetem"});
  int st = 0;
  const std::string out = ddplab({"testbed", "up", "--hosts", "2", "--rate", "1gbit", "--delay", "50us"}, &st);
  if (netem) {
    EXPECT_EQ(st, 0) << out;
    return;
  }
  EXPECT_NE(st, 0);
  EXPECT_NE(out.find("--delay needs the netem qdisc, which is unavailable"), std::string::npos) << out;
  EXPECT_NE(out.find("qdisc add dev lo root netem delay 50us"), std::string::npos) << out;
  EXPECT_EQ(prefixed_objects(), "") << "a refused `up` must leave nothing";
}

// A 4 MiB allreduce on 4 hosts shaped to 200 Mbit/s: the bus bandwidth cannot exceed the NIC rate.
TEST_F(Testbed, CollectivesStayBelowTheShapedRate) {
  int st = 0;
  std::string out = ddplab({"testbed", "up", "--hosts", "4", "--rate", "200mbit"}, &st);
  ASSERT_EQ(st, 0) << out;
  out = ddplab({"bench", "collectives", "--testbed", "--np", "3", "--db", db()}, &st);
  EXPECT_NE(st, 0);
  EXPECT_NE(out.find("--np 3 disagrees with the test bed's 4 hosts"), std::string::npos) << out;
  out = ddplab({"bench", "collectives", "--testbed", "--sizes", "4MiB", "--schedules", "ring,native", "--iters", "3",
                "--warmup", "1", "--db", db()},
               &st);
  ASSERT_EQ(st, 0) << out;
  EXPECT_NE(out.find("--mca plm_rsh_agent"), std::string::npos) << out;
  ddplab::Store store(db());
  const auto benches = store.benches();
  ASSERT_EQ(benches.size(), 1u);
  EXPECT_EQ(benches[0].info.world_size, 4);
  const auto cfg = nlohmann::json::parse(benches[0].info.config_json);
  EXPECT_EQ(cfg["testbed"]["hosts"], 4);
  EXPECT_EQ(cfg["testbed"]["rate"], "200mbit");
  const double rate_gbs = 200e6 / 8 / 1e9;
  const auto rows = store.bench_rows(benches[0].id);
  ASSERT_EQ(rows.size(), 2u);
  for (const auto& r : rows) {
    EXPECT_EQ(r.wrong.value_or(-1), 0) << r.schedule;
    EXPECT_LT(r.busbw_gbs, rate_gbs * 1.02) << r.schedule << ": faster than the shaper allows";
    EXPECT_GT(r.busbw_gbs, rate_gbs * 0.1) << r.schedule << ": the network barely works";
  }
}

TEST_F(Testbed, TrainingRunIsStoredWithTheTestbed) {
  int st = 0;
  std::string out = ddplab({"run", DDPLAB_SOURCE_DIR "/scenarios/ci-small.toml", "--testbed", "--db", db()}, &st);
  EXPECT_NE(st, 0);
  EXPECT_NE(out.find("no test bed is up"), std::string::npos) << out;
  out = ddplab({"testbed", "up", "--hosts", "2", "--rate", "1gbit"}, &st);
  ASSERT_EQ(st, 0) << out;
  out =
      ddplab({"run", DDPLAB_SOURCE_DIR "/scenarios/ci-small.toml", "--testbed", "--max-steps", "5", "--db", db()}, &st);
  ASSERT_EQ(st, 0) << out;
  ddplab::Store store(db());
  const auto runs = store.runs();
  ASSERT_EQ(runs.size(), 1u);
  EXPECT_EQ(runs[0].status, ddplab::RunStatus::Completed);
  EXPECT_EQ(runs[0].info.world_size, 2);
  const auto cfg = nlohmann::json::parse(runs[0].info.config_json);
  EXPECT_EQ(cfg["testbed"]["hosts"], 2);
  EXPECT_EQ(cfg["testbed"]["rate"], "1gbit");
  EXPECT_EQ(store.steps(runs[0].id).size(), 10u);  // 5 steps x 2 ranks
}

// `up` fails halfway (fault injection) and removes what it created; when it dies instead, status reports the
// remains, up refuses, and down removes them.
TEST_F(Testbed, CrashedUpIsDetectedAndCleaned) {
  int st = 0;
  std::string out =
      ddplab({"testbed", "up", "--hosts", "3", "--rate", "1gbit"}, &st, {"DDPLAB_TESTBED_FAULT=fail-after-host:2"});
  EXPECT_EQ(st, 1) << out;  // a command failed on the way: a run fault, not bad input
  EXPECT_NE(out.find("failing after 2 hosts; removed what it had created"), std::string::npos) << out;
  EXPECT_EQ(prefixed_objects(), "");
  EXPECT_FALSE(std::filesystem::exists(tb::state_path()));
  out = ddplab({"testbed", "up", "--hosts", "3", "--rate", "1gbit"}, &st, {"DDPLAB_TESTBED_FAULT=crash-after-host:2"});
  ASSERT_EQ(st, 86) << out;
  out = ddplab({"testbed", "status"}, &st);
  EXPECT_EQ(st, 3) << out;
  EXPECT_NE(out.find("test bed: creating"), std::string::npos) << out;
  EXPECT_NE(out.find("run `ddplab testbed down`"), std::string::npos) << out;
  out = ddplab({"testbed", "up", "--hosts", "3", "--rate", "1gbit"}, &st);
  EXPECT_NE(st, 0);
  EXPECT_NE(out.find("left over from a crash"), std::string::npos) << out;
  out = ddplab({"run", DDPLAB_SOURCE_DIR "/scenarios/ci-small.toml", "--testbed", "--db", db()}, &st);
  EXPECT_NE(out.find("incomplete"), std::string::npos) << out;
  out = ddplab({"testbed", "down"}, &st);
  EXPECT_EQ(st, 0) << out;
  EXPECT_NE(out.find("removed netns ddpl-h1"), std::string::npos) << out;
  EXPECT_EQ(prefixed_objects(), "");
}

// Prefixed objects with no state file (made by hand here) are leftovers too.
TEST_F(Testbed, LeftoversWithoutStateAreDetectedAndCleaned) {
  ASSERT_TRUE(works({"ip", "netns", "add", "ddpl-h9"}));
  ASSERT_TRUE(works({"ip", "link", "add", "ddpl-v9", "type", "veth", "peer", "name", "ddpl-p9"}));
  int st = 0;
  std::string out = ddplab({"testbed", "status"}, &st);
  EXPECT_EQ(st, 3) << out;
  for (const char* want : {"leftover (in no state file): netns ddpl-h9", "link ddpl-v9", "link ddpl-p9"})
    EXPECT_NE(out.find(want), std::string::npos) << want << " in\n" << out;
  out = ddplab({"testbed", "up", "--hosts", "2", "--rate", "1gbit"}, &st);
  EXPECT_NE(st, 0);
  EXPECT_NE(out.find("leftovers of an earlier test bed"), std::string::npos) << out;
  out = ddplab({"testbed", "down"}, &st);
  EXPECT_EQ(st, 0) << out;
  EXPECT_NE(out.find("removed netns ddpl-h9"), std::string::npos) << out;
  EXPECT_EQ(prefixed_objects(), "");
}

// The simulator's accuracy on a real network: calibrate on the test bed (ping-pong, the
// runtime's ring allreduce steps, per-layer compute), train a flat baseline and a bucketed-overlap strategy
// on it, and let `validate` predict their step times from the calibration alone (network fit and per-layer
// compute; nothing of the runs but their scenario). Goal: median |error| <= 5%, max <= 10%; the test fails
// when a step time is more than 10% off. 3 hosts at 50 Mbit/s: the network is ~99% of the step, and the
// milliseconds of jitter of 3 ranks on 2 shared cores weigh half what they do at 100 Mbit/s. Not 2 hosts: there Open
// MPI's TCP transport carries both directions of a pair on one connection, and a large message's rendezvous reply can
// queue behind the other direction's data, so an exchange takes 1x or 2x the one-way time at random
// (docs/calibration.md).
TEST_F(Testbed, CalibratedPredictionOfStepTimes) {
  const std::string scenario = DDPLAB_SOURCE_DIR "/tests/testbed/predict.toml";
  int st = 0;
  std::string out = ddplab({"testbed", "up", "--hosts", "3", "--rate", "50mbit"}, &st);
  ASSERT_EQ(st, 0) << out;
  // Sizes around the messages the strategies send (ring chunks of 90 KB to 360 KB), closer than doubling.
  out = ddplab({"calibrate", "--testbed", "--name", "tb", "--sizes",
                "4KiB,16KiB,64KiB,128KiB,192KiB,256KiB,384KiB,512KiB,768KiB,1MiB", "--schedules", "none",
                "--pingpong-budget", "0.3", "--coll-iters", "10", "--scenario", scenario, "--db", db()},
               &st);
  ASSERT_EQ(st, 0) << out;
  std::cout << out.substr(std::min(out.size(), out.find("# ping-pong"))) << "\n";
  ASSERT_NO_FATAL_FAILURE(train_and_validate({scenario}, 100, &out));
  EXPECT_NE(out.find("compute from calibration \"tb\""), std::string::npos)
      << "compute not predicted from the calibration";

  std::vector<double> errors;
  for (const auto& v : step_validations()) errors.push_back(std::abs(v.error_pct));
  ASSERT_EQ(errors.size(), 2u) << "a step time per strategy";
  std::sort(errors.begin(), errors.end());
  const double median = (errors[0] + errors[1]) / 2, worst = errors[1];
  RecordProperty("median_abs_error_pct", std::to_string(median));
  RecordProperty("max_abs_error_pct", std::to_string(worst));
  std::cout << "step time: median |error| " << median << "%, max " << worst << "%\n";
  EXPECT_LE(worst, 10.0) << "a predicted step time is more than 10% off";
  if (median > 5.0) std::cout << "note: median |error| above the 5% goal (the test fails above 10% only)\n";
}

// Every shipped strategy (scenarios/strategies.toml, as docs/calibration.md's test-bed table runs it, 40 steps)
// predicted from a calibration of the test bed's network, in two configurations of the grid the simulator is checked
// on. Compute is each run's own (validate --compute measured): what is checked here is the network, the
// overlap, the codec work and the ranking the simulator derives, not the compute speed of a shared machine,
// which drifts between the calibration and the runs; CalibratedPredictionOfStepTimes checks the calibration's
// compute. The bounds are what holds on this 2-core machine, not the goal (median 5%,
// max 15%): docs/calibration.md gives the figures and what is still off. Strategies with a codec get their own
// bound: their local work is timed by the calibration at one moment and paid in the run at another, and on
// this shared machine the same loops run up to 2x slower from one minute to the next (PowerSGD rank 1 also
// waits for cores while backward runs). Strategies that give memory back (ZeRO-2's gradients, ZeRO-3's
// parameters too) get theirs: the runtime takes the released pages again by faulting them in, page by page,
// inside its gathers, which the simulator does not model. At 3 hosts, 3 ranks and their comm threads share
// 2 cores. 100 Mbit/s is not here: the 16 strategies take many minutes there.
struct GridPoint {
  int hosts;
  const char* rate;
  double median_pct, max_pct, codec_max_pct, release_max_pct, min_tau;
};

class TestbedGrid : public Testbed {
 protected:
  void check(const GridPoint& g) {
    const std::string scenario = DDPLAB_SOURCE_DIR "/scenarios/strategies.toml";
    const std::string hosts = std::to_string(g.hosts);
    int st = 0;
    std::string out = ddplab({"testbed", "up", "--hosts", hosts, "--rate", g.rate}, &st);
    ASSERT_EQ(st, 0) << out;
    out = ddplab({"calibrate",
                  "--testbed",
                  "--np",
                  hosts,
                  "--name",
                  "tb",
                  "--scenario",
                  scenario,
                  "--schedules",
                  "ring,native,halving_doubling,double_binary_tree,direct",
                  "--worlds",
                  hosts,
                  "--coll-sizes",
                  "1MiB,4MiB,16MiB",
                  "--sizes",
                  "4KiB,16KiB,64KiB,256KiB,1MiB,4MiB,16MiB",
                  "--pingpong-budget",
                  "0.3",
                  "--db",
                  db()},
                 &st, {}, 200);
    ASSERT_EQ(st, 0) << out;
    ASSERT_NO_FATAL_FAILURE(train_and_validate({scenario, "--np", hosts, "--max-steps", "40"}, 400, &out, "measured"));

    std::vector<double> errors, measured, predicted, bounds;
    std::vector<std::string> labels;
    const auto strategies = ddplab::load_scenario(scenario).strategies;
    for (const auto& v : step_validations()) {
      errors.push_back(std::abs(v.error_pct)), labels.push_back(v.label);
      measured.push_back(v.measured), predicted.push_back(v.predicted);
      const auto s =
          std::find_if(strategies.begin(), strategies.end(), [&](const auto& x) { return x.name == v.label; });
      ASSERT_NE(s, strategies.end()) << "a validation of no strategy of the scenario: " << v.label;
      bounds.push_back(s->codec != "none"                          ? g.codec_max_pct
                       : ddplab::find_policy(s->policy)->zero >= 2 ? g.release_max_pct
                                                                   : g.max_pct);
    }
    ASSERT_EQ(errors.size(), strategies.size()) << "a step time per strategy";
    const double median = ddplab::median(errors), worst = *std::max_element(errors.begin(), errors.end());
    const double tau = ddplab::kendall_tau(measured, predicted);
    RecordProperty("median_abs_error_pct", std::to_string(median));
    RecordProperty("max_abs_error_pct", std::to_string(worst));
    RecordProperty("kendall_tau", std::to_string(tau));
    std::cout << g.hosts << " hosts at " << g.rate << ": step time median |error| " << median << "%, max " << worst
              << "%, Kendall tau " << tau << "\n";
    EXPECT_LE(median, g.median_pct);
    for (std::size_t i = 0; i < errors.size(); ++i) EXPECT_LE(errors[i], bounds[i]) << labels[i];
    EXPECT_GE(tau, g.min_tau) << "the simulator ranks the strategies unlike the measurement";
  }
};

// 2 hosts: Open MPI's native allreduce takes 1x or 2x the one-way time at random there (see above), and the
// calibration and the runs draw it at different moments, so the native allreduce's strategy, PowerSGD and the
// ranking get wide bounds.
TEST_F(TestbedGrid, EveryShippedStrategyOnTwoHostsAt1Gbit) { check({2, "1gbit", 12.0, 85.0, 85.0, 85.0, 0.65}); }

TEST_F(TestbedGrid, EveryShippedStrategyOnThreeHostsAt1Gbit) { check({3, "1gbit", 15.0, 30.0, 70.0, 50.0, 0.8}); }
