// Random rotation, scaling and shift of square images ([data] augment_rotate, augment_scale,
// augment_shift), as torchvision's RandomAffine: each image a rank takes in an epoch gets its own draw from
// the seed, the epoch, the image's index in the dataset and its place in the epoch's order, so a run is
// reproducible and a sample drawn twice in an epoch (data.balance = "resample") is transformed two ways.
// The input pipeline applies it on its loader thread, off the step.
#pragma once
#include <cstddef>
#include <cstdint>

namespace ddplab {

struct AugmentConfig {
  double rotate_deg = 0;  // angle drawn uniformly in [-rotate_deg, rotate_deg]
  double scale = 0;       // zoom drawn uniformly in [1 - scale, 1 + scale]
  double shift_px = 0;    // each axis shifted by a draw in [-shift_px, shift_px] pixels
  bool active() const { return rotate_deg > 0 || scale > 0 || shift_px > 0; }
};

// out = in (side x side, row-major) rotated by angle_deg counter-clockwise and zoomed by `zoom` about the
// centre, then shifted by (dx, dy) pixels (+x right, +y down); bilinear, `background` where the source
// falls outside the image. Exact for whole-pixel shifts and quarter turns.
void warp_image(const float* in, float* out, int side, double angle_deg, double zoom, double dx, double dy,
                float background);

// Every image of `count` (side x side each) in place, image i by its draw for (seed, epoch, indices[i],
// first + i): indices[i] is its index in the dataset, first + i its place in the epoch's order.
void augment_images(float* images, int count, int side, const std::size_t* indices, std::size_t first, int epoch,
                    std::uint64_t seed, const AugmentConfig& config, float background);

}  // namespace ddplab
