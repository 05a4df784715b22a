// What `ddplab calibrate` makes of its measurements on rank 0: the named fits and the record it stores.
#include <memory>

#include <fmt/format.h>

#include "ddplab/core/error.hpp"
#include "ddplab/simulator/calibration.hpp"

namespace ddplab {

LinkFit fit_named_links(const LinkMeasurements& m, const std::string& name) {
  LinkFit f = fit_links(m);
  f.fit.name = name;
  f.pingpong.name = name + " (ping-pong)";
  if (f.fit.intra) {
    auto intra = std::make_shared<Calibration>(*f.fit.intra);
    intra->name = name + " (intra-node)";
    f.fit.intra = intra;
  }
  return f;
}

void set_mlp_compute(Calibration& c, const std::string& compute_backend, const std::vector<int>& widths, int batch,
                     const std::vector<double>& forward_s, const std::vector<double>& backward_s, double optimizer_s) {
  const std::size_t layers = widths.size() < 2 ? 0 : widths.size() - 1;
  if (forward_s.size() != layers || backward_s.size() != layers)
    throw InternalError(fmt::format("set_mlp_compute: {} forward and {} backward times for the {} layers of {} widths",
                                    forward_s.size(), backward_s.size(), layers, widths.size()));
  c.compute_backend = compute_backend;
  c.layer_widths = widths;
  c.batch_size = batch;
  c.layers.clear();
  for (std::size_t l = 0; l < layers; ++l) c.layers.push_back({forward_s[l], backward_s[l]});
  c.optimizer_s = optimizer_s;
}

CalibrationRecord calibration_record(const LinkFit& f, const CalibrationJob& job) {
  nlohmann::json host = nlohmann::json::parse(job.host_info);
  host["world_size"] = job.world_size;
  host["backend"] = job.backend;
  if (!job.testbed.is_null()) host["testbed"] = job.testbed;
  nlohmann::json fit = f.fit.to_json();
  if (!job.bench_ids.empty()) fit["bench_ids"] = job.bench_ids;
  if (f.fit.fitted != "pingpong" && f.pingpong.bandwidth > 0)
    fit["pingpong"] = {{"latency_s", f.pingpong.latency_s}, {"bandwidth", f.pingpong.bandwidth}};
  if (!job.scenario.empty()) fit["scenario"] = job.scenario;
  return {0, f.fit.name, "", host.dump(), fit.dump()};
}

}  // namespace ddplab
