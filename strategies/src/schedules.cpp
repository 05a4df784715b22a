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
  using C = Collective;
  static const std::vector<ScheduleInfo> all = {
      {.name = "native",
       .collective = C::Allreduce,
       .summary = "the backend's own allreduce (MPI_Allreduce, ncclAllReduce); simulated as its transport's choice",
       .backend_own = true},
      {.name = "native",
       .collective = C::ReduceScatter,
       .summary = "the backend's own reduce-scatter",
       .backend_own = true},
      {.name = "native", .collective = C::AllGather, .summary = "the backend's own all-gather", .backend_own = true},
      {"ring", C::Allreduce, "reduce-scatter then all-gather around a ring, 2(n-1) steps", build_ring},
      {"halving_doubling", C::Allreduce,
       "Rabenseifner: recursive halving reduce-scatter + doubling all-gather, 2 log2 n steps", build_hd},
      {"recursive_doubling", C::Allreduce,
       "whole-buffer exchanges at distance 1, 2, 4, ...: log2 n steps, latency-optimal", build_rd},
      {"double_binary_tree", C::Allreduce,
       "NCCL-style two complementary binary trees, each reducing and broadcasting half, pipelined", build_dbt},
      {"hierarchical", C::Allreduce, "intra-node reduce-scatter, cross-node ring per chunk, intra-node all-gather",
       build_hier},
      {"direct", C::Allreduce, "all-to-all reduce-scatter then all-gather, 2 steps, n-1 messages per step",
       build_direct},
      {"ring", C::ReduceScatter, "ring reduce-scatter, rank r ends with the sum of chunk r, n-1 steps", build_ring_rs},
      {"ring", C::AllGather, "ring all-gather of the per-rank chunks, n-1 steps", build_ring_ag},
      {"ps", C::Push, "parameter server: workers send shard s to server s, which sums them, 1 step", build_ps_push},
      {"ps", C::Pull, "parameter server: server s sends its shard to every worker, 1 step", build_ps_pull},
  };
  return all;
}

bool has_schedule(const std::string& name, Collective collective) {
  for (const auto& s : schedules())
    if (s.name == name && s.collective == collective) return true;
  return false;
}

bool is_backend_native(const std::string& name) {
  for (const auto& s : schedules())
    if (s.name == name) return s.backend_own;
  return false;
}

std::optional<std::string> backend_native_base(const std::string& label) {
  for (const auto& s : schedules())
    if (s.backend_own && (label == s.name || label.rfind(s.name + " (", 0) == 0)) return s.name;
  return std::nullopt;
}

std::vector<std::string> allreduce_schedule_names() {
  std::vector<std::string> names;
  for (const auto& s : schedules())
    if (s.collective == Collective::Allreduce) names.push_back(s.name);
  return names;
}

Schedule make_schedule(const std::string& name, const ScheduleParams& params, Collective collective) {
  if (params.world_size < 1) throw InputError("schedule " + name + ": world size must be >= 1");
  std::string known;
  for (const auto& s : schedules()) {
    if (s.collective != collective || s.backend_own) continue;
    if (s.name == name) return s.build(params);
    known += (known.empty() ? "" : ", ") + s.name;
  }
  if (is_backend_native(name))
    throw InputError("schedule \"" + name + "\" is the backend's own " + to_string(collective) +
                     ": it has no schedule of ddplab's to build");
  throw InputError("unknown " + to_string(collective) + " schedule \"" + name + "\" (known: " + known + ")");
}

Schedule make_schedule(const std::string& name, int world_size, std::size_t count) {
  return make_schedule(name, ScheduleParams{world_size, count, 1});
}

}  // namespace ddplab
