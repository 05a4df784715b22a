// The fit of codec work timings (fit_codec_work): two terms where a kind has two sizes (a rank-1 product
// costs per matrix element what a rank-4 one does, at a quarter of the FLOPs), non-negative costs, bad
// samples refused by key, and calibrations stored with one term read as they were fitted.
#include <gtest/gtest.h>

#include <array>
#include <cmath>

#include "ddplab/simulator/calibration.hpp"

namespace ddplab {
namespace {

// PowerSGD's shapes, as calibrate probes them: rows x cols at ranks 1 to 8.
std::vector<LocalWork> product_shapes(WorkKind kind) {
  std::vector<LocalWork> v;
  for (auto [n, c, k] : {std::array<std::size_t, 3>{256, 256, 1},
                         {256, 256, 4},
                         {1024, 1024, 1},
                         {1024, 1024, 4},
                         {2048, 1024, 2},
                         {2048, 1024, 8}})
    v.push_back({kind, n, c, k});
  return v;
}

TEST(WorkFit, RecoversBothCostsOfAProduct) {
  const double fixed = 3e-6, per_elem = 1.9e-9, per_flop = 0.1e-9;
  std::vector<WorkSample> samples;
  for (const LocalWork& w : product_shapes(WorkKind::MatMul)) {
    const WorkSize s = work_size(w);
    EXPECT_DOUBLE_EQ(s.units, static_cast<double>(w.n * w.c));
    EXPECT_DOUBLE_EQ(s.extra, 2.0 * static_cast<double>(w.n * w.c * w.k));
    samples.push_back({"matmul", s, fixed + per_elem * s.units + per_flop * s.extra});
  }
  const WorkFit f = fit_codec_work(samples).at("matmul");
  EXPECT_NEAR(f.fixed_s, fixed, 1e-6 * fixed);
  EXPECT_NEAR(f.per_unit_s, per_elem, 1e-6 * per_elem);
  EXPECT_NEAR(f.per_extra_s, per_flop, 1e-6 * per_flop);
  // A rank-1 product of a 1024 x 1024 gradient: 2.1 ms here, where FLOPs alone fitted to the rank-8 shapes
  // would have said a quarter of that.
  const WorkSize r1 = work_size({WorkKind::MatMul, 1024, 1024, 1});
  EXPECT_NEAR(f.seconds(r1), fixed + per_elem * r1.units + per_flop * r1.extra, 1e-9);
}

TEST(WorkFit, OneTermKindsFitALine) {
  std::vector<WorkSample> samples;
  for (std::size_t n : {65536u, 524288u, 2097152u}) {
    const WorkSize s = work_size({WorkKind::Add, n});
    EXPECT_DOUBLE_EQ(s.extra, 0.0);
    samples.push_back({"add", s, 2e-6 + 0.1e-9 * s.units});
  }
  const WorkFit f = fit_codec_work(samples).at("add");
  EXPECT_NEAR(f.fixed_s, 2e-6, 1e-12);
  EXPECT_NEAR(f.per_unit_s, 0.1e-9, 1e-16);
  EXPECT_EQ(f.per_extra_s, 0.0);
}

TEST(WorkFit, TopKSeparatesTheScanFromTheSort) {
  std::vector<WorkSample> samples;
  for (std::size_t n : {65536u, 524288u, 2097152u})
    for (std::size_t k : {n / 10, n / 100}) {
      const WorkSize s = work_size({WorkKind::TopK, n, 0, k});
      EXPECT_DOUBLE_EQ(s.units, static_cast<double>(n));
      EXPECT_DOUBLE_EQ(s.extra, static_cast<double>(k) * std::log2(static_cast<double>(k)));
      samples.push_back({"topk", s, 5e-9 * s.units + 4e-9 * s.extra});
    }
  const WorkFit f = fit_codec_work(samples).at("topk");
  EXPECT_NEAR(f.per_unit_s, 5e-9, 1e-14);
  EXPECT_NEAR(f.per_extra_s, 4e-9, 1e-14);
  EXPECT_NEAR(f.fixed_s, 0.0, 1e-12);
}

TEST(WorkFit, CostsStayNonNegative) {
  // t = -1 us + 2 ns x units: the best line has a negative intercept; the fit goes through the origin
  // instead, with the weighted least-squares slope sum(u t / t^2) / sum(u^2 / t^2).
  std::vector<WorkSample> samples;
  double num = 0, den = 0;
  for (double u : {1000.0, 2000.0, 4000.0}) {
    const double t = -1e-6 + 2e-9 * u;
    samples.push_back({"fill", {u, 0}, t});
    num += u / t, den += u * u / (t * t);
  }
  const WorkFit f = fit_codec_work(samples).at("fill");
  EXPECT_EQ(f.fixed_s, 0.0);
  EXPECT_NEAR(f.per_unit_s, num / den, 1e-9 * num / den);
  // A product whose FLOPs would come out with a negative cost keeps them at zero.
  std::vector<WorkSample> flat;
  for (const LocalWork& w : product_shapes(WorkKind::MatMulNT)) {
    const WorkSize s = work_size(w);
    flat.push_back({"matmul_nt", s, 1e-9 * s.units - 1e-12 * s.extra});
  }
  const WorkFit g = fit_codec_work(flat).at("matmul_nt");
  EXPECT_GE(g.fixed_s, 0.0);
  EXPECT_GT(g.per_unit_s, 0.0);
  EXPECT_EQ(g.per_extra_s, 0.0);
}

TEST(WorkFit, RefusesSamplesItCannotFit) {
  try {
    fit_codec_work({{"divide", {1000, 0}, 1e-6}, {"divide", {1000, 0}, 2e-6}});
    ADD_FAILURE() << "one size accepted";
  } catch (const CalibrationError& e) {
    EXPECT_NE(std::string(e.what()).find("divide: needs samples at 2 sizes"), std::string::npos) << e.what();
  }
  try {
    fit_codec_work({{"sub", {1000, 0}, 1e-6}, {"sub", {2000, 0}, 0.0}});
    ADD_FAILURE() << "a zero time accepted";
  } catch (const CalibrationError& e) {
    EXPECT_NE(std::string(e.what()).find("sub"), std::string::npos) << e.what();
  }
}

TEST(WorkFit, StoredFitsRoundTripAndOneTermFitsKeepTheirTimes) {
  Calibration c;
  c.latency_s = 1e-5, c.bandwidth = 1e9, c.segments = {{0, 1, 1}};
  c.codec_work = {{"matmul", {1e-6, 2e-9, 3e-10}}, {"topk", {4e-6, 5e-9, 6e-9}}, {"add", {0, 1e-10, 0}}};
  const Calibration round = Calibration::from_json(nlohmann::json::parse(c.to_json().dump()));
  EXPECT_EQ(round.to_json(), c.to_json());

  // Before two terms: one per-unit cost, the unit being FLOPs for the products and n + k log2 k for top-k.
  nlohmann::json old = c.to_json();
  for (auto& [key, f] : old.at("codec_work").items()) f.erase("per_extra_s");
  const Calibration legacy = Calibration::from_json(old);
  const LocalWork mm{WorkKind::MatMul, 1024, 1024, 4}, tk{WorkKind::TopK, 1u << 20, 0, 1u << 10},
      add{WorkKind::Add, 4096};
  EXPECT_NEAR(legacy.codec_work.at("matmul").seconds(work_size(mm)), 1e-6 + 2e-9 * work_flops(mm), 1e-15);
  const double tk_units = (1u << 20) + (1u << 10) * 10.0;
  EXPECT_NEAR(legacy.codec_work.at("topk").seconds(work_size(tk)), 4e-6 + 5e-9 * tk_units, 1e-15);
  EXPECT_NEAR(legacy.codec_work.at("add").seconds(work_size(add)), 1e-10 * 4096, 1e-18);

  old["codec_work"]["add"]["per_extra_s"] = -1.0;
  EXPECT_THROW(Calibration::from_json(old), CalibrationError);
}

}  // namespace
}  // namespace ddplab
