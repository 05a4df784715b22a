#include "ddplab/simulator/collective_sim.hpp"

#include <stdexcept>

#include <fmt/format.h>

#include "ddplab/core/error.hpp"
#include "ddplab/core/metrics.hpp"
#include "ddplab/simulator/calibration.hpp"
#include "ddplab/strategies/plan.hpp"
#include "platform.hpp"

namespace ddplab {

std::vector<CollectiveBenchRow> simulate_collective_bench(const CollectiveSimRequest& req,
                                                          const std::function<void(const CollectiveBenchRow&)>& on_row) {
  const int n = req.world_size;
  if (n < 1) throw InputError(fmt::format("world size must be >= 1, got {}", n));
  for (const std::string& s : req.schedules)
    if (!has_schedule(s, Collective::Allreduce)) throw InputError(fmt::format("unknown allreduce schedule \"{}\"", s));
  std::vector<CollectiveBenchRow> rows;
  const NcclFabric fabric = sim::nccl_fabric(req.cluster);
  const int per_node = req.ranks_per_node > 0 ? req.ranks_per_node : req.cluster.devices_per_node;
  for (const std::string& s : req.schedules)
    for (const std::uint64_t bytes : req.sizes) {
      const std::size_t count = static_cast<std::size_t>(bytes / 4);
      if (count == 0) throw InputError(fmt::format("size {} B holds no float32 element", bytes));
      const CollectiveCall call{Collective::Allreduce, ElemType::F32, count, "", {}, {}};
      const Schedule sched = schedule_for_call(call, s, ScheduleParams{n, count, per_node, 0, &fabric},
                                                 NativeReplay{req.transport, ""});
      // Open MPI's own collectives over TCP take turns on a pair's exchanges (replay.hpp); our schedules do not.
      SimOptions o = req.options;
      o.serialize_exchanges_from =
          is_backend_native(s) && req.transport == Transport::Mpi && o.calibration ? o.calibration->tcp_rendezvous_bytes : 0;
      const SimStepResult r = simulate_schedule(req.cluster, sched, 4, o);
      CollectiveBenchRow row;
      row.schedule = s;
      row.collective = Collective::Allreduce;
      row.type = "float";
      row.bytes = static_cast<std::int64_t>(count * 4);
      row.count = static_cast<std::int64_t>(count);
      set_bandwidths(row, r.step_s, n);
      rows.push_back(row);
      if (on_row) on_row(row);
    }
  return rows;
}

}  // namespace ddplab
