#include "calibration_install.hpp"

#include <algorithm>
#include <cstdlib>
#include <string>
#include <memory>
#include <stdexcept>

#include <fmt/format.h>
#include <simgrid/kernel/resource/NetworkModelIntf.hpp>

#include "ddplab/core/error.hpp"
#include "ddplab/simulator/calibration.hpp"
#include "platform.hpp"

namespace sg4 = simgrid::s4u;

namespace ddplab::sim {

void install_calibration(sg4::Engine* engine, const ClusterConfig& cluster, const SimOptions& options) {
  if (!options.calibration) return;
  std::shared_ptr<const Calibration> cal = options.calibration;
  double max_lat = 1;
  for (const Calibration* c : {cal.get(), cal->intra.get()})
    if (c)
      for (const FactorSegment& f : c->segments) max_lat = std::max(max_lat, f.lat_factor);
  // tcp_gamma_for assumes the route latency unscaled; the window cap is gamma / (2 x scaled latency).
  engine->set_config(fmt::format("network/TCP-gamma:{}", tcp_gamma_for(cluster) * max_lat));
  // A message between two devices of one node takes the intra-node fit's factors, when there is one.
  // Ranks' hosts are named r<rank> (topology.cpp); rank r is on node r / devices_per_node.
  const int per_node = std::max(1, cluster.devices_per_node);
  auto node_of = [per_node](const sg4::Host* h) {
    const std::string& name = h->get_name();
    return name.size() > 1 && name[0] == 'r' ? std::atoi(name.c_str() + 1) / per_node : -1;
  };
  auto fit_for = [cal, node_of](const sg4::Host* src, const sg4::Host* dst) -> const Calibration& {
    if (cal->intra && src && dst && node_of(src) >= 0 && node_of(src) == node_of(dst)) return *cal->intra;
    return *cal;
  };
  sg4::Engine::on_simulation_start_cb([engine, fit_for] {
    auto* model = engine->get_netzone_root()->get_network_model();
    model->set_lat_factor_cb(
        [fit_for](double size, const sg4::Host* src, const sg4::Host* dst, const std::vector<sg4::Link*>&,
                  const std::unordered_set<sg4::NetZone*>&) { return fit_for(src, dst).factors_at(size).lat_factor; });
    model->set_bw_factor_cb(
        [fit_for](double size, const sg4::Host* src, const sg4::Host* dst, const std::vector<sg4::Link*>&,
                  const std::unordered_set<sg4::NetZone*>&) { return fit_for(src, dst).factors_at(size).bw_factor; });
  });
}

void apply_calibrated_compute(OpCosts& costs, const StepPlan& plan, const SimOptions& options) {
  const Calibration* cal = options.calibration.get();
  if (!cal || cal->layers.empty()) return;
  int layers = 0;
  for (const PlanOp& op : plan.ops)
    if (op.kind == OpKind::Backward) layers = std::max(layers, op.index + 1);
  if (static_cast<std::size_t>(layers) > cal->layers.size())
    throw InputError(fmt::format("calibration \"{}\" has compute times of {} layers, the plan has {}", cal->name,
                                 cal->layers.size(), layers));
  costs.forward_s = 0;
  costs.backward_s.clear();
  for (const LayerTime& l : cal->layers) {
    costs.forward_s += l.forward_s;
    costs.backward_s.push_back(l.backward_s);
  }
}

}  // namespace ddplab::sim
