// Where a simulation's compute time comes from, chosen and said out loud. A sweep's step time is only as
// good as its compute: a run measured with more ranks than cores has inflated compute, and a source picked
// silently ("the newest run") would let the same `simulate` give different compute from one run to the next.
#pragma once
#include <cstdint>
#include <optional>
#include <string>

#include "ddplab/core/scenario.hpp"
#include "ddplab/core/store.hpp"
#include "ddplab/strategies/model_spec.hpp"

namespace ddplab {

struct Calibration;  // calibration.hpp

// Per micro-step compute (forward + backward of one worker's micro-batch) and one optimizer update of the
// whole model, as the simulator takes them.
struct ComputeSource {
  double compute_s = 0, optimizer_s = 0;
  std::string kind;                    // "scenario", "calibration", "run", "flops", "given"
  std::string origin;                  // for people: "measured run #12 (2 ranks on 2 cores)", ...
  std::optional<std::int64_t> run_id;  // kind "run"
};

// spec (`ddplab simulate --compute`):
//   "auto"         the scenario's [cluster].compute_s; else the per-layer times of the calibration the scenario
//                  names, when they measured its model, batch and backend; else the newest completed measured
//                  run of the scenario and strategy, of its model and batch, that was not oversubscribed (one that was
//                  is passed over, and the origin says so; with allow_oversubscribed it is taken, and its origin names
//                  its ranks and cores); else the model's FLOPs at [cluster].device_flops;
//   "calibration"  that calibration's per-layer times (an error when it has none for this model);
//   "run:ID"       measured run ID (an error when it does not exist, is not a completed measured run, or
//                  trained another model or batch; one measured with more ranks than cores on its host is
//                  refused unless allow_oversubscribed, with the reason and the fix);
//   "flops"        batch x the model's forward + backward FLOPs / (device_flops x compute_efficiency);
//   a duration     ("13ms"): that compute per micro-step, [cluster].optimizer_s (or 0) for the optimizer.
// A measured run's means are per micro-step and rank; they are brought back to one worker's micro-step and
// one whole-model update by the strategy's own plans (compute_from_means: dedicated servers compute
// nothing, ZeRO-1 updates 1/n of the model per rank, accumulation updates once per window). Throws InputError for a bad
// spec, InputError when the source it names cannot give a compute time (the message says why).
ComputeSource compute_source(const Scenario&, const StrategyConfig&, const Store&, const std::string& spec = "auto",
                             bool allow_oversubscribed = false);

// A measured run's means per micro-step and rank (its steady blocks), brought back to one worker's micro-step
// and one whole-model update through its own plans, as above: `sc` is the run's scenario (measured_scenario).
ComputeSource compute_from_means(const Scenario& sc, int world_size, double compute_mean, double optimizer_mean);

// A run's step rows with each straggler's compute and optimizer divided by its factor
// (ClusterConfig::compute_factor): the simulator stretches them again, so a run's own straggler must not
// count twice in the compute it is given.
std::vector<StepMetrics> without_stragglers(std::vector<StepMetrics> rows, const ClusterConfig& cluster);

// The model the simulator times: the scenario's, or under [cluster] compute_model = "roofline" each layer's
// forward and backward FLOPs raised to what its memory traffic costs -- its input and output activations
// (in the [train] precision's bytes; twice in backward) at device_mem_bw, as the FLOPs that would take as
// long at device_flops x compute_efficiency -- so that whatever shares compute by FLOPs shares it by time.
// A GEMM's weights are left out (at a sequence's tokens they are compute-bound). MFU and the FLOPs a run
// counts stay model_spec_for's.
ModelSpec simulated_model(const Scenario& sc);
// What [train] recompute adds to compute_s, as a fraction of it (0 without recomputation).
double recomputed_share(const Scenario& sc);

// A calibration's per-layer times summed, and its optimizer.
ComputeSource from_calibration(const Calibration& calibration);

// The scenario and strategy of a stored measured run, from its config JSON (what the trainer stored:
// Scenario::to_json plus "strategy" and "world_size"), as far as the simulator needs them. Throws
// InputError naming what is missing.
Scenario measured_scenario(const RunRow& run);

// What a run's host info says about core sharing: "4 ranks on 2 cores" when oversubscribed, else "".
std::string oversubscription(const std::string& host_info_json);

}  // namespace ddplab
