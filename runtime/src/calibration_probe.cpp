#include "ddplab/runtime/calibration_probe.hpp"

#include <unistd.h>

#include <algorithm>
#include <array>
#include <cstdio>

#include <fmt/format.h>

#include "ddplab/core/error.hpp"
#include "ddplab/strategies/codec_compute.hpp"
#include "ddplab/strategies/optimizer.hpp"

namespace ddplab {

std::vector<std::string> node_names(Communicator& comm) {
  constexpr std::size_t kLen = 256;
  std::array<char, kLen> mine{};
  if (gethostname(mine.data(), kLen - 1) != 0) std::snprintf(mine.data(), kLen, "rank%d", comm.rank());
  std::vector<char> all(kLen * static_cast<std::size_t>(comm.size()));
  comm.gather(mine.data(), kLen, all.data(), 0);
  comm.broadcast(all.data(), all.size(), 0);
  std::vector<std::string> names;
  for (int r = 0; r < comm.size(); ++r) names.emplace_back(all.data() + kLen * static_cast<std::size_t>(r));
  return names;
}

std::vector<int> schedule_worlds(std::vector<int> worlds, int n) {
  if (worlds.empty()) {
    for (int w = 2; w < n; w *= 2) worlds.push_back(w);
    worlds.push_back(n);
    return worlds;
  }
  for (const int w : worlds)
    if (w < 2 || w > n) throw InputError(fmt::format("--worlds: {} is outside 2..{} (the job's ranks)", w, n));
  std::sort(worlds.begin(), worlds.end());
  worlds.erase(std::unique(worlds.begin(), worlds.end()), worlds.end());
  return worlds;
}

void CalibrationProbe::open(Transport transport, double comm_timeout_s) {
  comm_timeout_s_ = comm_timeout_s;
  net_ = open_transport(job_, to_string(transport), comm_timeout_s);
}

LinkSamples CalibrationProbe::measure_links(const std::vector<std::uint64_t>& sizes, const std::string& fit,
                                            double pingpong_budget_s, int ring_iters) {
  Communicator& link = *net_.comm;
  Ops* device = net_.device_ops();
  LinkSamples out;
  out.pingpong = measure_pingpong(link, device, sizes, pingpong_budget_s);
  out.nodes = node_names(job_);
  if (fit == "exchange") out.loaded = measure_exchange(link, device, sizes, pingpong_budget_s);
  if (fit == "ring") out.loaded = measure_ring(link, device, sizes, ring_iters);
  return out;
}

ComputeSamples CalibrationProbe::measure_compute(Backend backend, const Scenario* sc, bool codec_work) {
  ComputeSamples out;
  auto ops = make_ops(backend, sc && sc->train.tf32);
  out.compute_backend = ops->name();
  if (sc)
    out.mlp = measure_mlp_compute(job_, *ops, sc->model.layers, sc->train.batch_size, sc->train.seed, 10,
                                  optimizer_config(sc->train, sc->train.batch_size, 1));
  if (codec_work) {
    out.codec_work = measure_codec_work(job_, *ops, 5);
    out.codec_backend = ops->codec_compute().name();
  }
  return out;
}

ScheduleBenches CalibrationProbe::measure_schedules(const std::vector<int>& worlds, CollectiveBenchOptions opt,
                                                    Store* store, const nlohmann::json& extra,
                                                    const ScheduleBenchHooks& hooks) {
  const int me = job_.rank(), n = job_.size(), rpn = opt.ranks_per_node;
  opt.backend = net_.name;
  ScheduleBenches out;
  for (const int w : worlds) {
    Communicator* comm = net_.comm;
    opt.device = net_.device_ops();
    if (w < n) {
      std::unique_ptr<Communicator> mpi = job_.split(me < w ? 0 : -1);
      TransportComm net;
      if (mpi) net = open_transport(*mpi, net_.name, comm_timeout_s_);
      comm = mpi ? net.comm : nullptr;
      opt.device = net.device_ops();
      groups_.emplace_back(std::move(mpi), std::move(net));
    }
    if (comm) {
      opt.ranks_per_node = std::min(rpn, w);
      std::int64_t id = 0, wrong = 0;
      if (me == 0) {
        id = begin_collective_bench(*store, opt, w, extra);
        out.ids.push_back(id);
        if (hooks.begin) hooks.begin(w, id);
      }
      run_collective_bench(*comm, opt, [&](const CollectiveBenchRow& r) {
        wrong += r.wrong.value_or(0);
        if (me != 0) return;
        store->add_bench_row(id, r);
        if (hooks.row) hooks.row(r);
      });
      if (me == 0) store->finish_bench(id, wrong == 0 ? RunStatus::Completed : RunStatus::Failed);
      out.wrong += wrong;
    }
    job_.barrier();
  }
  return out;
}

}  // namespace ddplab
