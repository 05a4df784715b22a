// See memory.hpp.
#include "ddplab/strategies/memory.hpp"

#include <algorithm>
#include <limits>
#include <stdexcept>
#include <tuple>

#include <fmt/format.h>

#include "ddplab/core/units.hpp"
#include "ddplab/strategies/model_library.hpp"
#include "ddplab/strategies/stages.hpp"

namespace ddplab {

std::vector<std::pair<std::string, double>> DeviceMemory::parts() const {
  return {{"parameters", parameters}, {"gradients", gradients}, {"optimizer", optimizer}, {"codec", codec},
          {"activations", activations}};
}

namespace {
constexpr double kFloat = sizeof(float);

// The parts that differ between ranks: the optimizer state of what a rank updates (and under ZeRO-2 the
// gradients, of which it keeps that part only), and a worker's activations.
void rank_parts(const Strategy& strategy, int rank, const OptimizerInfo& optimizer, DeviceMemory& m) {
  double updated = 0;  // what the runtime's OptimizerState holds for this rank
  for (const Chunk& c : strategy.optimizer_ranges(rank)) updated += static_cast<double>(c.count);
  m.optimizer = kFloat * updated * (optimizer.state_slots + (optimizer.scratch ? 1 : 0));
  m.gradients = kFloat * (strategy.policy().zero >= 2 ? updated : static_cast<double>(strategy.model().parameter_count()));
  m.activations = 0;
  if (!strategy.is_worker(rank)) return;
  const PipelineStage& pipe = strategy.context().pipeline;
  if (!pipe.schedule) {
    for (const LayerSpec& l : strategy.model().layers) m.activations += l.activation_bytes * strategy.context().batch_size;
    return;
  }
  // A pipeline stage holds the activations of the microbatch-chunks whose forward has run and whose
  // backward has not, at most peak_in_flight of them at once; they are counted at its largest chunk's size.
  double chunk = 0;
  for (const StageChunk& c : pipe.chunks) {
    double bytes = 0;
    for (int l = c.first; l < c.end; ++l) bytes += strategy.model().layers[static_cast<std::size_t>(l)].activation_bytes;
    chunk = std::max(chunk, bytes);
  }
  const int micro = strategy.context().batch_size / pipe.shape.microbatches;
  m.activations = chunk * micro * peak_in_flight(pipe.schedule->order(pipe.shape, pipe.stage));
}
}  // namespace

DeviceMemory device_memory(const Strategy& strategy, int rank, const OptimizerInfo& optimizer, std::int64_t step) {
  DeviceMemory m;
  m.parameters = kFloat * static_cast<double>(strategy.model().parameter_count());
  for (const Bucket& b : strategy.bucketing().buckets)
    m.codec += static_cast<double>(strategy.codec().state_bytes(b.layout, strategy.context().world_size, step));
  rank_parts(strategy, rank, optimizer, m);
  return m;
}

std::pair<int, DeviceMemory> largest_device_memory(const Strategy& strategy, const OptimizerInfo& optimizer, std::int64_t step) {
  std::pair<int, DeviceMemory> best{0, device_memory(strategy, 0, optimizer, step)};
  if (strategy.policy().shards == Shards::None) return best;  // every rank alike
  DeviceMemory m = best.second;
  for (int r = 1; r < strategy.context().world_size; ++r) {
    rank_parts(strategy, r, optimizer, m);
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
  if (!capacity) return fmt::format("{} on rank {}; no cluster.device_memory to check it against", describe_memory(memory), rank);
  if (fits()) return fmt::format("{} on rank {}, fits in the {} of cluster.device_memory", describe_memory(memory), rank,
                                 format_bytes(*capacity));
  return fmt::format("OUT OF MEMORY: rank {} needs {}, more than the {} of cluster.device_memory", rank, describe_memory(memory),
                     format_bytes(*capacity));
}

MemoryCheck check_memory(const Scenario& scenario, const StrategyConfig& config, int world, int ranks_per_node) {
  const OptimizerInfo* optimizer = find_optimizer(scenario.train.optimizer);
  if (!optimizer) throw std::invalid_argument("unknown optimizer \"" + scenario.train.optimizer + "\"");
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
