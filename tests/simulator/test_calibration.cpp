// Calibration: the ping-pong fit recovers a known latency, bandwidth and piecewise efficiency; bad input is
// refused by name; the factors installed in SimGrid reproduce the fitted ping-pong; per-layer times replace
// the FLOP split.
#include <gtest/gtest.h>

#include <cmath>

#include "ddplab/core/error.hpp"
#include "ddplab/simulator/calibration.hpp"
#include "ddplab/simulator/simulator.hpp"

namespace ddplab {
namespace {

constexpr double kFitL = 5e-6, kFitB = 10e9;  // 5 us, 10 GB/s

// Known factors: small messages at full latency and half the bandwidth; a middle band with 3x latency and
// 80% of it; large messages at 10x latency and the full bandwidth (as eager -> rendezvous switches do).
FactorSegment truth(std::uint64_t s) {
  if (s < (64u << 10)) return {0, 1.0, 0.5};
  if (s < (1u << 20)) return {64u << 10, 3.0, 0.8};
  return {1u << 20, 10.0, 1.0};
}

std::vector<PingPongSample> synthetic() {
  std::vector<PingPongSample> x;
  for (std::uint64_t s = 1024; s <= (64ull << 20); s *= 2) {
    const FactorSegment f = truth(s);
    x.push_back({s, f.lat_factor * kFitL + static_cast<double>(s) / (f.bw_factor * kFitB)});
  }
  return x;
}

TEST(CalibrationFit, RecoversLatencyBandwidthAndPiecewiseFactors) {
  const Calibration c = fit_pingpong(synthetic());
  EXPECT_NEAR(c.latency_s, kFitL, 0.01 * kFitL);
  EXPECT_NEAR(c.bandwidth, kFitB, 0.01 * kFitB);
  ASSERT_EQ(c.segments.size(), 3u);
  for (std::uint64_t from : {0ull, 64ull << 10, 1ull << 20}) {
    const FactorSegment& got = c.segment_for(static_cast<double>(from));
    const FactorSegment want = truth(from);
    EXPECT_EQ(got.from_bytes, want.from_bytes);
    EXPECT_NEAR(got.lat_factor, want.lat_factor, 0.01 * want.lat_factor) << "from " << from;
    EXPECT_NEAR(got.bw_factor, want.bw_factor, 0.01 * want.bw_factor) << "from " << from;
  }
  for (const auto& s : c.samples) EXPECT_NEAR(c.predict(static_cast<double>(s.bytes)), s.one_way_s, 1e-3 * s.one_way_s);
}

// Between an interval's last measured size and the next interval's first, times are interpolated.
TEST(CalibrationFit, SizesBetweenIntervalsInterpolateTheirFits) {
  const Calibration c = fit_pingpong(synthetic());
  const double a = c.predict(32768), b = c.predict(65536);  // the first interval's last size, the second's first
  EXPECT_NEAR(a, synthetic()[5].one_way_s, 1e-3 * a);
  EXPECT_NEAR(c.predict(49152), (a + b) / 2, 1e-6 * b);
  EXPECT_NEAR(c.predict(40960), 0.75 * a + 0.25 * b, 1e-6 * b);
}

TEST(CalibrationFit, PlainAlphaBetaIsOneInterval) {
  std::vector<PingPongSample> x;
  for (std::uint64_t s = 1024; s <= (16u << 20); s *= 4) x.push_back({s, kFitL + static_cast<double>(s) / kFitB});
  const Calibration c = fit_pingpong(x);
  ASSERT_EQ(c.segments.size(), 1u);
  EXPECT_NEAR(c.latency_s, kFitL, 1e-3 * kFitL);
  EXPECT_NEAR(c.bandwidth, kFitB, 1e-3 * kFitB);
  EXPECT_NEAR(c.segments[0].lat_factor, 1, 1e-6);
  EXPECT_NEAR(c.segments[0].bw_factor, 1, 1e-6);
}

TEST(CalibrationFit, NoisyDataStaysWithinTheWidenedTolerance) {
  auto x = synthetic();
  for (std::size_t k = 0; k < x.size(); ++k) x[k].one_way_s *= 1 + (static_cast<double>(k % 3) - 1) * 0.03;  // +-3%
  const Calibration c = fit_pingpong(x);
  for (const auto& s : x) EXPECT_NEAR(c.predict(static_cast<double>(s.bytes)), s.one_way_s, 0.05 * s.one_way_s);
}

void expect_error(const std::vector<PingPongSample>& x, const std::string& part) {
  try {
    fit_pingpong(x);
    FAIL() << "no error, expected one containing: " << part;
  } catch (const CalibrationError& e) {
    EXPECT_NE(std::string(e.what()).find(part), std::string::npos) << e.what();
  }
}

TEST(CalibrationFit, DegenerateInputIsAClearError) {
  expect_error({}, "2 or more message sizes, got 0");
  expect_error({{1024, 1e-5}}, "2 or more message sizes, got 1");
  expect_error({{4096, 1e-5}, {1024, 2e-5}}, "strictly increasing, got 1024 B after 4096 B");
  expect_error({{1024, 1e-5}, {1024, 2e-5}}, "strictly increasing");
  expect_error({{1024, 3e-5}, {4096, 2e-5}, {8192, 1e-5}}, "do not grow with size");
  expect_error({{1024, 0}, {4096, 2e-5}}, "positive number of seconds");
}

TEST(CalibrationFit, JsonRoundTrip) {
  Calibration c = fit_pingpong(synthetic());
  c.name = "synthetic";
  c.link_class = "nccl";
  c.compute_backend = "cuda-tf32";
  c.layer_widths = {8, 4, 2};
  c.batch_size = 16;
  c.layers = {{1e-3, 2e-3}, {3e-4, 5e-4}};
  c.optimizer_s = 7e-5;
  const Calibration d = Calibration::from_json(nlohmann::json::parse(c.to_json().dump()));
  EXPECT_EQ(d.to_json(), c.to_json());
  EXPECT_THROW(Calibration::from_json(nlohmann::json{{"latency_s", 1e-6}}), CalibrationError);
  // Stored before the compute backend was recorded: those were all measured on the CPU.
  nlohmann::json old = c.to_json();
  old.erase("compute_backend");
  EXPECT_EQ(Calibration::from_json(old).compute_backend, "cpu");
}

// rank 0 sends `bytes` to rank 1: the one-way half of a ping-pong.
Schedule one_way(std::size_t bytes) {
  Schedule s;
  s.name = "pingpong";
  s.collective = Collective::Allreduce;
  s.world_size = 2;
  s.count = bytes;
  s.ranks.resize(2);
  s.ranks[0].push_back({{{1, {0, bytes}}}, {}});
  s.ranks[1].push_back({{}, {{0, {0, bytes}, RecvMode::Copy}}});
  return s;
}

// Both ranks send `bytes` to each other at once: the exchange `ddplab calibrate` fits by default.
Schedule exchange(std::size_t bytes) {
  Schedule s = one_way(bytes);
  s.name = "exchange";
  s.ranks[0][0].recvs.push_back({1, {0, bytes}, RecvMode::Copy});
  s.ranks[1][0].sends.push_back({0, {0, bytes}});
  return s;
}

constexpr double kLinkLatency = 10e-6, kLinkBandwidth = 1.25e9;  // 10 us, 10 Gbit/s per link of a star

// One-way times of a synthetic platform (a star, links of known latency and bandwidth), simulated message
// by message with SimGrid, then fitted.
std::vector<PingPongSample> simulated(const SimOptions& opt, Schedule (*pattern)(std::size_t)) {
  ClusterConfig cluster;
  cluster.link_latency = kLinkLatency;
  cluster.link_bandwidth = kLinkBandwidth;
  std::vector<PingPongSample> x;
  for (std::size_t s = 1024; s <= (16u << 20); s *= 4)
    x.push_back({s, simulate_schedule(cluster, pattern(s), 1, opt).step_s});
  return x;
}

// A calibration recovers the bandwidth and latency of a synthetic platform from
// simulated measurements of it, within 2%. Pure alpha-beta (CM02, no cross-traffic): a route crosses two
// links, so the one-way latency is 2 x the link's.
TEST(CalibrationFit, RecoversBandwidthAndLatencyOfASyntheticPlatformWithin2Percent) {
  SimOptions opt;
  opt.network_model = "CM02";
  opt.crosstraffic = false;
  const Calibration c = fit_pingpong(simulated(opt, one_way));
  EXPECT_NEAR(c.latency_s, 2 * kLinkLatency, 0.02 * 2 * kLinkLatency);
  EXPECT_NEAR(c.bandwidth, kLinkBandwidth, 0.02 * kLinkBandwidth);
  EXPECT_EQ(c.segments.size(), 1u);
}

// The same from an exchange with SimGrid's cross-traffic on (each flow also carries the acks of the
// opposite one, 5%): fit_exchange takes that share back out, so the link's own bandwidth comes back; a
// simulated exchange with the calibration installed then reproduces the measured one.
TEST(CalibrationFit, ExchangeFitRecoversThePlatformUnderCrossTraffic) {
  SimOptions opt;
  opt.network_model = "CM02";
  opt.crosstraffic = true;
  const auto x = simulated(opt, exchange);
  auto cal = std::make_shared<Calibration>(fit_exchange(x));
  EXPECT_EQ(cal->fitted, "exchange");
  EXPECT_NEAR(cal->latency_s, 2 * kLinkLatency, 0.02 * 2 * kLinkLatency);
  EXPECT_NEAR(cal->bandwidth, kLinkBandwidth, 0.02 * kLinkBandwidth);
  for (const auto& s : x) EXPECT_NEAR(cal->fitted_time(static_cast<double>(s.bytes)), s.one_way_s, 0.02 * s.one_way_s);
  cal->name = "exchange";
  SimOptions with;  // LV08 and cross-traffic, as validate runs
  with.calibration = cal;
  for (const auto& s : x) {
    const double t = simulate_schedule(ClusterConfig{}, exchange(s.bytes), 1, with).step_s;
    EXPECT_NEAR(t, s.one_way_s, 0.02 * s.one_way_s) << s.bytes << " B";
  }
}

TEST(CalibrationInstall, SimulatedPingPongReproducesTheFit) {
  auto cal = std::make_shared<Calibration>(fit_pingpong(synthetic()));
  cal->name = "synthetic";
  SimOptions opt;  // LV08 with cross-traffic, the default: the calibration's callbacks replace its factors
  opt.calibration = cal;
  ClusterConfig cluster;  // its links are replaced by the calibration's
  for (std::size_t bytes : {std::size_t{1024}, std::size_t{16} << 10, std::size_t{64} << 10, std::size_t{256} << 10,
                            std::size_t{1} << 20, std::size_t{48} << 20}) {
    const SimStepResult r = simulate_schedule(cluster, one_way(bytes), 1, opt);
    const double want = cal->predict(static_cast<double>(bytes));
    EXPECT_NEAR(r.step_s, want, 0.01 * want) << bytes << " B";
  }
  // Without the calibration the same message takes LV08's time on the default links: clearly different.
  const SimStepResult plain = simulate_schedule(cluster, one_way(1024), 1, SimOptions{});
  EXPECT_GT(std::abs(plain.step_s - cal->predict(1024)), 0.1 * cal->predict(1024));
}

// rank `from` sends `bytes` to rank `to` in a world of `world` ranks.
Schedule message(std::size_t bytes, int from, int to, int world) {
  Schedule s;
  s.name = "message";
  s.collective = Collective::Allreduce;
  s.world_size = world;
  s.count = bytes;
  s.ranks.resize(static_cast<std::size_t>(world));
  s.ranks[static_cast<std::size_t>(from)].push_back({{{to, {0, bytes}}}, {}});
  s.ranks[static_cast<std::size_t>(to)].push_back({{}, {{from, {0, bytes}, RecvMode::Copy}}});
  return s;
}

// A calibration of a multi-node job has two link classes: a message between two devices of one node takes
// the intra-node fit's time (its links and its factors), one between nodes the main fit's. Two nodes of two
// devices, an NVSwitch and a NIC per device.
TEST(CalibrationInstall, IntraNodeFitDescribesMessagesInsideANode) {
  auto cal = std::make_shared<Calibration>(fit_pingpong(synthetic()));
  cal->name = "two-classes";
  // Inside a node: plain alpha-beta (factors 1 at every size, unlike the main fit's), 1 us and 80 GB/s.
  std::vector<PingPongSample> fast = synthetic();
  for (auto& x : fast) x.one_way_s = 1e-6 + static_cast<double>(x.bytes) / 80e9;
  cal->intra = std::make_shared<Calibration>(fit_pingpong(fast));
  EXPECT_NEAR(cal->intra->bandwidth, 80e9, 0.01 * 80e9);
  EXPECT_EQ(cal->intra->segments.size(), 1u);
  const Calibration round = Calibration::from_json(nlohmann::json::parse(cal->to_json().dump()));
  ASSERT_NE(round.intra, nullptr);
  EXPECT_EQ(round.to_json(), cal->to_json());

  SimOptions opt;
  opt.calibration = cal;
  ClusterConfig cluster;
  cluster.devices_per_node = 2;
  cluster.intra = "nvswitch";
  cluster.nics = "per_device";
  for (std::size_t bytes : {std::size_t{1024}, std::size_t{64} << 10, std::size_t{1} << 20, std::size_t{48} << 20}) {
    const double in_node = simulate_schedule(cluster, message(bytes, 0, 1, 4), 1, opt).step_s;
    const double across = simulate_schedule(cluster, message(bytes, 0, 2, 4), 1, opt).step_s;
    const double want_in = cal->intra->predict(static_cast<double>(bytes)),
                 want_across = cal->predict(static_cast<double>(bytes));
    EXPECT_NEAR(in_node, want_in, 0.01 * want_in) << bytes << " B inside a node";
    EXPECT_NEAR(across, want_across, 0.01 * want_across) << bytes << " B across nodes";
  }
  // Without the intra-node fit a message inside the node keeps the scenario's fabric: not the fit's time.
  auto main_only = std::make_shared<Calibration>(*cal);
  main_only->intra = nullptr;
  opt.calibration = main_only;
  const double plain = simulate_schedule(cluster, message(1 << 20, 0, 1, 4), 1, opt).step_s;
  EXPECT_GT(std::abs(plain - cal->intra->predict(1 << 20)), 0.1 * cal->intra->predict(1 << 20));
}

TEST(CalibrationFit, RowsByNodeSplitsPeersOnRankZerosNode) {
  const std::vector<PingPongRow> rows = {{0, 1, 1024, 10, 1e-6}, {0, 2, 1024, 10, 5e-6}, {0, 3, 1024, 10, 1.1e-6}};
  const RowsByNode r = rows_by_node(rows, {"a", "a", "b", "a"});
  ASSERT_EQ(r.intra.size(), 2u);
  EXPECT_EQ(r.intra[0].dst, 1);
  EXPECT_EQ(r.intra[1].dst, 3);
  ASSERT_EQ(r.inter.size(), 1u);
  EXPECT_EQ(r.inter[0].dst, 2);
  EXPECT_THROW(rows_by_node(rows, {"a", "a"}), ddplab::InputError);  // no node for rank 2
}

// `calibrate`'s fit of its link measurements (fit_links): peers on rank 0's node and off it give two link
// classes; the main fit describes the links between nodes, from the exchange samples.
TEST(CalibrationFit, FitLinksSplitsTheNodeAndFitsTheExchange) {
  const std::vector<std::uint64_t> sizes = {1024, 16384, 262144, 4194304};
  auto t = [](double lat, double bw, std::uint64_t b) { return lat + static_cast<double>(b) / bw; };
  LinkMeasurements m;
  m.sizes = sizes;
  m.node_of = {"a", "a", "b", "b"};
  for (std::uint64_t b : sizes) {
    m.pingpong.push_back({0, 1, static_cast<std::int64_t>(b), 10, t(1e-6, 10e9, b)});  // same node
    m.pingpong.push_back({0, 2, static_cast<std::int64_t>(b), 10, t(50e-6, 1e9, b)});  // other node
    m.pingpong.push_back({0, 3, static_cast<std::int64_t>(b), 10, t(50e-6, 1e9, b)});
    m.exchange.push_back({b, t(60e-6, 0.8e9, b)});
  }
  m.link_class = "testbed";
  const LinkFit f = fit_links(m);
  EXPECT_EQ(f.fit.fitted, "ring");
  EXPECT_EQ(f.fit.link_class, "testbed");
  EXPECT_EQ(f.fit.tcp_rendezvous_bytes, 64u * 1024);
  EXPECT_NEAR(f.fit.bandwidth, 0.8e9 * (1 + kSimCrosstrafficShare),
              0.02 * 0.8e9);                       // the exchange, cross-traffic put back
  EXPECT_NEAR(f.pingpong.bandwidth, 1e9, 0.02e9);  // between nodes only
  ASSERT_TRUE(f.fit.intra);
  EXPECT_NEAR(f.fit.intra->bandwidth, 10e9, 0.2e9);
  EXPECT_EQ(f.fit.intra->link_class, "testbed-intra");
  EXPECT_TRUE(f.intra_note.empty());
  // One node: one class, no intra-node fit; a ping-pong fit asked for is the one used.
  m.node_of = {"a", "b", "b", "b"};
  m.fit = "pingpong";
  m.link_class = "mpi";
  const LinkFit p = fit_links(m);
  EXPECT_FALSE(p.fit.intra);
  EXPECT_EQ(p.fit.tcp_rendezvous_bytes, 0u);
  EXPECT_EQ(p.fit.fitted, "pingpong");
  EXPECT_NEAR(p.fit.latency_s, f.pingpong.latency_s, 0.3 * f.pingpong.latency_s);  // medians of 1 fast, 2 slow peers
}

TEST(CalibrationInstall, PerLayerTimesReplaceTheFlopSplit) {
  Scenario sc;
  sc.name = "caltest";
  sc.model.layers = {64, 32, 10};
  sc.train.batch_size = 8;
  StrategyConfig st;  // flat, native: compute, then one allreduce
  auto cal = std::make_shared<Calibration>(fit_pingpong(synthetic()));
  cal->name = "layers";
  cal->layer_widths = sc.model.layers;
  cal->batch_size = 8;
  cal->layers = {{1e-3, 4e-3}, {2e-3, 3e-3}};
  EXPECT_TRUE(calibration_fits_model(*cal, sc));
  SimOptions opt;
  opt.calibration = cal;
  const SimStepResult r = simulate_step(sc, st, 2, 0.5, 0.0, opt);  // compute_s 0.5 s would dominate if used
  EXPECT_NEAR(r.compute_s, 1e-3 + 2e-3 + 4e-3 + 3e-3, 1e-6);
  sc.train.batch_size = 16;
  EXPECT_FALSE(calibration_fits_model(*cal, sc));
  // CPU times describe neither GPU backend, and fp32 times not TF32 GEMMs.
  sc.train.batch_size = 8;
  for (const Backend backend : {Backend::Cuda, Backend::CudaMpi}) {
    sc.train.backend = backend;
    EXPECT_FALSE(calibration_fits_model(*cal, sc)) << backend;
    cal->compute_backend = "cuda";
    EXPECT_TRUE(calibration_fits_model(*cal, sc)) << backend;
    sc.train.tf32 = true;
    EXPECT_FALSE(calibration_fits_model(*cal, sc)) << backend << " tf32";
    EXPECT_EQ(compute_backend_of(sc), "cuda-tf32");
    sc.train.tf32 = false;
    cal->compute_backend = "cpu";
  }
}

TEST(CalibrationInstall, ScenarioNamingAnUnloadedCalibrationIsAnError) {
  Scenario sc;
  sc.name = "caltest";
  sc.model.layers = {64, 32, 10};
  sc.cluster.calibration = "missing";
  try {
    simulate_step(sc, StrategyConfig{}, 2, 0.01, 0.0, SimOptions{});
    FAIL() << "no error";
  } catch (const ddplab::InputError& e) {
    EXPECT_NE(std::string(e.what()).find("calibration \"missing\""), std::string::npos) << e.what();
  }
}

}  // namespace
}  // namespace ddplab
