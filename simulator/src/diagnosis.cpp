#include "ddplab/simulator/diagnosis.hpp"

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ddplab/core/version.hpp"
#include "ddplab/simulator/compute_source.hpp"

namespace ddplab {
namespace {

nlohmann::json object(const std::string& text) {
  auto j = nlohmann::json::parse(text, nullptr, false);
  return j.is_object() ? j : nlohmann::json::object();
}

}  // namespace

std::vector<std::string> likely_causes(const RunRow& run, const CalibrationRecord* record, const Calibration* cal) {
  std::vector<std::string> causes;
  if (const std::string over = oversubscription(run.info.host_info); !over.empty())
    causes.push_back(fmt::format(
        "the run had {}: its ranks and their comm threads waited for cores, which the simulator does not model "
        "(measure with --np no larger than the cores)",
        over));
  const auto host = object(run.info.host_info);
  const auto cfg = object(run.info.config_json);
  if (!cal) {
    const auto cl = cfg.contains("cluster") ? cfg["cluster"] : nlohmann::json::object();
    causes.push_back(fmt::format(
        "no calibration: the scenario's [cluster] links ({:.3g} Gbit/s, {:.3g} us) stand for the network the run used "
        "(`ddplab calibrate` measures it)",
        cl.value("link_bandwidth", 0.0) * 8 / 1e9, cl.value("link_latency", 0.0) * 1e6));
  }
  if (record && cal) {
    const auto cal_host = object(record->host_info);
    if (cal_host.contains("world_size") && cal_host["world_size"].get<int>() != run.info.world_size)
      causes.push_back(fmt::format("calibration \"{}\" was measured with {} ranks, the run had {}", cal->name,
                                   cal_host["world_size"].get<int>(), run.info.world_size));
    const bool run_on_testbed = cfg.contains("testbed"), cal_on_testbed = cal->link_class == "testbed";
    if (run_on_testbed != cal_on_testbed)
      causes.push_back(fmt::format("the run {} the emulated test bed, calibration \"{}\" measured {}",
                                   run_on_testbed ? "ran on" : "did not run on", cal->name,
                                   cal_on_testbed ? "the test bed's links" : fmt::format("{} links", cal->link_class)));
    const std::string backend = cfg.contains("train") ? cfg["train"].value("backend", std::string("cpu")) : "cpu";
    const bool gpu = on_gpu(choice_from<Backend>(backend).value_or(Backend::Cpu));
    if (!cal->layers.empty() && cal->compute_backend.rfind(gpu ? "cuda" : "cpu", 0) != 0)
      causes.push_back(fmt::format("calibration \"{}\" timed compute on {}, the run trained on {}", cal->name,
                                   cal->compute_backend, backend));
    const std::string cal_build = cal_host.value("build", std::string());
    const std::string run_build = host.value("build", std::string());
    if (!cal_build.empty() && !run_build.empty() && cal_build != run_build)
      causes.push_back(fmt::format("calibration \"{}\" was made by ddplab build {}, the run by build {}", cal->name,
                                   cal_build, run_build));
    else if (!cal_build.empty() && run_build.empty() && cal_build != build_id())
      causes.push_back(
          fmt::format("calibration \"{}\" was made by ddplab build {}, this is build {}: calibrate "
                      "again if the runtime changed in between",
                      cal->name, cal_build, build_id()));
  }
  return causes;
}

}  // namespace ddplab
