// The [parallel] section (scenario.hpp's ParallelConfig): sizes and schedule as written, checked for what
// the section alone decides. What needs the world size or the batch is checked later, with these positions
// (strategies/layout.hpp).
#include <nlohmann/json.hpp>

#include "scenario_reader.hpp"

namespace ddplab {

bool ParallelConfig::is_default() const {
  const ParallelConfig d;
  return tp == d.tp && pp == d.pp && !dp && microbatches == d.microbatches &&
         pipeline_schedule == d.pipeline_schedule && virtual_stages == d.virtual_stages && placement == d.placement;
}

nlohmann::json ParallelConfig::to_json() const {
  return {{"tp", tp},
          {"pp", pp},
          {"dp", dp ? nlohmann::json(*dp) : nlohmann::json(nullptr)},
          {"microbatches", microbatches},
          {"pipeline_schedule", pipeline_schedule},
          {"virtual_stages", virtual_stages},
          {"placement", placement}};
}

namespace scenario_detail {

void read_parallel(const Reader& r, const toml::table& t, ParallelConfig& p) {
  const std::string prefix = "parallel.";
  // The ZeRO stage is how the DP part syncs, so it is the strategy's policy, as the DP part's other choices are.
  if (const toml::node* n = t.get("zero"))
    r.fail(n->source(),
           "parallel.zero: the ZeRO stage is each [[strategy]]'s policy: policy = \"zero1\" (sharded "
           "optimizer state), \"zero2\" (and gradients) or \"zero3\" (and parameters). `ddplab simulate "
           "--search --zero-stages` tries a layout under each");
  r.check_keys(t, prefix, {"tp", "pp", "dp", "microbatches", "pipeline_schedule", "virtual_stages", "placement"});
  r.read_int(t, prefix, "tp", p.tp, 1, "must be a positive integer");
  r.read_int(t, prefix, "pp", p.pp, 1, "must be a positive integer");
  if (t.get("dp")) {
    int dp = 1;
    r.read_int(t, prefix, "dp", dp, 1, "must be a positive integer");
    p.dp = dp;
  }
  r.read_int(t, prefix, "microbatches", p.microbatches, 1, "must be a positive integer");
  r.read_string(t, prefix, "pipeline_schedule", p.pipeline_schedule);
  r.read_int(t, prefix, "virtual_stages", p.virtual_stages, 1, "must be a positive integer");
  r.read_choice(t, prefix, "placement", p.placement, {"tp-dp-pp", "tp-pp-dp"});
  for (auto&& [key, value] : t) p.where[std::string(key.str())] = r.position(value.source());
  // A pipeline setting without a pipeline would be ignored: say so.
  for (const char* key : {"microbatches", "pipeline_schedule", "virtual_stages"})
    if (const toml::node* n = t.get(key); n && p.pp == 1)
      r.fail(n->source(), fmt::format("parallel.{} applies to a pipeline (parallel.pp > 1); parallel.pp is 1", key));
}

}  // namespace scenario_detail
}  // namespace ddplab
