// The test bed's parts that need no root: rates, subnets, options, the state file, the launch agent, and the
// "testbed" entry added to stored runs.
#include <stdlib.h>
#include <sys/stat.h>

#include <filesystem>
#include <fstream>

#include <gtest/gtest.h>

#include "ddplab/core/store.hpp"
#include "ddplab/testbed/command.hpp"
#include "ddplab/testbed/testbed.hpp"
#include "temp_dir.hpp"

namespace tb = ddplab::testbed;

namespace {

template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const std::exception& e) {
    return e.what();
  }
  return "(no error)";
}

tb::State sample_state(const std::string& dir, int hosts = 3) {
  return tb::plan_state(tb::make_options(hosts, "1gbit", "", "10.77.0.0/24"), dir);
}

}  // namespace

TEST(TestbedRate, ParsesTcUnits) {
  EXPECT_EQ(tb::parse_rate("1gbit"), 1000000000u);
  EXPECT_EQ(tb::parse_rate("100mbit"), 100000000u);
  EXPECT_EQ(tb::parse_rate("10gbit"), 10000000000u);
  EXPECT_EQ(tb::parse_rate("1.5mbit"), 1500000u);
  EXPECT_EQ(tb::parse_rate("1Gbit"), 1000000000u);
  EXPECT_EQ(tb::parse_rate("125mbps"), 1000000000u);  // bytes per second, as in tc
  EXPECT_EQ(tb::parse_rate("1kibit"), 1024u);
  EXPECT_EQ(tb::parse_rate("2mibit"), 2u * 1048576u);
  EXPECT_EQ(tb::parse_rate("8000"), 8000u);  // a bare number is bits per second
  EXPECT_EQ(tb::parse_rate("1tbit"), 1000000000000u);
}

TEST(TestbedRate, RejectsMalformedAndOutOfRange) {
  for (const char* bad : {"", "gbit", "1.2.3mbit", "10gbits", "1 gbit", "-1gbit", "1e9", "fast"})
    EXPECT_NE(error_of([&] { tb::parse_rate(bad); }).find("expected a tc rate"), std::string::npos) << bad;
  EXPECT_NE(error_of([] { tb::parse_rate("0mbit"); }).find("out of range"), std::string::npos);
  EXPECT_NE(error_of([] { tb::parse_rate("800bit"); }).find("out of range"), std::string::npos);
  EXPECT_NE(error_of([] { tb::parse_rate("2tbit"); }).find("out of range"), std::string::npos);
  EXPECT_NE(error_of([] { tb::parse_rate("10gbits"); }).find("unknown unit \"gbits\""), std::string::npos);
}

TEST(TestbedRate, FormatsBackToTheShortestTcForm) {
  for (const char* r : {"1gbit", "100mbit", "10gbit", "1500kbit", "1tbit", "1234bit"})
    EXPECT_EQ(tb::format_rate(tb::parse_rate(r)), r);
  EXPECT_EQ(tb::format_rate(tb::parse_rate("125mbps")), "1gbit");
  EXPECT_EQ(tb::format_rate(tb::parse_rate("1kibit")), "1024bit");
}

TEST(TestbedSubnet, ParsesPrivateNetworks) {
  const auto s = tb::parse_subnet("10.77.0.0/24");
  EXPECT_EQ(s.text(), "10.77.0.0/24");
  EXPECT_EQ(s.capacity(), 254u);
  EXPECT_TRUE(s.contains(*tb::parse_ipv4("10.77.0.200")));
  EXPECT_FALSE(s.contains(*tb::parse_ipv4("10.77.1.1")));
  EXPECT_EQ(tb::parse_subnet("192.168.50.0/28").capacity(), 14u);
  EXPECT_EQ(tb::parse_subnet("172.20.0.0/16").text(), "172.20.0.0/16");
}

TEST(TestbedSubnet, RejectsWhatItCannotUse) {
  EXPECT_NE(error_of([] { tb::parse_subnet("10.77.0.1/24"); }).find("did you mean 10.77.0.0/24"), std::string::npos);
  EXPECT_NE(error_of([] { tb::parse_subnet("8.8.8.0/24"); }).find("not inside 10.0.0.0/8"), std::string::npos);
  EXPECT_NE(error_of([] { tb::parse_subnet("172.32.0.0/16"); }).find("not inside"), std::string::npos);
  EXPECT_NE(error_of([] { tb::parse_subnet("10.77.0.0/31"); }).find("prefix length"), std::string::npos);
  for (const char* bad : {"10.77.0.0", "300.1.1.0/24", "10.77.0/24", "10.77.0.0/", "10.77.0.0/2x", "a.b.c.d/8"})
    EXPECT_NE(error_of([&] { tb::parse_subnet(bad); }).find("expected a private IPv4 network"), std::string::npos)
        << bad;
}

TEST(TestbedOptions, ValidatesEveryArgument) {
  EXPECT_NO_THROW(tb::make_options(1, "1gbit", "", "10.77.0.0/24"));
  EXPECT_NO_THROW(tb::make_options(64, "10gbit", "50us", "10.77.0.0/24"));
  EXPECT_NE(error_of([] { tb::make_options(0, "1gbit", "", "10.77.0.0/24"); }).find("--hosts must be 1..64, got 0"),
            std::string::npos);
  EXPECT_NE(error_of([] { tb::make_options(65, "1gbit", "", "10.77.0.0/24"); }).find("got 65"), std::string::npos);
  EXPECT_NE(error_of([] { tb::make_options(2, "1gbits", "", "10.77.0.0/24"); }).find("--rate: "), std::string::npos);
  EXPECT_NE(error_of([] { tb::make_options(2, "1gbit", "soon", "10.77.0.0/24"); }).find("--delay: "),
            std::string::npos);
  EXPECT_NE(error_of([] { tb::make_options(2, "1gbit", "0us", "10.77.0.0/24"); }).find("--delay must be above 0"),
            std::string::npos);
  EXPECT_NE(error_of([] { tb::make_options(2, "1gbit", "", "10.77.0.0/33"); }).find("--subnet: "), std::string::npos);
  // 14 usable addresses: 13 hosts and the bridge fit, 14 do not.
  EXPECT_NO_THROW(tb::make_options(13, "1gbit", "", "192.168.9.0/28"));
  EXPECT_NE(error_of([] { tb::make_options(14, "1gbit", "", "192.168.9.0/28"); }).find("need 15"), std::string::npos);
}

TEST(TestbedState, PlansPrefixedNamesAndAddresses) {
  const tb::State s = sample_state("/x", 3);
  EXPECT_EQ(s.phase, "creating");
  EXPECT_EQ(s.bridge, "ddpl-br");
  EXPECT_EQ(s.bridge_ip, "10.77.0.254/24");
  ASSERT_EQ(s.nodes.size(), 3u);
  EXPECT_EQ(s.nodes[2].ns, "ddpl-h2");
  EXPECT_EQ(s.nodes[2].ip, "10.77.0.3");
  EXPECT_EQ(s.nodes[2].veth_root, "ddpl-v2");
  EXPECT_EQ(s.nodes[2].veth_ns, "ddpl-p2");
  EXPECT_EQ(s.agent, "/x/agent.sh");
  EXPECT_EQ(s.rate(), "1gbit");
  EXPECT_EQ(tb::plan_state(tb::make_options(64, "1gbit", "", "10.77.0.0/24"), "/x").nodes[63].veth_root, "ddpl-v63");
}

TEST(TestbedState, RoundTripsThroughTheFile) {
  ddplab::test::TempDir dir("ddplab-testbed");
  tb::State s = sample_state(dir.file(""), 4);
  s.phase = "up";
  s.delay = "50us";
  tb::write_state(s, dir.file("state.json"));
  const auto back = tb::read_state(dir.file("state.json"));
  ASSERT_TRUE(back);
  EXPECT_EQ(tb::to_json(*back), tb::to_json(s));
  EXPECT_FALSE(std::filesystem::exists(dir.file("state.json.tmp")));
  EXPECT_FALSE(tb::read_state(dir.file("absent.json")));
}

TEST(TestbedState, RefusesBrokenOrForeignFiles) {
  ddplab::test::TempDir dir("ddplab-testbed");
  const std::string path = dir.file("state.json");
  std::ofstream(path) << "{\"version\": 1, \"phase\": \"up\"";
  EXPECT_NE(error_of([&] { tb::read_state(path); }).find("state " + path + " is unreadable"), std::string::npos);

  nlohmann::json j = tb::to_json(sample_state(dir.file("")));
  j.erase("bridge");
  std::ofstream(path, std::ios::trunc) << j.dump();
  EXPECT_NE(error_of([&] { tb::read_state(path); }).find("field \"bridge\""), std::string::npos);

  // `down` deletes what the file lists: a name without the prefix must never get that far.
  j = tb::to_json(sample_state(dir.file("")));
  j["nodes"][1]["ns"] = "production";
  std::ofstream(path, std::ios::trunc) << j.dump();
  EXPECT_NE(error_of([&] { tb::read_state(path); }).find("\"production\" lacks the prefix ddpl-"), std::string::npos);

  j = tb::to_json(sample_state(dir.file("")));
  j["hosts"] = 5;
  std::ofstream(path, std::ios::trunc) << j.dump();
  EXPECT_NE(error_of([&] { tb::read_state(path); }).find("3 entries for 5 hosts"), std::string::npos);
}

TEST(TestbedLaunch, MpirunOptionsBindEverythingToTheSubnet) {
  const tb::State s = sample_state("/run/x");
  const auto a = tb::mpirun_args(s);
  const std::string joined = [&] {
    std::string out;
    for (const auto& x : a) out += x + " ";
    return out;
  }();
  EXPECT_NE(joined.find("--hostfile /run/x/hostfile"), std::string::npos);
  EXPECT_NE(joined.find("--mca plm_rsh_agent /run/x/agent.sh"), std::string::npos);
  EXPECT_NE(joined.find("--mca oob_tcp_if_include 10.77.0.0/24"), std::string::npos);
  EXPECT_NE(joined.find("--mca btl tcp,self"), std::string::npos);
  EXPECT_NE(joined.find("--mca btl_tcp_if_include 10.77.0.0/24"), std::string::npos);
  EXPECT_EQ(tb::hostfile_text(s), "10.77.0.1 slots=1\n10.77.0.2 slots=1\n10.77.0.3 slots=1\n");
}

// The agent maps a host IP to its namespace and hands the command to `sh -c`; a fake `ip` records its arguments.
TEST(TestbedLaunch, AgentRunsTheCommandInTheHostsNamespace) {
  ddplab::test::TempDir dir("ddplab-testbed");
  const tb::State s = sample_state(dir.file(""));
  std::ofstream(dir.file("agent.sh")) << tb::agent_script(s);
  std::ofstream(dir.file("ip")) << "#!/bin/sh\nfor a in \"$@\"; do echo \"[$a]\"; done\n";
  chmod(dir.file("ip").c_str(), 0755);
  const std::string path = "PATH=" + dir.file("") + ":/usr/bin:/bin";
  auto r = tb::run_command({"env", path, "sh", dir.file("agent.sh"), "10.77.0.2", "orted", "-mca", "x", "'a b'"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "[netns]\n[exec]\n[ddpl-h1]\n[sh]\n[-c]\n[orted -mca x 'a b']\n");
  // Each host's daemons get a session directory of their own.
  const std::string own = "/tmp/ddplab-testbed-ddpl-h1";
  std::filesystem::remove_all(own);
  r = tb::run_command({"env", path, "TMPDIR=/tmp", "sh", dir.file("agent.sh"), "10.77.0.2", "x"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_TRUE(std::filesystem::is_directory(own));
  r = tb::run_command({"env", path, "sh", dir.file("agent.sh"), "10.77.0.9", "orted"});
  EXPECT_EQ(r.status, 255);
  EXPECT_NE(r.err.find("10.77.0.9 is not a host of the test bed"), std::string::npos);
}

TEST(TestbedProc, ErrorsNameTheCommandStatusAndStderr) {
  const std::string msg = error_of([] { tb::check_command({"sh", "-c", "echo oops >&2; exit 3", "x y"}); });
  EXPECT_NE(msg.find("`sh -c 'echo oops >&2; exit 3' 'x y'` failed (exit 3): oops"), std::string::npos) << msg;
  EXPECT_NE(error_of([] { tb::check_command({"ddplab-no-such-tool"}); }).find("cannot start `ddplab-no-such-tool`"),
            std::string::npos);
}

TEST(TestbedShaper, BurstCoversAMillisecondOfTraffic) {
  EXPECT_EQ(tb::tbf_args(1000000000),
            (std::vector<std::string>{"tbf", "rate", "1000000000bit", "burst", "125000", "latency", "20ms"}));
  EXPECT_EQ(tb::tbf_args(100000000)[4], "65536");  // 64 KiB floor: a TSO segment must fit
}

TEST(TestbedStore, RunsAreTaggedWithTheTestbed) {
  ddplab::test::TempDir dir("ddplab-testbed");
  const std::string db = dir.file("r.db");
  std::int64_t before = 0, tagged = 0, other = 0;
  {
    ddplab::Store store(db);
    before = store.begin_run({"sc", "old", "cpu", 2, ddplab::RunSource::Measured, "{\"a\":1}", "{}", 64});
    tagged = store.begin_run(
        {"sc", "new", "cpu", 2, ddplab::RunSource::Measured, "{\"a\":2}", "{\"launch_id\":\"L1\"}", 64});
    // Another job writing the same store at the same time: not this launch's run.
    other = store.begin_run(
        {"sc", "new", "cpu", 2, ddplab::RunSource::Measured, "{\"a\":3}", "{\"launch_id\":\"L2\"}", 64});
  }
  tb::tag_runs(db, before, "L1", sample_state(dir.file(""), 3));
  ddplab::Store store(db);
  const auto old_cfg = nlohmann::json::parse(store.run(before)->info.config_json);
  const auto new_cfg = nlohmann::json::parse(store.run(tagged)->info.config_json);
  EXPECT_FALSE(old_cfg.contains("testbed"));
  EXPECT_FALSE(nlohmann::json::parse(store.run(other)->info.config_json).contains("testbed"));
  EXPECT_EQ(new_cfg["a"], 2);
  EXPECT_EQ(new_cfg["testbed"]["hosts"], 3);
  EXPECT_EQ(new_cfg["testbed"]["rate"], "1gbit");
  EXPECT_EQ(new_cfg["testbed"]["subnet"], "10.77.0.0/24");
  EXPECT_THROW(store.set_run_config(999, "{}"), ddplab::StoreError);
}
