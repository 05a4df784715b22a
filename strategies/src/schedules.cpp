// The schedule registry: one line per schedule.
#include <stdexcept>

#include "ddplab/core/error.hpp"
#include "ddplab/strategies/schedule.hpp"

namespace ddplab {

namespace {
Schedule build_ring(const ScheduleParams& p) { return ring_allreduce(p.world_size, p.count); }
Schedule build_hd(const ScheduleParams& p) { return halving_doubling_allreduce(p.world_size, p.count); }
Schedule build_rd(const ScheduleParams& p) { return recursive_doubling_allreduce(p.world_size, p.count); }
Schedule build_dbt(const ScheduleParams& p) { return double_binary_tree_allreduce(p.world_size, p.count); }
Schedule build_hier(const ScheduleParams& p) { return hierarchical_allreduce(p.world_size, p.count, p.ranks_per_node); }
Schedule build_direct(const ScheduleParams& p) { return direct_allreduce(p.world_size, p.count); }
Schedule build_ring_rs(const ScheduleParams& p) { return ring_reduce_scatter(p.world_size, p.count); }
Schedule build_ring_ag(const ScheduleParams& p) { return ring_all_gather(p.world_size, p.count); }
Schedule build_ps_push(const ScheduleParams& p) { return ps_push(p.world_size, p.count, p.servers); }
Schedule build_ps_pull(const ScheduleParams& p) { return ps_pull(p.world_size, p.count, p.servers); }
}  // namespace

const std::vector<ScheduleInfo>& schedules() {
  static const std::vector<ScheduleInfo> all = {
      {"ring", "allreduce", "reduce-scatter then all-gather around a ring, 2(n-1) steps", build_ring},
      {"halving_doubling", "allreduce", "Rabenseifner: recursive halving reduce-scatter + doubling all-gather, 2 log2 n steps", build_hd},
      {"recursive_doubling", "allreduce", "whole-buffer exchanges at distance 1, 2, 4, ...: log2 n steps, latency-optimal", build_rd},
      {"double_binary_tree", "allreduce", "NCCL-style two complementary binary trees, each reducing and broadcasting half, pipelined", build_dbt},
      {"hierarchical", "allreduce", "intra-node reduce-scatter, cross-node ring per chunk, intra-node all-gather", build_hier},
      {"direct", "allreduce", "all-to-all reduce-scatter then all-gather, 2 steps, n-1 messages per step", build_direct},
      {"ring", "reduce_scatter", "ring reduce-scatter, rank r ends with the sum of chunk r, n-1 steps", build_ring_rs},
      {"ring", "all_gather", "ring all-gather of the per-rank chunks, n-1 steps", build_ring_ag},
      {"ps", "push", "parameter server: workers send shard s to server s, which sums them, 1 step", build_ps_push},
      {"ps", "pull", "parameter server: server s sends its shard to every worker, 1 step", build_ps_pull},
  };
  return all;
}

bool has_schedule(const std::string& name, const std::string& collective) {
  if (name == "native") return true;
  for (const auto& s : schedules())
    if (s.name == name && s.collective == collective) return true;
  return false;
}

std::vector<std::string> allreduce_schedule_names() {
  std::vector<std::string> names{"native"};
  for (const auto& s : schedules())
    if (s.collective == "allreduce") names.push_back(s.name);
  return names;
}

Schedule make_schedule(const std::string& name, const ScheduleParams& params, const std::string& collective) {
  if (params.world_size < 1) throw InputError("schedule " + name + ": world size must be >= 1");
  std::string known;
  for (const auto& s : schedules()) {
    if (s.collective != collective) continue;
    if (s.name == name) return s.build(params);
    known += (known.empty() ? "" : ", ") + s.name;
  }
  throw InputError("unknown " + collective + " schedule \"" + name + "\" (known: " + known + ")");
}

Schedule make_schedule(const std::string& name, int world_size, std::size_t count) {
  return make_schedule(name, ScheduleParams{world_size, count, 1});
}

}  // namespace ddplab
