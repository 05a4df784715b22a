// See memory.hpp.
#include "ddplab/strategies/memory.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <tuple>

#include <fmt/format.h>

#include "ddplab/core/error.hpp"
#include "ddplab/core/units.hpp"
#include "ddplab/strategies/model_library.hpp"
#include "ddplab/strategies/stages.hpp"

namespace ddplab {

std::vector<std::pair<std::string, double>> DeviceMemory::parts() const {
  return {{"parameters", parameters},
          {"gradients", gradients},
          {"optimizer", optimizer},
          {"codec", codec},
          {"activations", activations}};
}

namespace {
constexpr double kFloat = sizeof(float);

// Per sample, layers [first, end) of a model: what a microbatch that ran its forward keeps for backward
// (`kept`), and the most it holds while its backward runs (`peak`). Without recomputation every layer's
// output is kept, and peak = kept. With it, a numbered block keeps only its input (the block's before it,
// or the chunk's input received from the previous stage), and the backward of block b holds the inputs
// kept up to b and all of b's recomputed outputs; a layer of no block keeps its output, and its input
// when that is a block's output.
struct HeldActivations {
  double kept = 0, peak = 0;
};
HeldActivations held_activations(const ModelSpec& model, int first, int end, double input_bytes, bool recompute) {
  HeldActivations h;
  auto output = [&](int l) { return model.layers[static_cast<std::size_t>(l)].activation_bytes; };
  auto after_block = [&](int l) { return recompute && l > first && model.block_start(l - 1) >= 0; };
  for (int l = first; l < end;) {
    const int b0 = recompute ? model.block_start(l) : -1;
    if (after_block(l)) h.kept += output(l - 1);
    if (b0 < 0) {
      h.kept += output(l++);
      h.peak = std::max(h.peak, h.kept);
      continue;
    }
    if (l == first) h.kept += input_bytes;
    double block = 0;
    for (; l < end && model.block_start(l) == b0; ++l) block += output(l);
    h.peak = std::max(h.peak, h.kept + block);
  }
  h.peak = std::max(h.peak, h.kept);
  return h;
}

// ZeRO-3: the buckets whole at once at the plan's peak, walking its ops in order (AllGather makes one whole,
// Reshard gives it back); empty for the other stages.
std::vector<int> whole_at_peak(const Strategy& strategy) {
  if (strategy.policy().zero < 3) return {};
  const StepPlan plan = strategy.plan(strategy.config().accumulate_steps - 1);
  std::vector<int> whole, peak;
  std::size_t elements = 0, most = 0;
  for (const PlanOp& op : plan.ops) {
    if (op.kind != OpKind::AllGather && op.kind != OpKind::Reshard) continue;
    const auto it = std::find(whole.begin(), whole.end(), op.index);
    const std::size_t count = strategy.bucketing().buckets.at(static_cast<std::size_t>(op.index)).count;
    if (op.kind == OpKind::AllGather && it == whole.end()) whole.push_back(op.index), elements += count;
    if (op.kind == OpKind::Reshard && it != whole.end()) whole.erase(it), elements -= count;
    if (elements > most) most = elements, peak = whole;
  }
  return peak;
}

// The parts that differ between ranks: the optimizer state of what a rank updates (under ZeRO-2 the
// gradients, of which it keeps that part only; under ZeRO-3 the parameters too, but for the buckets in
// `whole`), and a worker's activations.
void rank_parts(const Strategy& strategy, int rank, const OptimizerInfo& optimizer, const std::vector<int>& whole,
                DeviceMemory& m) {
  double updated = 0;  // what the runtime's OptimizerState holds for this rank
  for (const Chunk& c : strategy.optimizer_ranges(rank)) updated += static_cast<double>(c.count);
  m.optimizer = kFloat * updated * (optimizer.state_slots + (optimizer.scratch ? 1 : 0));
  const auto all = static_cast<double>(strategy.model().parameter_count());
  m.gradients = kFloat * (strategy.policy().zero >= 2 ? updated : all);
  m.parameters = kFloat * all;
  if (strategy.policy().zero >= 3) {
    double gathered = 0;  // the rest of each whole bucket beyond this rank's shard
    for (int b : whole)
      gathered += static_cast<double>(strategy.bucketing().buckets.at(static_cast<std::size_t>(b)).count -
                                      strategy.shard(b, rank).count);
    m.parameters = kFloat * (updated + gathered);
  }
  m.activations = 0;
  if (!strategy.is_worker(rank)) return;
  const StrategyContext& ctx = strategy.context();
  const PipelineStage& pipe = ctx.pipeline;
  const double scale = static_cast<double>(elem_bytes(ctx.activations)) / kFloat;  // the tables' sizes are fp32
  if (!pipe.schedule) {
    const HeldActivations h =
        held_activations(strategy.model(), 0, static_cast<int>(strategy.model().layers.size()), 0, ctx.recompute);
    m.activations = scale * ctx.batch_size * h.peak;
    return;
  }
  // A pipeline stage holds the activations of the microbatch-chunks whose forward has run and whose
  // backward has not, at most peak_in_flight of them at once, one of them in its backward; they are
  // counted at its largest chunk's sizes.
  HeldActivations most;
  for (const StageChunk& c : pipe.chunks) {
    const HeldActivations h = held_activations(strategy.model(), c.first, c.end, c.input_bytes, ctx.recompute);
    most.kept = std::max(most.kept, h.kept), most.peak = std::max(most.peak, h.peak);
  }
  const int micro = ctx.batch_size / pipe.shape.microbatches;
  const int in_flight = peak_in_flight(pipe.schedule->order(pipe.shape, pipe.stage));
  m.activations = scale * micro * (most.kept * (in_flight - 1) + most.peak);
}

// One rank's memory, the ZeRO-3 units whole at the peak given (whole_at_peak walks a plan: once per strategy).
DeviceMemory rank_memory(const Strategy& strategy, int rank, const OptimizerInfo& optimizer, std::int64_t step,
                         const std::vector<int>& whole) {
  DeviceMemory m;
  for (const Bucket& b : strategy.bucketing().buckets)
    m.codec += static_cast<double>(strategy.codec().state_bytes(b.layout, strategy.context().world_size, step));
  rank_parts(strategy, rank, optimizer, whole, m);
  return m;
}

}  // namespace

DeviceMemory device_memory(const Strategy& strategy, int rank, const OptimizerInfo& optimizer, std::int64_t step) {
  return rank_memory(strategy, rank, optimizer, step, whole_at_peak(strategy));
}

std::pair<int, DeviceMemory> largest_device_memory(const Strategy& strategy, const OptimizerInfo& optimizer,
                                                   std::int64_t step) {
  const std::vector<int> whole = whole_at_peak(strategy);
  std::pair<int, DeviceMemory> best{0, rank_memory(strategy, 0, optimizer, step, whole)};
  if (strategy.policy().shards == Shards::None) return best;  // every rank alike
  DeviceMemory m = best.second;
  for (int r = 1; r < strategy.context().world_size; ++r) {
    rank_parts(strategy, r, optimizer, whole, m);
    if (m.total() > best.second.total()) best = {r, m};
  }
  return best;
}

std::string describe_memory(const DeviceMemory& m) {
  std::string parts;
  for (const auto& [name, bytes] : m.parts())
    if (bytes > 0) parts += (parts.empty() ? "" : ", ") + name + " " + format_bytes(bytes);
  return format_bytes(m.total()) + (parts.empty() ? "" : " (" + parts + ")");
}

std::string MemoryCheck::describe() const {
  if (!capacity)
    return fmt::format("{} on rank {}; no cluster.device_memory to check it against", describe_memory(memory), rank);
  if (fits())
    return fmt::format("{} on rank {}, fits in the {} of cluster.device_memory", describe_memory(memory), rank,
                       format_bytes(*capacity));
  return fmt::format("OUT OF MEMORY: rank {} needs {}, more than the {} of cluster.device_memory", rank,
                     describe_memory(memory), format_bytes(*capacity));
}

MemoryCheck check_memory(const Scenario& scenario, const StrategyConfig& config, int world, int ranks_per_node) {
  const OptimizerInfo* optimizer = find_optimizer(scenario.train.optimizer);
  if (!optimizer) throw InputError("unknown optimizer \"" + scenario.train.optimizer + "\"");
  const ScenarioStages split = scenario_stages(scenario, world, ranks_per_node);
  MemoryCheck c;
  for (std::size_t s = 0; s < split.stages.size(); ++s) {  // each stage's most loaded rank of its DP group
    const Strategy strategy(config, split.stages[s].model, split.stages[s].context);
    const auto [local, memory] = largest_device_memory(strategy, *optimizer, std::numeric_limits<std::int64_t>::max());
    if (s == 0 || memory.total() > c.memory.total())
      c.rank = split.layout.rank({0, static_cast<int>(s), local}), c.memory = memory;
  }
  c.capacity = scenario.cluster.device_memory;
  return c;
}

}  // namespace ddplab
