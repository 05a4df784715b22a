// `ddplab import nccl-tests FILE --name CLUSTER`: an all_reduce_perf log (NVIDIA/nccl-tests) becomes a
// measured collective bench in the results store, so that users with real clusters can compare ddplab's
// predictions (`ddplab bench collectives --simulate`, `ddplab validate`) with their own measurements.
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <stdexcept>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "ddplab/core/error.hpp"
#include "ddplab/core/metrics.hpp"
#include "ddplab/core/nccl_tests.hpp"
#include "ddplab/core/scenario.hpp"
#include "ddplab/core/store.hpp"
#include "ddplab/runtime/launch.hpp"

namespace ddplab::cli {
namespace {

struct ImportRequest {
  std::string file, name, preset, db = kDefaultDb;
};

int import_nccl_tests(const ImportRequest& req) {
  std::ifstream f(req.file);
  if (!f) throw InputError(req.file + ": cannot read it");
  std::ostringstream text;
  text << f.rdbuf();
  const NcclTestsLog log =
      parse_nccl_tests(text.str(), req.file);  // refuses a malformed log before the store is touched
  if (!req.preset.empty()) {
    ClusterConfig c;
    apply_cluster_preset(c, req.preset);  // rejects an unknown preset, listing the known ones
  }
  require_writable_store(req.db);
  Store store(req.db);
  BenchInfo info;
  info.backend = "nccl";
  info.world_size = log.ranks;
  info.ranks_per_node = log.ranks_per_node;
  info.iters = log.iters;
  info.warmup = log.warmup;
  nlohmann::json cfg = {{"source", "nccl-tests"}, {"file", req.file}, {"name", req.name}, {"devices", log.devices}};
  if (!req.preset.empty()) cfg["preset"] = req.preset;
  if (log.avg_busbw_gbs) cfg["avg_busbw_gbs"] = *log.avg_busbw_gbs;
  info.config_json = cfg.dump();
  info.host_info = nlohmann::json{{"imported_from", req.file}}.dump();
  const std::int64_t id = store.begin_bench(info);
  for (const NcclTestsRow& r : log.rows)
    for (const auto& [schedule, t] :
         {std::pair{"native", r.out_of_place}, std::pair{"native (in-place)", r.in_place}}) {
      CollectiveBenchRow row;
      row.schedule = schedule;
      row.collective = Collective::Allreduce;
      row.type = r.type;
      row.bytes = r.bytes;
      row.count = r.count;
      // As nccl-tests printed them; set_bandwidths would give the same busbw from the time (checked by the parser).
      row.time_us = t.time_us;
      row.algbw_gbs = t.algbw_gbs;
      row.busbw_gbs = t.busbw_gbs;
      row.wrong = t.wrong;
      store.add_bench_row(id, row);
    }
  const bool wrong = [&] {
    for (const auto& r : log.rows)
      if (r.out_of_place.wrong.value_or(0) > 0 || r.in_place.wrong.value_or(0) > 0) return true;
    return false;
  }();
  store.finish_bench(id, wrong ? RunStatus::Failed : RunStatus::Completed);
  std::printf(
      "imported %s as bench %lld (\"%s\"): all_reduce over %d ranks, %d per node, %zu sizes %s..%s B, "
      "out-of-place and in-place%s\n",
      req.file.c_str(), static_cast<long long>(id), req.name.c_str(), log.ranks, log.ranks_per_node, log.rows.size(),
      std::to_string(log.rows.front().bytes).c_str(), std::to_string(log.rows.back().bytes).c_str(),
      wrong ? "; some rows report wrong elements, so it is stored as failed" : "");
  std::printf(
      "list it with `ddplab bench results --bench %lld`, predict it with `ddplab bench collectives --simulate "
      "--preset %s --world %d`\n",
      static_cast<long long>(id), req.preset.empty() ? "PRESET" : req.preset.c_str(), log.ranks);
  return 0;
}

}  // namespace

void add_import(CLI::App& app) {
  auto* imp = app.add_subcommand("import", "Import measurements made elsewhere into the results store");
  imp->require_subcommand(1);
  auto req = std::make_shared<ImportRequest>();
  auto* cmd = imp->add_subcommand("nccl-tests", "An all_reduce_perf log (nccl-tests) as a measured collective bench");
  cmd->add_option("file", req->file, "all_reduce_perf's output, as it printed it")->required();
  cmd->add_option("--name", req->name, "What the measurements are of, e.g. the cluster's name")->required();
  cmd->add_option("--preset", req->preset,
                  "The cluster preset it ran on, if one describes it (recorded with the bench)");
  cmd->add_option("--db", req->db, "Results store (SQLite)")->capture_default_str();
  cmd->footer(
      "Reads the Rank lines (world size, ranks per node, devices), the iterations, and each size's out-of-place and\n"
      "in-place time, algbw, busbw and #wrong; stores them as bench rows of schedule native and \"native "
      "(in-place)\",\n"
      "backend nccl. A malformed log is refused with file:line and nothing is stored.");
  cmd->callback([req] { g_exit_code = import_nccl_tests(*req); });
}

}  // namespace ddplab::cli
