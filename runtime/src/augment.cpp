#include "ddplab/runtime/augment.hpp"

#include <cmath>
#include <numbers>
#include <random>
#include <vector>

namespace ddplab {
namespace {

// A uniform double in [-1, 1) from 53 bits of the engine (our own: std's distributions are
// implementation-defined).
double symmetric(std::mt19937_64& rng) { return static_cast<double>(rng() >> 11) * 0x1.0p-52 - 1.0; }

}  // namespace

void warp_image(const float* in, float* out, int side, double angle_deg, double zoom, double dx, double dy,
                float background) {
  const double c = 0.5 * (side - 1), a = angle_deg * std::numbers::pi / 180.0;
  // Round the rotation's cosine and sine at quarter turns, so they map pixels onto pixels exactly.
  auto snap = [](double v) { return std::abs(v - std::round(v)) < 1e-12 ? std::round(v) : v; };
  const double cs = snap(std::cos(a)) / zoom, sn = snap(std::sin(a)) / zoom;
  for (int y = 0; y < side; ++y)
    for (int x = 0; x < side; ++x) {
      // The source of output pixel (x, y): undo the shift, then the rotation and zoom about the centre.
      const double u = x - dx - c, v = y - dy - c;
      const double sx = cs * u - sn * v + c, sy = sn * u + cs * v + c;
      const double fx = std::floor(sx), fy = std::floor(sy);
      const int x0 = static_cast<int>(fx), y0 = static_cast<int>(fy);
      const double tx = sx - fx, ty = sy - fy;
      auto at = [&](int px, int py) -> double {
        return px < 0 || py < 0 || px >= side || py >= side ? background : in[py * side + px];
      };
      const double top = at(x0, y0) + tx * (at(x0 + 1, y0) - at(x0, y0));
      const double bottom = at(x0, y0 + 1) + tx * (at(x0 + 1, y0 + 1) - at(x0, y0 + 1));
      out[y * side + x] = static_cast<float>(top + ty * (bottom - top));
    }
}

void augment_images(float* images, int count, int side, const std::size_t* indices, std::size_t first, int epoch,
                    std::uint64_t seed, const AugmentConfig& config, float background) {
  if (!config.active()) return;
  const std::size_t pixels = static_cast<std::size_t>(side) * static_cast<std::size_t>(side);
  std::vector<float> source(pixels);
  for (int i = 0; i < count; ++i) {
    std::mt19937_64 rng(
        seed ^ (0x6a09e667f3bcc909ull * (static_cast<std::uint64_t>(epoch) + 1)) ^
        (0xbb67ae8584caa73bull * (static_cast<std::uint64_t>(indices[i]) + 1)) ^
        (0x3c6ef372fe94f82bull * (static_cast<std::uint64_t>(first) + static_cast<std::uint64_t>(i) + 1)));
    const double angle = config.rotate_deg * symmetric(rng), zoom = 1.0 + config.scale * symmetric(rng);
    const double dx = config.shift_px * symmetric(rng), dy = config.shift_px * symmetric(rng);
    float* img = images + static_cast<std::size_t>(i) * pixels;
    source.assign(img, img + pixels);
    warp_image(source.data(), img, side, angle, zoom, dx, dy, background);
  }
}

}  // namespace ddplab
