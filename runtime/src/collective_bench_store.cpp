// Recording a collective bench in the results store (apart from collective_bench.cpp, which builds
// without SQLite on the GPU check machine).
#include <nlohmann/json.hpp>

#include "ddplab/core/store.hpp"
#include "ddplab/core/version.hpp"
#include "ddplab/runtime/collective_bench.hpp"

namespace ddplab {

std::int64_t begin_collective_bench(Store& store, const CollectiveBenchOptions& opt, int world_size,
                                    const nlohmann::json& extra) {
  nlohmann::json cfg = {{"sizes", opt.sizes},       {"schedules", opt.schedules}, {"iters", opt.iters},
                        {"warmup", opt.warmup},     {"check", opt.check},         {"type", "float"},
                        {"collective", "allreduce"}};
  if (extra.is_object()) cfg.update(extra);
  BenchInfo info;
  info.backend = opt.backend;
  info.world_size = world_size;
  info.ranks_per_node = opt.ranks_per_node;
  info.iters = opt.iters;
  info.warmup = opt.warmup;
  info.config_json = cfg.dump();
  info.host_info = host_info_json();
  return store.begin_bench(info);
}

}  // namespace ddplab
