// The likely causes `ddplab validate` names under a large error, each from a recorded fact.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "ddplab/core/version.hpp"
#include "ddplab/simulator/diagnosis.hpp"

namespace ddplab {
namespace {

RunRow run(int world, nlohmann::json host, nlohmann::json config) {
  RunRow r;
  r.id = 7;
  r.info.world_size = world;
  r.info.source = RunSource::Measured;
  r.info.host_info = host.dump();
  r.info.config_json = config.dump();
  return r;
}

bool has(const std::vector<std::string>& causes, const std::string& part) {
  for (const auto& c : causes)
    if (c.find(part) != std::string::npos) return true;
  return false;
}

TEST(Diagnosis, EachRecordedFactGivesItsCause) {
  const nlohmann::json config = {{"cluster", {{"link_bandwidth", 1.25e9}, {"link_latency", 2e-6}}},
                                 {"train", {{"backend", "cpu"}}}};
  // A run on 2 cores with 4 ranks, no calibration.
  auto causes =
      likely_causes(run(4, {{"cores", 2}, {"ranks_on_host", 4}, {"build", build_id()}}, config), nullptr, nullptr);
  EXPECT_TRUE(has(causes, "4 ranks on 2 cores")) << causes.size();
  EXPECT_TRUE(has(causes, "no calibration: the scenario's [cluster] links (10 Gbit/s, 2 us)"));

  // A calibration of 2 ranks on the test bed, by another build, with GPU compute; the run: 4 ranks, off the
  // test bed, CPU, enough cores.
  Calibration cal;
  cal.name = "tb";
  cal.link_class = "testbed";
  cal.compute_backend = "cuda";
  cal.layers.push_back({});
  CalibrationRecord rec;
  rec.name = "tb";
  rec.host_info = nlohmann::json{{"world_size", 2}, {"build", "0123abcd"}}.dump();
  causes = likely_causes(run(4, {{"cores", 8}, {"ranks_on_host", 4}, {"build", "4567ef01"}}, config), &rec, &cal);
  EXPECT_FALSE(has(causes, "cores"));
  EXPECT_TRUE(has(causes, "measured with 2 ranks, the run had 4"));
  EXPECT_TRUE(has(causes, "did not run on the emulated test bed"));
  EXPECT_TRUE(has(causes, "timed compute on cuda, the run trained on cpu"));
  EXPECT_TRUE(has(causes, "build 0123abcd, the run by build 4567ef01"));
  EXPECT_EQ(causes.size(), 4u);

  // Everything alike: nothing to blame.
  cal.link_class = "mpi";
  cal.compute_backend = "cpu";
  rec.host_info = nlohmann::json{{"world_size", 4}, {"build", "4567ef01"}}.dump();
  causes = likely_causes(run(4, {{"cores", 8}, {"ranks_on_host", 4}, {"build", "4567ef01"}}, config), &rec, &cal);
  EXPECT_TRUE(causes.empty()) << causes.front();
}

}  // namespace
}  // namespace ddplab
