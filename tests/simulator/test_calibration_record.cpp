// What `ddplab calibrate` makes of its measurements in the simulator: the fits named after the calibration,
// its per-layer compute, and the record the results store keeps.
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>

#include "ddplab/core/error.hpp"
#include "ddplab/core/store.hpp"
#include "ddplab/simulator/calibration.hpp"
#include "temp_dir.hpp"

namespace ddplab {
namespace {

using test::TempDir;

// Rank 0 and three peers, two of them on its node: an inter-node fit with an intra-node one.
LinkMeasurements two_nodes() {
  LinkMeasurements m;
  m.sizes = {1024, 16384, 262144, 4194304};
  m.node_of = {"a", "a", "a", "b"};
  for (const std::uint64_t b : m.sizes) {
    const auto s = static_cast<double>(b);
    m.pingpong.push_back({0, 1, static_cast<std::int64_t>(b), 10, 1e-6 + s / 10e9});
    m.pingpong.push_back({0, 2, static_cast<std::int64_t>(b), 10, 1e-6 + s / 10e9});
    m.pingpong.push_back({0, 3, static_cast<std::int64_t>(b), 10, 50e-6 + s / 1e9});
    m.exchange.push_back({b, 60e-6 + s / 0.8e9});
  }
  return m;
}

TEST(CalibrationRecord, FitsAreNamedAfterTheCalibration) {
  const LinkFit f = fit_named_links(two_nodes(), "lab");
  EXPECT_EQ(f.fit.name, "lab");
  EXPECT_EQ(f.pingpong.name, "lab (ping-pong)");
  ASSERT_TRUE(f.fit.intra);
  EXPECT_EQ(f.fit.intra->name, "lab (intra-node)");
  // The fits themselves are fit_links' own.
  const LinkFit plain = fit_links(two_nodes());
  EXPECT_DOUBLE_EQ(f.fit.bandwidth, plain.fit.bandwidth);
  EXPECT_DOUBLE_EQ(f.fit.intra->latency_s, plain.fit.intra->latency_s);
}

TEST(CalibrationRecord, MlpComputeIsOneTimePerLayer) {
  Calibration c;
  set_mlp_compute(c, "cpu", {784, 256, 10}, 64, {1e-3, 2e-4}, {3e-3, 4e-4}, 5e-4);
  EXPECT_EQ(c.compute_backend, "cpu");
  EXPECT_EQ(c.layer_widths, (std::vector<int>{784, 256, 10}));
  EXPECT_EQ(c.batch_size, 64);
  ASSERT_EQ(c.layers.size(), 2u);
  EXPECT_DOUBLE_EQ(c.layers[1].forward_s, 2e-4);
  EXPECT_DOUBLE_EQ(c.layers[0].backward_s, 3e-3);
  EXPECT_DOUBLE_EQ(c.optimizer_s, 5e-4);
  // Set again: replaced, not appended.
  set_mlp_compute(c, "cuda", {8, 4}, 2, {1e-6}, {2e-6}, 0);
  EXPECT_EQ(c.layers.size(), 1u);
  EXPECT_THROW(set_mlp_compute(c, "cpu", {784, 256, 10}, 64, {1e-3}, {3e-3}, 0), InternalError);
}

TEST(CalibrationRecord, StoresTheFitWithItsJobAndReadsBack) {
  LinkFit f = fit_named_links(two_nodes(), "lab");
  set_mlp_compute(f.fit, "cpu", {8, 4}, 2, {1e-6}, {2e-6}, 3e-6);
  CalibrationJob job;
  job.host_info = R"({"host": "h0", "ranks": 4})";
  job.world_size = 4;
  job.backend = Backend::Cpu;
  job.testbed = {{"hosts", 4}, {"rate", "1gbit"}};
  job.bench_ids = {7, 8};
  job.scenario = "ci-small";
  const CalibrationRecord rec = calibration_record(f, job);
  EXPECT_EQ(rec.name, "lab");
  const auto host = nlohmann::json::parse(rec.host_info);
  EXPECT_EQ(host["host"], "h0");
  EXPECT_EQ(host["world_size"], 4);
  EXPECT_EQ(host["backend"], "cpu");
  EXPECT_EQ(host["testbed"]["rate"], "1gbit");
  const auto fit = nlohmann::json::parse(rec.fit_json);
  EXPECT_EQ(fit["bench_ids"], (std::vector<std::int64_t>{7, 8}));
  EXPECT_EQ(fit["scenario"], "ci-small");
  EXPECT_DOUBLE_EQ(fit["pingpong"]["bandwidth"].get<double>(), f.pingpong.bandwidth);  // beside a ring fit
  const Calibration back = Calibration::from_json(fit);
  EXPECT_EQ(back.fitted, "ring");
  EXPECT_DOUBLE_EQ(back.bandwidth, f.fit.bandwidth);
  ASSERT_EQ(back.layers.size(), 1u);
  ASSERT_TRUE(back.intra);

  // Through the store, as `ddplab validate` and scenarios load it.
  TempDir dir;
  Store store(dir.file("r.db"));
  store.add_calibration(rec, {{0, 1, 1024, 10, 1e-6}});
  const auto loaded = load_calibration(store, "lab");
  EXPECT_DOUBLE_EQ(loaded->latency_s, f.fit.latency_s);
  EXPECT_EQ(store.pingpong_rows(store.calibration("lab")->id).size(), 1u);

  // Neither test bed, benches nor scenario; a ping-pong fit has no second ping-pong entry.
  LinkMeasurements m = two_nodes();
  m.fit = "pingpong";
  const CalibrationRecord plain = calibration_record(fit_named_links(m, "pp"), {R"({})", 2, Backend::Cpu, {}, {}, ""});
  const auto host2 = nlohmann::json::parse(plain.host_info);
  const auto fit2 = nlohmann::json::parse(plain.fit_json);
  EXPECT_FALSE(host2.contains("testbed"));
  EXPECT_FALSE(fit2.contains("bench_ids"));
  EXPECT_FALSE(fit2.contains("scenario"));
  EXPECT_FALSE(fit2.contains("pingpong"));
}

}  // namespace
}  // namespace ddplab
