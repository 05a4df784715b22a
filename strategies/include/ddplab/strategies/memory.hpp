// The memory a rank of a strategy keeps on its device while it trains, part by part: what ddplab's runtime
// allocates for it (fp32 parameters, gradients and optimizer state; the codec's state; the activations a
// batch keeps for backward: in 16 bits under [train] precision = "bf16" or "fp16", and with recompute =
// "full" each numbered block's input plus one block's outputs at a time), and what the simulator holds against
// `cluster.device_memory`. One definition, built from the registries: the optimizer's state slots, the policy's shards
// (Strategy::optimizer_ranges) and the codec's state_bytes.
//
// Held between steps: under ZeRO-2 (PolicyInfo::zero) a rank's gradients are its shard, the pages it gave
// back after each bucket's reduce-scatter being taken again by the next backward (a transient, as below).
// Under ZeRO-3 its parameters are its shard plus the buckets whole at once at the step's peak: walking the
// plan in order, each AllGather makes a bucket whole and its Reshard gives it back (with prefetch, two units
// and the ones the forward ends with); between steps the shard alone.
// Left out: buffers a step allocates and frees (a codec's wire buffers), a model's backward scratch (the
// MLP's two layer-wide buffers), the input batches, the communicator's own buffers (NCCL's, MPI's) and the
// backend's workspace (cuBLAS). The runtime sizes its activation buffers for the larger of the training
// batch and its evaluation batch, and a dedicated parameter server allocates them too; the model counts the
// training batch, on workers.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ddplab/strategies/optimizer.hpp"
#include "ddplab/strategies/strategy.hpp"

namespace ddplab {

struct DeviceMemory {
  double parameters = 0;   // 4 bytes per parameter: every rank holds the whole model (ZeRO-3: above)
  double gradients = 0;    // 4 bytes per parameter (of the rank's shard under ZeRO-2)
  double optimizer = 0;    // the optimizer's state slots (and scratch) for the parameters this rank updates
  double codec = 0;        // what the codec keeps between steps, over the buckets (Codec::state_bytes)
  double activations = 0;  // what backward needs of the layers' outputs (LayerSpec::activation_bytes; above)
  double total() const { return parameters + gradients + optimizer + codec + activations; }
  // The parts by name, in the order above ("parameters", "gradients", "optimizer", "codec", "activations").
  std::vector<std::pair<std::string, double>> parts() const;
};

// Rank `rank` of the strategy, once it has run optimizer step `step` (a codec's state may start later:
// PowerSGD's start_iter). Its batch is the strategy context's; a dedicated parameter server keeps no
// activations (it runs no forward).
DeviceMemory device_memory(const Strategy& strategy, int rank, const OptimizerInfo& optimizer, std::int64_t step);

// The rank that needs the most (the first of them), and its memory, over every rank of the strategy.
std::pair<int, DeviceMemory> largest_device_memory(const Strategy& strategy, const OptimizerInfo& optimizer,
                                                   std::int64_t step);

// "4.2 GiB (parameters 1.1 GiB, gradients 1.1 GiB, optimizer 2.0 GiB)": the total, then the parts that
// are not zero.
std::string describe_memory(const DeviceMemory& m);

// The scenario's run of `config` on `world` ranks (ranks_per_node to a node) against cluster.device_memory:
// the device that needs the most, in the steady state (every codec state made), with the scenario's
// optimizer and batch.
struct MemoryCheck {
  int rank = 0;
  DeviceMemory memory;
  std::optional<double> capacity;  // cluster.device_memory, when the scenario gives it
  bool fits() const { return !capacity || memory.total() <= *capacity; }
  // "4.2 GiB (...) on rank 0, fits in the 74.5 GiB of cluster.device_memory", or "OUT OF MEMORY: rank 0
  // needs ..., more than the ..."; without a capacity, the need alone.
  std::string describe() const;
};
MemoryCheck check_memory(const Scenario& scenario, const StrategyConfig& config, int world, int ranks_per_node);

}  // namespace ddplab
