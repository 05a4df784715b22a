#include "ddplab/simulator/collective_sim.hpp"

#include <optional>
#include <stdexcept>

#include <fmt/format.h>

#include "ddplab/core/error.hpp"
#include "ddplab/core/metrics.hpp"
#include "ddplab/core/version.hpp"
#include "ddplab/simulator/calibration.hpp"
#include "ddplab/strategies/plan.hpp"
#include "ddplab/strategies/strategy.hpp"
#include "platform.hpp"

namespace ddplab {

std::vector<CollectiveBenchRow> simulate_collective_bench(
    const CollectiveSimRequest& req, const std::function<void(const CollectiveBenchRow&)>& on_row) {
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
      const Schedule sched =
          schedule_for_call(call, s, ScheduleParams{n, count, per_node, 0, &fabric}, NativeReplay{req.transport, ""});
      // Open MPI's own collectives over TCP take turns on a pair's exchanges (replay.hpp); our schedules do not.
      SimOptions o = req.options;
      o.serialize_exchanges_from = is_backend_native(s) && req.transport == Transport::Mpi && o.calibration
                                       ? o.calibration->tcp_rendezvous_bytes
                                       : 0;
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

SimulatedBench simulated_bench_cluster(const std::string& scenario, const std::string& preset,
                                       const std::string& transport) {
  SimulatedBench b;
  b.scenario = scenario;
  b.preset = preset;
  b.where = "the default cluster (10 Gbit/s star)";
  // The option's text becomes a transport here (--backend of `bench collectives --simulate`).
  std::optional<Transport> native;
  if (!transport.empty()) native = parse_choice<Transport>(transport, {.field = "--backend"});
  if (!scenario.empty()) {
    const Scenario sc = load_validated_scenario(scenario);
    b.request.cluster = sc.cluster;
    b.calibration = sc.cluster.calibration;
    b.where = fmt::format("scenario {}: {}", scenario, describe_cluster(b.request.cluster));
    if (!native) native = transport_of(sc.train.backend);
  } else if (!preset.empty()) {
    apply_cluster_preset(b.request.cluster, preset);
    b.where = describe_cluster(b.request.cluster);
    if (!native) native = b.request.cluster.device_flops && preset != "cpu-testbed" ? Transport::Nccl : Transport::Mpi;
  }
  b.request.transport = native.value_or(Transport::Mpi);
  return b;
}

std::int64_t run_simulated_bench(Store& store, SimulatedBench& b, const std::function<void()>& begin,
                                 const std::function<void(const CollectiveBenchRow&)>& on_row) {
  CollectiveSimRequest& sim = b.request;
  sim.options.network_model = network_model_for(sim.cluster, sim.options);  // "auto" resolved, for the record
  sim.options.mode = "auto";
  if (!b.calibration.empty()) sim.options.calibration = load_calibration(store, b.calibration);
  BenchInfo info;
  info.backend = "simgrid";
  info.world_size = sim.world_size;
  info.ranks_per_node = sim.cluster.devices_per_node;
  nlohmann::json cfg = {{"simulated", true},
                        {"cluster", describe_cluster(sim.cluster)},
                        {"network_model", sim.options.network_model},
                        {"native_as", sim.transport},
                        {"sizes", b.sizes},
                        {"schedules", sim.schedules}};
  if (!b.scenario.empty()) cfg["scenario"] = b.scenario;
  if (!b.preset.empty()) cfg["preset"] = b.preset;
  if (sim.options.calibration) cfg["calibration"] = sim.options.calibration->name;
  info.config_json = cfg.dump();
  info.host_info = host_info_json();
  if (begin) begin();
  const std::int64_t id = store.begin_bench(info);
  try {
    simulate_collective_bench(sim, [&](const CollectiveBenchRow& row) {
      store.add_bench_row(id, row);
      if (on_row) on_row(row);
    });
  } catch (...) {
    store.finish_bench(id, RunStatus::Failed);  // the rows simulated so far stay
    throw;
  }
  store.finish_bench(id, RunStatus::Completed);
  return id;
}

}  // namespace ddplab
