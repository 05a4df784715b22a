#include "ddplab/runtime/elastic.hpp"

#include <algorithm>

#include <fmt/format.h>

#include "parameter_order.hpp"

namespace ddplab {
namespace {

// Each parameter where the strategy's bucket layout puts it (grad_offset).
std::vector<ParamInfo> layout_of(const Strategy& s) {
  std::vector<ParamInfo> layout;
  const auto& params = s.model().params;
  for (std::size_t i = 0; i < params.size(); ++i)
    layout.push_back({params[i].name, s.bucketing().grad_offset[i], params[i].count(), params[i].layer});
  return layout;
}

}  // namespace

Checkpoint elastic_checkpoint(const std::vector<Checkpoint>& old, const Strategy& old_strategy) {
  if (old.empty()) throw CheckpointError("elastic resume: no checkpoint files");
  const std::size_t n = old_strategy.model().parameter_count();
  if (static_cast<int>(old.size()) != old_strategy.context().world_size)
    throw CheckpointError(
        fmt::format("elastic resume: {} files for a world of {}", old.size(), old_strategy.context().world_size));
  const Checkpoint& first = old.front();
  Checkpoint out;
  out.meta = first.meta;
  out.tensors["params"] = first.tensor("params", n, "rank 0's checkpoint");
  if (first.tensors.count("buffers")) out.tensors["buffers"] = first.tensors.at("buffers");
  const bool sharded = old_strategy.policy().shards != Shards::None;
  const std::vector<ParamInfo> layout = layout_of(old_strategy);
  for (int slot = 0; first.tensors.count("optimizer." + std::to_string(slot)); ++slot) {
    const std::string name = "optimizer." + std::to_string(slot);
    if (!sharded) {
      out.tensors[name] = first.tensor(name, n, "rank 0's checkpoint");
      continue;
    }
    std::vector<float> whole(n, 0.0f);
    for (std::size_t r = 0; r < old.size(); ++r) {
      const std::vector<float> mine =
          from_parameter_order(old[r].tensor(name, n, fmt::format("rank {}'s checkpoint", r)), layout);
      for (const Bucket& b : old_strategy.bucketing().buckets) {
        const Chunk c = old_strategy.shard(b.id, static_cast<int>(r));
        const auto from = static_cast<std::ptrdiff_t>(b.offset + c.offset);
        std::copy(mine.begin() + from, mine.begin() + from + static_cast<std::ptrdiff_t>(c.count),
                  whole.begin() + from);
      }
    }
    out.tensors[name] = to_parameter_order(whole, layout);
  }
  return out;
}

std::int64_t elastic_step(std::int64_t old_step, int old_workers, int new_workers, int window) {
  const std::int64_t step = old_step * old_workers / std::max(1, new_workers);
  return step / window * window;
}

}  // namespace ddplab
