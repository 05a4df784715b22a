// ps: a parameter server (PsLayout). Each bucket's gradients are pushed as soon as they are ready: server s
// receives shard s from every worker and averages it, updates that shard of the parameters with the
// optimizer state it alone keeps, and every worker pulls the updated shards back. Servers are the last
// ps_servers ranks (dedicated: they train nothing) or, with ps_servers = 0, every rank serves one shard.
#include <limits>

#include "policies.hpp"

namespace ddplab {

std::vector<OptionSpec> parameter_server_options() {
  return {{"ps_servers", OptionKind::Integer, 0, std::numeric_limits<double>::infinity(), false, "0", "1",
           "dedicated server ranks, the last ones; 0 = every rank serves a shard"}};
}

void build_parameter_server(const Strategy& s, std::int64_t step, StepPlan& plan) {
  build_sharded(s, step, plan, OpKind::Push, OpKind::Pull);
}

}  // namespace ddplab
