// Image augmentation: the warp against exact cases (whole-pixel shifts, quarter turns, zoom 1), the
// draws reproducible per (seed, epoch, sample, place in the epoch), and the input pipeline applying them on
// its loader thread.
#include <gtest/gtest.h>

#include <cmath>
#include <numeric>

#include "ddplab/core/error.hpp"
#include "ddplab/runtime/augment.hpp"
#include "ddplab/runtime/input_pipeline.hpp"

namespace ddplab {
namespace {

constexpr int kSide = 6;
constexpr float kBg = -1.0f;

std::vector<float> ramp() {
  std::vector<float> img(kSide * kSide);
  std::iota(img.begin(), img.end(), 0.0f);
  return img;
}
float at(const std::vector<float>& img, int x, int y) { return img[static_cast<std::size_t>(y * kSide + x)]; }

TEST(Augment, WarpIsExactForShiftsQuarterTurnsAndNoZoom) {
  const std::vector<float> in = ramp();
  std::vector<float> out(in.size());
  warp_image(in.data(), out.data(), kSide, 0, 1, 0, 0, kBg);
  EXPECT_EQ(out, in);
  warp_image(in.data(), out.data(), kSide, 0, 1, 2, -1, kBg);  // two right, one up
  for (int y = 0; y < kSide; ++y)
    for (int x = 0; x < kSide; ++x) {
      const int sx = x - 2, sy = y + 1;
      const float want = sx < 0 || sy >= kSide ? kBg : at(in, sx, sy);
      EXPECT_EQ(at(out, x, y), want) << x << "," << y;
    }
  // A quarter turn counter-clockwise: the top row becomes the left column, read bottom to top.
  warp_image(in.data(), out.data(), kSide, 90, 1, 0, 0, kBg);
  for (int y = 0; y < kSide; ++y)
    for (int x = 0; x < kSide; ++x) EXPECT_FLOAT_EQ(at(out, x, y), at(in, kSide - 1 - y, x)) << x << "," << y;
  // Zoom 2 about the centre: the centre pixel's neighbourhood spreads, the corners come from inside.
  warp_image(in.data(), out.data(), kSide, 0, 2, 0, 0, kBg);
  EXPECT_FLOAT_EQ(at(out, 0, 0), 1.25f * 6 + 1.25f);  // the ramp at source (1.25, 1.25), bilinear
}

TEST(Augment, EachDrawDependsOnSeedEpochSampleAndPlace) {
  const AugmentConfig cfg{15, 0.1, 2};
  const std::vector<float> r = ramp();
  auto one = [&](std::size_t index, std::size_t place, int epoch, std::uint64_t seed, const AugmentConfig& c) {
    std::vector<float> img = r;
    augment_images(img.data(), 1, kSide, &index, place, epoch, seed, c, kBg);
    return img;
  };
  const std::vector<float> base = one(7, 3, 1, 5, cfg);
  EXPECT_NE(base, r);
  EXPECT_EQ(base, one(7, 3, 1, 5, cfg)) << "reproducible";
  // A batch's images take their places from `first` on: the same draws as one at a time.
  std::vector<float> batch(2 * kSide * kSide);
  std::copy(r.begin(), r.end(), batch.begin());
  std::copy(r.begin(), r.end(), batch.begin() + kSide * kSide);
  const std::size_t idx[2] = {9, 7};
  augment_images(batch.data(), 2, kSide, idx, 2, 1, 5, cfg, kBg);
  EXPECT_TRUE(std::equal(base.begin(), base.end(), batch.begin() + kSide * kSide));
  // Another place (a resampled duplicate), epoch, seed or image: another draw.
  EXPECT_NE(base, one(7, 4, 1, 5, cfg));
  EXPECT_NE(base, one(7, 3, 2, 5, cfg));
  EXPECT_NE(base, one(7, 3, 1, 6, cfg));
  EXPECT_NE(base, one(8, 3, 1, 5, cfg));
  EXPECT_EQ(one(7, 3, 1, 5, AugmentConfig{}), r);  // off
}

TEST(Augment, InputPipelineAugmentsOnItsLoaderThread) {
  Dataset d;
  d.features = kSide * kSide;
  d.classes = 2;
  for (int i = 0; i < 4; ++i) {
    const auto img = ramp();
    d.images.insert(d.images.end(), img.begin(), img.end());
    d.labels.push_back(i % 2);
  }
  auto ops = make_ops("cpu");
  DistributedSampler sampler(d.size(), 0, 1, 3, /*shuffle=*/false);
  InputPipeline plain(*ops, d, 2), augmented(*ops, d, 2);
  const AugmentConfig cfg{30, 0, 1};
  augmented.set_augment(cfg, kSide, kBg, 9);
  for (InputPipeline* p : {&plain, &augmented}) p->plan(sampler, 1, 0);
  EXPECT_EQ(plain.load_step(0), 2);
  EXPECT_EQ(augmented.load_step(0), 2);
  plain.ready(), augmented.ready();
  std::vector<float> a(2 * d.features), b(2 * d.features), want(2 * d.features);
  ops->to_host(a.data(), plain.x(0), a.size());
  ops->to_host(b.data(), augmented.x(0), b.size());
  std::copy(d.images.begin(), d.images.begin() + 2 * d.features, want.begin());
  EXPECT_EQ(a, want);
  const std::size_t idx[2] = {0, 1};
  augment_images(want.data(), 2, kSide, idx, 0, 0, 9, cfg, kBg);
  EXPECT_EQ(b, want);
  EXPECT_GT(augmented.augment_seconds(), 0.0);
  EXPECT_EQ(plain.augment_seconds(), 0.0);
  EXPECT_THROW(plain.set_augment(cfg, 5, kBg, 9), ddplab::InputError);  // 36 features are not 5 x 5
}

}  // namespace
}  // namespace ddplab
