// Optimizers and learning-rate schedules: registry entries with typed options, as policies and codecs are
// ([train] optimizer / optimizer_options, lr_schedule / lr_schedule_options). An optimizer updates a
// range of parameters in place from their synced gradients and its per-parameter state, through a
// CodecCompute (host loops, or the CUDA backend's kernels), so it is written once for every backend. Each
// follows its PyTorch (or paper) formula; the tests check the first steps against it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ddplab/core/scenario.hpp"
#include "ddplab/strategies/codec.hpp"
#include "ddplab/strategies/options.hpp"

namespace ddplab {

class CodecCompute;

// One update of `count` parameters. Every pointer is in the compute's memory.
struct OptimizerUpdate {
  float* params = nullptr;
  float* grads = nullptr;     // the gradients (overwritten: scaled, weight decay added)
  std::vector<float*> state;  // OptimizerInfo::state_slots buffers of count floats, zero at first
  float* scratch = nullptr;   // count floats of scratch when OptimizerInfo::scratch, else null
  std::size_t count = 0;
  // The tensors the range holds, whole, offsets from its start (per-tensor rules: LARS, LAMB).
  std::vector<TensorSlice> tensors;
  std::int64_t t = 1;  // this update's number, from 1
  float lr = 0;        // this update's learning rate (lr_plan's)
  float weight_decay = 0;
  // Multiplies the gradients before anything else: 1 / K for K accumulated micro-steps, times the global
  // norm clipping factor. 1 = untouched.
  float grad_scale = 1;
};

class Optimizer {
 public:
  virtual ~Optimizer() = default;
  virtual void update(const OptimizerUpdate& u, CodecCompute& compute) const = 0;
};

struct OptimizerInfo {
  std::string name;                 // "sgd", "adam", ...
  std::string summary;              // one line, with the formula's source
  std::vector<OptionSpec> options;  // its optimizer_options
  int state_slots = 0;              // per-parameter float buffers it keeps (momentum, moments)
  bool scratch = false;             // needs a per-parameter scratch buffer
  // Scales each tensor's step by a trust ratio of norms over the whole tensor: an update must hold whole
  // tensors, so a policy that shards the optimizer (ZeRO-1, parameter servers) cannot run it.
  bool per_tensor = false;
  // Memory an update moves per parameter (bytes read and written, fp32): the simulator's optimizer time
  // without a measurement is this over the device's memory bandwidth.
  double bytes_per_param = 0;
  std::unique_ptr<Optimizer> (*make)(const OptionValues&) = nullptr;
};
const std::vector<OptimizerInfo>& optimizers();
struct PolicyInfo;  // strategy.hpp
// Whether the optimizer can run under the policy: a per-tensor one needs every update to hold whole
// tensors, which a policy that shards the update (ZeRO-1, parameter servers) does not give it.
bool optimizer_runs_with(const OptimizerInfo& optimizer, const PolicyInfo& policy);
const OptimizerInfo* find_optimizer(const std::string& name);
// Throws InputError naming the optimizer and the bad option (or the known optimizers).
std::unique_ptr<Optimizer> make_optimizer(const std::string& name, const OptionValues& options);

// ---- learning-rate schedules ----

// The decay after warm-up: lr times factor(t, total), t the update number after warm-up from 0, total the
// updates after warm-up (at least 1).
struct LrScheduleInfo {
  std::string name;  // "constant", "cosine", "step"
  std::string summary;
  std::vector<OptionSpec> options;  // its lr_schedule_options
  double (*factor)(const OptionValues& options, std::int64_t t, std::int64_t total) = nullptr;
};
const std::vector<LrScheduleInfo>& lr_schedules();
const LrScheduleInfo* find_lr_schedule(const std::string& name);

// A run's learning rate at every update: the scaling rule, the warm-up and the schedule together.
struct LrPlan {
  double base = 0;  // [train].lr, meant for base_batch
  double peak = 0;  // base scaled to the global batch (lr_scale)
  int global_batch = 0, base_batch = 0;
  std::string scale_rule = "none";  // "none" | "linear" | "sqrt"
  int warmup = 0;                   // updates of linear warm-up: update t < warmup gets peak * (t + 1) / warmup
  std::string schedule = "constant";
  OptionValues schedule_options;
  std::int64_t total = 1;             // updates in the run
  double lr(std::int64_t t) const;    // update t, from 0
  static LrPlan constant(double lr);  // the same rate at every update
  // "lr 0.05 x 4 (linear scaling: global batch 256 / 64) = 0.2, warm-up 100 updates, cosine decay over 838".
  std::string describe() const;
};
// global_batch: samples per update over all workers (batch x workers x accumulate_steps); total_updates:
// the run's optimizer updates. Throws InputError for a bad schedule name or option.
LrPlan make_lr_plan(const TrainConfig& train, int global_batch, std::int64_t total_updates);

// The update after each sync, as an executor runs it: a registry optimizer at the lr plan's rate.
struct OptimizerConfig {
  std::string name = "sgd";
  OptionValues options;  // its optimizer_options
  float weight_decay = 0.0f;
  LrPlan lr = LrPlan::constant(0.05);
  // > 0: clip the global gradient norm to it. The strategy's plan must then hold the norm's ops
  // (StrategyContext::clip_grad_norm), which the executor checks.
  double clip_grad_norm = 0;
};
// [train]'s optimizer, lr schedule and clipping, for updates of global_batch samples, total_updates of them.
OptimizerConfig optimizer_config(const TrainConfig& train, int global_batch, std::int64_t total_updates);

// Checks [train]'s optimizer, lr_schedule and their options against the registries, and the optimizer
// against every [[strategy]] (a per-tensor optimizer with a sharding policy). Throws ScenarioError citing
// the file:line:col of the offending value.
void validate_train(const Scenario& scenario);

}  // namespace ddplab
