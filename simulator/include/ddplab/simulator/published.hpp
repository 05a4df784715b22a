// The GPU presets checked against public measurements (bench/published/points.toml): each point simulated on
// its preset, with the error. `ddplab bench published` prints the table; a unit test holds its bounds.
#pragma once
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "ddplab/simulator/simulator.hpp"

namespace ddplab {

struct PublishedPoint {
  std::string id;  // row of docs/published-measurements.md
  std::string case_name;
  std::string preset;
  std::string kind;  // "busbw" (GB/s) | "time" (us) | "efficiency" (fraction) | "layout" (TFLOP/s per GPU)
  int world = 0;
  std::uint64_t bytes = 0;  // busbw, time: bytes per rank
  double published = 0;
  bool nvls = true;   // false: the preset's NVLS off (the source's NVLS-off figure)
  std::string model;  // efficiency: the layer table, images per GPU and the one-GPU step; layout: the
  int batch = 0;      // table (a path relative to the points file, or a built-in) and the global batch
  double compute_s = 0;
  // layout: a model-parallel training run, replayed with its TP x PP (x DP = world / (tp pp)), microbatches
  // of `microbatch` samples, the schedule, [train] precision and recompute, and compute at
  // compute_efficiency of the preset's device_flops (fitted once: points.toml's header says to what).
  int tp = 1, pp = 1, microbatch = 1;
  std::string schedule = "1f1b", precision = "fp32", recompute = "none", compute_model = "flops";
  std::string policy = "overlap";  // the DP part's sync policy (DDP's overlap unless the point says)
  double compute_efficiency = 0;
  std::string where;  // file:line of the point
};

// Reads the points file; throws InputError naming file:line and field for a bad entry.
std::vector<PublishedPoint> load_published_points(const std::string& path);

struct PublishedResult {
  PublishedPoint point;
  double predicted = 0;  // in the point's unit
  double error_pct = 0;  // (predicted - published) / published x 100
  std::string detail;    // what was replayed ("nccl:ring/Simple", "step 280.1 ms")
};

// Simulates every point (native NCCL on the preset; DDP overlap for efficiency and layout) with `options`
// (network model "auto": the preset's). A layout's prediction counts, as its sources do, the FLOPs the
// GPUs ran: the model's forward and backward and the recomputed forward. on_result sees each as it is done.
std::vector<PublishedResult> compare_published(const std::vector<PublishedPoint>& points,
                                               const SimOptions& options = {},
                                               const std::function<void(const PublishedResult&)>& on_result = {});

}  // namespace ddplab
