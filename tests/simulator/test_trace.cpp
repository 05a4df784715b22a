// Chrome trace JSON: structure, units, file round trip and errors.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <set>

#include "ddplab/core/trace.hpp"

namespace ddplab {
namespace {

std::vector<TraceEvent> sample() {
  return {{0, "compute", "forward", 0.0, 0.0015, {}},
          {0, "comm", "sync_grads 0", 0.001, 0.002, {{"bytes", 4096}}},
          {1, "compute", "backward 1", 0.0005, 0.25, {}}};
}

TEST(ChromeTrace, OneProcessPerRankAndOneThreadPerTrack) {
  const auto doc = chrome_trace(sample(), {{"scenario", "x"}});
  EXPECT_EQ(doc.at("otherData").at("scenario"), "x");
  std::set<std::pair<int, std::string>> processes, threads;
  std::vector<nlohmann::json> complete;
  for (const auto& e : doc.at("traceEvents")) {
    if (e.at("ph") == "M" && e.at("name") == "process_name")
      processes.emplace(e.at("pid").get<int>(), e.at("args").at("name").get<std::string>());
    else if (e.at("ph") == "M" && e.at("name") == "thread_name")
      threads.emplace(e.at("tid").get<int>(), e.at("args").at("name").get<std::string>());
    else if (e.at("ph") == "X")
      complete.push_back(e);
  }
  EXPECT_EQ(processes, (std::set<std::pair<int, std::string>>{{0, "rank 0"}, {1, "rank 1"}}));
  EXPECT_EQ(threads, (std::set<std::pair<int, std::string>>{{1, "compute"}, {2, "comm"}}));
  ASSERT_EQ(complete.size(), 3u);
  EXPECT_EQ(complete[0].at("name"), "forward");
  EXPECT_EQ(complete[0].at("tid"), 1);
  EXPECT_DOUBLE_EQ(complete[0].at("dur").get<double>(), 1500.0);  // microseconds
  EXPECT_EQ(complete[1].at("tid"), 2);
  EXPECT_DOUBLE_EQ(complete[1].at("ts").get<double>(), 1000.0);
  EXPECT_EQ(complete[1].at("args").at("bytes"), 4096);
  EXPECT_EQ(complete[2].at("pid"), 1);
  EXPECT_DOUBLE_EQ(complete[2].at("dur").get<double>(), 250000.0);
}

TEST(ChromeTrace, WritesAFileThatParsesBack) {
  std::string dir = (std::filesystem::temp_directory_path() / "ddplab-trace-XXXXXX").string();
  ASSERT_NE(mkdtemp(dir.data()), nullptr);
  const std::string path = dir + "/t.json";
  write_chrome_trace(path, sample(), {{"world", 2}});
  std::ifstream f(path);
  const auto back = nlohmann::json::parse(f);
  EXPECT_EQ(back, chrome_trace(sample(), {{"world", 2}}));
  std::filesystem::remove_all(dir);
}

TEST(ChromeTrace, UnwritablePathIsNamed) {
  const std::string path = "/nonexistent-dir/deeper/trace.json";
  try {
    write_chrome_trace(path, sample(), {});
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(path), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ddplab
