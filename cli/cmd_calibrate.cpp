// `ddplab calibrate`: measures this machine's network and compute, fits the simulator's network model to
// it (calibration.hpp) and stores the fit by name, with the measurements, in the results store. The
// network is measured over MPI, or over NCCL between GPUs with --backend cuda; compute on the CPU, or on
// the GPU with --backend cuda or cuda+mpi (runtime/link_probe.hpp has the measurements).
//
// Measured on the job's ranks: (1) ping-pong between rank 0 and every other rank over message sizes; (2)
// what the fit describes (--fit): by default the runtime's own ring allreduce of n x each size, whose steps
// are exchanges of one chunk of that size (every rank sends right, receives left), as training runs them;
// (3) every allreduce schedule over sizes at world sizes up to the job's (the `bench collectives` tables,
// one bench per world size so that `ddplab validate` replays them; --schedules none skips it); (4) with
// --scenario, per-layer forward and backward and the optimizer of the scenario's MLP at its batch size, on
// every rank at once (as training loads the cores), averaged over ranks.
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <cstdlib>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "validators.hpp"
#include "ddplab/core/error.hpp"
#include "ddplab/core/scenario.hpp"
#include "ddplab/core/stats.hpp"
#include "ddplab/core/store.hpp"
#include "ddplab/core/units.hpp"
#include "ddplab/core/version.hpp"
#include "ddplab/runtime/collective_bench.hpp"
#include "ddplab/runtime/codec_probe.hpp"
#include "ddplab/strategies/codec_compute.hpp"
#include "ddplab/runtime/job_info.hpp"
#include "ddplab/runtime/link_probe.hpp"
#include "ddplab/runtime/communicator.hpp"
#include "ddplab/runtime/ops.hpp"
#include "ddplab/simulator/calibration.hpp"
#include "ddplab/strategies/schedule.hpp"
#include "ddplab/runtime/launch.hpp"
#include "ddplab/testbed/testbed.hpp"
#include "ddplab/runtime/transport.hpp"

namespace ddplab::cli {
namespace {

struct CalibrateRequest {
  int np = 2;
  bool np_given = false;
  std::string name = "here";
  std::string sizes = "1KiB:64MiB";       // ping-pong
  std::string coll_sizes;                 // collectives; empty: the ping-pong sizes
  std::vector<std::string> schedules;     // empty: every allreduce schedule + native
  int coll_iters = 5;
  double pingpong_budget = 1.0;           // seconds of round trips per size and peer
  std::string fit = "ring";               // what the simulator's fit describes: "ring", "exchange" or "pingpong"
  std::string scenario;                   // optional: per-layer compute of its MLP
  std::string db = kDefaultDb;
  double tolerance = 0.01;
  bool testbed = false;
  std::string testbed_tag;                // set by the launcher
  std::vector<int> worlds;                // world sizes of the schedules; empty: 2, 4, ... below np, and np
  std::string backend;                    // cpu, cuda, cuda+mpi; empty: the scenario's train.backend, else cpu
  double comm_timeout = 300;              // cuda: NCCL's watchdog limit per collective
  bool codec_work = true;                 // time the codecs' local work on the backend
};

// "cuda": the network over NCCL (device buffers) and compute on the GPU; "cuda+mpi": the network over MPI,
// compute on the GPU; "cpu": both on MPI and OpenBLAS.
std::string resolved_backend(const CalibrateRequest& req, const std::optional<Scenario>& sc) {
  if (!req.backend.empty()) return req.backend;
  return sc ? sc->train.backend : "cpu";
}

std::vector<PingPongSample> samples_from(const std::vector<MessageTime>& times) {
  std::vector<PingPongSample> out;
  for (const auto& t : times) out.push_back({t.bytes, t.one_way_s});
  return out;
}

// Per-layer compute of the scenario's MLP at its batch size on the calibration's compute backend.
void measure_compute(Communicator& comm, Ops& ops, const Scenario& sc, Calibration& cal, int reps) {
  const MlpComputeTimes t = measure_mlp_compute(comm, ops, sc.model.layers, sc.train.batch_size, sc.train.seed, reps,
                                                optimizer_config(sc.train, sc.train.batch_size, 1));
  cal.compute_backend = ops.name();
  cal.layer_widths = sc.model.layers;
  cal.batch_size = sc.train.batch_size;
  cal.layers.clear();
  for (std::size_t l = 0; l < t.forward_s.size(); ++l) cal.layers.push_back({t.forward_s[l], t.backward_s[l]});
  cal.optimizer_s = t.optimizer_s;
}

// The allreduce schedules to measure; `none` alone: no collectives at all.
std::vector<std::string> resolve_schedules(const std::vector<std::string>& given) {
  if (given.size() == 1 && given[0] == "none") return {};
  std::vector<std::string> names = given.empty() ? allreduce_schedule_names() : given;
  for (const auto& s : names)
    if (!has_schedule(s, "allreduce")) throw InputError("--schedules: unknown allreduce schedule \"" + s + "\"");
  return names;
}

void print_fit(const Calibration& c) {
  std::printf("# calibration \"%s\" (link class %s): latency %s, bandwidth %.4g GB/s, %zu size intervals, fitted to %s\n",
              c.name.c_str(), c.link_class.c_str(), format_duration(c.latency_s).c_str(), c.bandwidth / 1e9,
              c.segments.size(),
              c.fitted == "ring" ? "ring allreduce steps" : c.fitted == "exchange" ? "the exchange" : "ping-pong");
  if (c.crosstraffic_share > 0)
    std::printf("# (bandwidth raised by SimGrid's cross-traffic share %.0f%%: the samples measured %.4g GB/s)\n",
                100 * c.crosstraffic_share, c.bandwidth / (1 + c.crosstraffic_share) / 1e9);
  std::printf("#%13s %12s %12s\n", "from (B)", "lat_factor", "bw_factor");
  for (const auto& s : c.segments)
    std::printf(" %13llu %12.4f %12.4f\n", static_cast<unsigned long long>(s.from_bytes), s.lat_factor, s.bw_factor);
  std::printf("#%13s %14s %14s %9s\n", "size (B)", "measured_us", "fitted_us", "error %");
  double worst = 0;
  for (const auto& s : c.samples) {
    const double fit = c.fitted_time(static_cast<double>(s.bytes)), err = 100 * (fit - s.one_way_s) / s.one_way_s;
    worst = std::max(worst, std::abs(err));
    std::printf(" %13llu %14.3f %14.3f %9.2f\n", static_cast<unsigned long long>(s.bytes), s.one_way_s * 1e6,
                fit * 1e6, err);
  }
  std::printf("# max |error| %.2f%% over %zu sizes: the fit's own samples, which its size intervals interpolate;\n"
              "# how well it predicts training and benches is what `ddplab validate` measures\n",
              worst, c.samples.size());
}

// The codec work fits: per kind, its fixed and per-unit costs and how far the fit is from its samples.
void print_codec_work(const Calibration& c, const std::vector<WorkSample>& samples) {
  std::printf("#\n# codec local work on %s (the simulator charges each kind a codec's plan announces by these)\n",
              c.codec_backend.c_str());
  std::printf("#%-18s %7s %12s %14s %14s %9s\n", "kind", "sizes", "fixed_us", "ns_per_unit", "ns_per_extra", "max err %");
  for (const auto& [key, f] : c.codec_work) {
    double worst = 0;
    int n = 0;
    for (const WorkSample& w : samples)
      if (w.key == key) ++n, worst = std::max(worst, std::abs(100 * (f.seconds(w.size) - w.seconds) / w.seconds));
    std::printf(" %-18s %7d %12.3f %14.4f %14.4f %9.1f\n", key.c_str(), n, f.fixed_s * 1e6, f.per_unit_s * 1e9,
                f.per_extra_s * 1e9, worst);
  }
  std::printf("# units: elements; bytes for copy; pairs for scatter_add; matrix elements for the products and "
              "orthogonalize\n# extra: k log2 k for topk; FLOPs for the products and orthogonalize\n");
}

// Every rank's node (its host name), on every rank: which peers share rank 0's node.
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

// The world sizes the schedules are measured at: --worlds (each 2..n), else 2, 4, 8, ... below n, and n
// itself. Ascending, without repeats.
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

// A group of the job's first w ranks, over the calibration's transport. Kept until the worker ends, so that
// an error aborts the job before any NCCL communicator is torn down (see calibrate_worker).
struct RankGroup {
  std::unique_ptr<Communicator> mpi;
  Transport net;
};

struct ScheduleBenches {
  std::vector<std::int64_t> ids;  // rank 0: one bench per world size
  std::int64_t wrong = 0;         // elements wrong, over the benches this rank took part in
};

// Every schedule of `opt` at each world size: the job's ranks below w reduce (the job's transport for w = n,
// a split of it otherwise); the others wait. Rank 0 prints and stores each world's bench.
ScheduleBenches measure_schedules(Communicator& job, Transport& net, const std::vector<int>& worlds,
                                  CollectiveBenchOptions opt, const CalibrateRequest& req, Store* store,
                                  std::vector<RankGroup>& groups) {
  const int me = job.rank(), n = job.size(), rpn = opt.ranks_per_node;
  ScheduleBenches out;
  for (const int w : worlds) {
    Communicator* comm = net.comm;
    opt.device = net.device_ops();
    if (w < n) {
      RankGroup g;
      g.mpi = job.split(me < w ? 0 : -1);
      if (g.mpi) g.net = open_transport(*g.mpi, net.name, req.comm_timeout);
      comm = g.mpi ? g.net.comm : nullptr;
      opt.device = g.net.device_ops();
      groups.push_back(std::move(g));
    }
    if (comm) {
      opt.ranks_per_node = std::min(rpn, w);
      std::int64_t id = 0, wrong = 0;
      if (me == 0) {
        nlohmann::json extra = {{"calibration", req.name}};
        if (!req.testbed_tag.empty()) extra["testbed"] = nlohmann::json::parse(req.testbed_tag);
        id = begin_collective_bench(*store, opt, w, extra);
        out.ids.push_back(id);
        std::printf("#\n# allreduce schedules at world %d over %s (stored as bench %lld)\n#%17s %12s %11s %11s %7s\n", w,
                    net.name.c_str(), static_cast<long long>(id), "schedule", "size (B)", "time_us", "busbw GB/s",
                    "#wrong");
      }
      run_collective_bench(*comm, opt, [&](const CollectiveBenchRow& r) {
        wrong += r.wrong.value_or(0);
        if (me != 0) return;
        store->add_bench_row(id, r);
        std::printf(" %17s %12lld %11.2f %11.3f %7lld\n", r.schedule.c_str(), static_cast<long long>(r.bytes), r.time_us,
                    r.busbw_gbs, static_cast<long long>(r.wrong.value_or(0)));
      });
      if (me == 0) store->finish_bench(id, wrong == 0 ? "completed" : "failed");
      out.wrong += wrong;
    }
    job.barrier();
  }
  return out;
}

// One rank of the job. Rank 0 fits, prints and stores.
int calibrate_worker(const CalibrateRequest& req) {
  int argc = 0;
  char** argv = nullptr;
  auto comm = make_mpi_communicator(&argc, &argv);
  const int me = comm->rank(), n = comm->size();
  Transport net;  // outside the try: an error aborts the job before NCCL is torn down (see bench_worker)
  std::vector<RankGroup> groups;
  try {
    if (n < 2) throw InputError("calibrate needs at least 2 ranks for ping-pong (--np 2 or more)");
    const auto sizes = parse_size_list(req.sizes);
    std::optional<Scenario> sc;
    if (!req.scenario.empty()) sc = load_scenario(req.scenario);
    if (sc && sc->model.type != "mlp")
      throw InputError(req.scenario + ": per-layer compute is measured for MLP scenarios only");
    const std::string backend = resolved_backend(req, sc);
    net = open_transport(*comm, backend == "cuda" ? "nccl" : "mpi", req.comm_timeout);
    Communicator& link = *net.comm;
    Ops* device = net.device_ops();

    const auto rows = measure_pingpong(link, device, sizes, req.pingpong_budget);
    const std::vector<std::string> nodes = node_names(*comm);
    std::vector<PingPongSample> exchange;
    if (req.fit == "exchange") exchange = samples_from(measure_exchange(link, device, sizes, req.pingpong_budget));
    if (req.fit == "ring") exchange = samples_from(measure_ring(link, device, sizes, req.coll_iters));
    Calibration cal, pingpong_fit;
    std::string intra_note;
    if (me == 0) {
      const std::string link_class = net.name == "nccl" ? "nccl" : req.testbed_tag.empty() ? "mpi" : "testbed";
      LinkFit f = fit_links({rows, nodes, sizes, exchange, req.fit, link_class, req.tolerance});
      cal = std::move(f.fit);
      pingpong_fit = std::move(f.pingpong);
      cal.name = req.name;
      pingpong_fit.name = req.name + " (ping-pong)";
      if (cal.intra) {
        auto intra = std::make_shared<Calibration>(*cal.intra);
        intra->name = req.name + " (intra-node)";
        cal.intra = intra;
      }
      if (!f.intra_note.empty()) intra_note = "# " + f.intra_note + "\n";
    }
    std::vector<WorkSample> codec_samples;
    if (sc || req.codec_work) {
      auto ops = backend == "cpu" ? make_ops("cpu") : make_cuda_ops(sc && sc->train.tf32);
      if (sc) measure_compute(*comm, *ops, *sc, cal, 10);
      if (req.codec_work) {
        for (const CodecWorkTiming& t : measure_codec_work(*comm, *ops, 5))
          codec_samples.push_back({work_key(t.work), work_size(t.work), t.seconds});
        if (me == 0) {
          cal.codec_work = fit_codec_work(codec_samples);
          cal.codec_backend = ops->codec_compute().name();
        }
      }
    }

    std::unique_ptr<Store> store;
    if (me == 0) store = std::make_unique<Store>(req.db);
    CollectiveBenchOptions opt;
    opt.sizes = parse_size_list(req.coll_sizes.empty() ? req.sizes : req.coll_sizes);
    opt.schedules = resolve_schedules(req.schedules);
    opt.iters = req.coll_iters;
    opt.warmup = 2;
    opt.backend = net.name;  // opt.device: each world's transport (measure_schedules)
    const char* local = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
    opt.ranks_per_node = local ? std::max(1, std::atoi(local)) : n;
    comm->broadcast(&opt.ranks_per_node, sizeof opt.ranks_per_node, 0);
    ScheduleBenches benches;
    if (!opt.schedules.empty())
      benches = measure_schedules(*comm, net, schedule_worlds(req.worlds, n), opt, req, store.get(), groups);
    const std::int64_t wrong = benches.wrong;
    const std::string job = job_host_info(*comm);  // collective
    if (me == 0) {
      nlohmann::json host = nlohmann::json::parse(job);
      host["world_size"] = n;
      host["backend"] = backend;
      if (!req.testbed_tag.empty()) host["testbed"] = nlohmann::json::parse(req.testbed_tag);
      nlohmann::json fit = cal.to_json();
      if (!benches.ids.empty()) fit["bench_ids"] = benches.ids;
      if (cal.fitted != "pingpong" && pingpong_fit.bandwidth > 0)
        fit["pingpong"] = {{"latency_s", pingpong_fit.latency_s}, {"bandwidth", pingpong_fit.bandwidth}};
      if (sc) fit["scenario"] = sc->name;
      const std::int64_t id = store->add_calibration({0, req.name, "", host.dump(), fit.dump()}, rows);
      std::printf("#\n");
      if (cal.fitted != "pingpong" && pingpong_fit.bandwidth > 0)
        std::printf("# ping-pong (one message at a time): latency %s, bandwidth %.4f GB/s; the simulator uses the "
                    "fit below\n",
                    format_duration(pingpong_fit.latency_s).c_str(), pingpong_fit.bandwidth / 1e9);
      print_fit(cal);
      if (!cal.codec_work.empty()) print_codec_work(cal, codec_samples);
      if (cal.intra) {
        std::printf("#\n# inside rank 0's node (%s): the simulator's intra-node links and factors\n", nodes[0].c_str());
        print_fit(*cal.intra);
      }
      std::printf("%s", intra_note.c_str());
      if (!cal.layers.empty()) {
        std::printf("# compute of %s at batch %d on %s (mean over %d ranks)\n#%6s %12s %12s\n", sc->name.c_str(),
                    cal.batch_size, cal.compute_backend.c_str(), n, "layer", "forward_ms", "backward_ms");
        for (std::size_t l = 0; l < cal.layers.size(); ++l)
          std::printf(" %6zu %12.3f %12.3f\n", l, cal.layers[l].forward_s * 1e3, cal.layers[l].backward_s * 1e3);
        std::printf("# optimizer %.3f ms\n", cal.optimizer_s * 1e3);
      }
      std::fprintf(stderr, "ddplab: calibration \"%s\" stored as id %lld in %s\n", req.name.c_str(),
                   static_cast<long long>(id), req.db.c_str());
      if (wrong > 0) std::fprintf(stderr, "error: a schedule gave %lld wrong elements (see #wrong)\n", static_cast<long long>(wrong));
    }
    std::fflush(stdout);
    return wrong == 0 ? 0 : 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "error: rank %d: calibrate: %s\n", me, e.what());
    std::fflush(stderr);
    comm->abort(rank_exit_code(e));
  }
  return 1;  // not reached: abort ends the job
}

int calibrate(const CalibrateRequest& req) {
  if (under_mpi_launcher()) return calibrate_worker(req);
  std::optional<testbed::State> bed;
  if (req.testbed) bed = testbed::require_up(req.np_given ? std::optional<int>(req.np) : std::nullopt);
  const int np = bed ? bed->hosts : req.np;
  if (np < 2) throw InputError(fmt::format("--np must be at least 2 (ping-pong needs a pair), got {}", np));
  for (const std::string* s : {&req.sizes, &req.coll_sizes}) {
    if (s->empty()) continue;
    try {
      parse_size_list(*s);
    } catch (const InputError& e) {
      throw InputError(fmt::format("--sizes {}: {}", *s, e.what()), "--sizes");
    }
  }
  if (parse_size_list(req.sizes).size() < 2) throw InputError("--sizes must give at least 2 sizes to fit");
  resolve_schedules(req.schedules);
  schedule_worlds(req.worlds, np);
  std::optional<Scenario> sc;
  if (!req.scenario.empty()) sc = load_scenario(req.scenario);  // its errors now, before any rank starts
  const std::string backend = resolved_backend(req, sc);
  require_gpu_backend(req.backend.empty() && sc ? req.scenario + ": train.backend" : "--backend", backend);
  if (backend == "cuda+mpi" && !sc)
    throw InputError("--backend cuda+mpi differs from cpu only in the compute it times: give --scenario "
                     "(the MLP and batch to time on the GPU)");
  std::vector<std::string> args = {"calibrate", "--np", std::to_string(np), "--name", req.name, "--sizes", req.sizes,
                                   "--coll-iters", std::to_string(req.coll_iters), "--db", req.db,
                                   "--pingpong-budget", fmt::format("{}", req.pingpong_budget), "--fit", req.fit,
                                   "--tolerance", fmt::format("{}", req.tolerance), "--backend", backend,
                                   "--comm-timeout", fmt::format("{}", req.comm_timeout)};
  if (!req.coll_sizes.empty()) args.insert(args.end(), {"--coll-sizes", req.coll_sizes});
  if (!req.worlds.empty()) args.insert(args.end(), {"--worlds", fmt::format("{}", fmt::join(req.worlds, ","))});
  if (!req.schedules.empty()) {
    std::string joined;
    for (const auto& s : req.schedules) joined += (joined.empty() ? "" : ",") + s;
    args.insert(args.end(), {"--schedules", joined});
  }
  if (!req.scenario.empty()) args.insert(args.end(), {"--scenario", req.scenario});
  if (bed) args.insert(args.end(), {"--testbed-tag", testbed::run_tag(*bed).dump()});
  require_writable_store(req.db);
  LaunchPlan plan = plan_launch(np, args, bed ? testbed::mpirun_args(*bed) : std::vector<std::string>{});
  if (bed) retry_unstarted(plan, testbed::kLaunchAttempts);
  std::fprintf(stderr, "ddplab: %s\n", shell_join(plan.argv).c_str());
  const JobEnd end = execute(plan);
  if (end.signal) std::fprintf(stderr, "ddplab: calibrate interrupted (%s)\n", strsignal(end.signal));
  else if (end.rc != 0) std::fprintf(stderr, "error: calibrate failed (mpirun exit %d)\n", end.rc);
  return end.exit_code();
}

}  // namespace

void add_calibrate(CLI::App& app) {
  auto req = std::make_shared<CalibrateRequest>();
  auto* cmd = app.add_subcommand("calibrate", "Measure ping-pong, collectives and compute here; fit and store the simulator's network model");
  auto* np_opt = cmd->add_option("--np", req->np, "Ranks to start (ping-pong runs between rank 0 and each other rank)")
                     ->capture_default_str()
                     ->check(positive_int());
  cmd->add_option("--name", req->name, "Name to store the fit under; a scenario uses it as [cluster] calibration = NAME")
      ->capture_default_str();
  cmd->add_option("--sizes", req->sizes, "Ping-pong message sizes: LO:HI doubling, or a comma list")->capture_default_str();
  cmd->add_option("--coll-sizes", req->coll_sizes, "Allreduce buffer sizes (default: the ping-pong sizes)");
  cmd->add_option("--schedules", req->schedules,
                  "Comma list of allreduce schedules (default: all, and native); none: measure no collectives")
      ->delimiter(',');
  cmd->add_option("--worlds", req->worlds,
                  "World sizes to measure the schedules at, a comma list (the job's first ranks; default: 2, 4, 8, ... "
                  "below --np, and --np)")
      ->delimiter(',');
  cmd->add_option("--coll-iters", req->coll_iters, "Timed iterations per allreduce size")->capture_default_str()->check(positive_int());
  cmd->add_option("--pingpong-budget", req->pingpong_budget,
                  "Seconds of round trips per ping-pong size and peer (5 to 100 round trips; fewer on slow links)")
      ->capture_default_str()
      ->check(number_in(0.0, 3600.0, true));
  cmd->add_option("--fit", req->fit,
                  "Fit the simulator's model to: ring (the steps of the runtime's ring allreduce of n x each size), "
                  "exchange (every rank sends right and receives left at once, in a bare loop) or pingpong (one "
                  "message at a time)")
      ->capture_default_str()
      ->check(CLI::IsMember({"ring", "exchange", "pingpong"}));
  cmd->add_option("--scenario", req->scenario, "Also measure per-layer compute of this scenario's MLP at its batch size");
  cmd->add_option("--backend", req->backend,
                  "cpu (MPI, OpenBLAS), cuda (NCCL between GPUs, one rank per GPU; compute on the GPU) or cuda+mpi "
                  "(MPI; compute on the GPU). Default: the scenario's train.backend, else cpu")
      ->check(CLI::IsMember({"cpu", "cuda", "cuda+mpi"}));
  cmd->add_option("--comm-timeout", req->comm_timeout, "cuda: seconds before a stuck NCCL operation aborts the job")
      ->capture_default_str()
      ->check(number_in(0.0, 86400.0, true));
  cmd->add_option("--tolerance", req->tolerance, "Relative error each size interval's fit must stay within")
      ->capture_default_str()
      ->check(number_in(1e-6, 1.0));
  cmd->add_option("--db", req->db, "Results store (SQLite)")->capture_default_str();
  cmd->add_flag("--testbed", req->testbed, "One rank per host of the emulated cluster (`ddplab testbed up`)");
  cmd->add_flag("!--no-codec-work", req->codec_work,
                "Skip timing the codecs' local work (casts, top-k, scatter-add, PowerSGD's products) on the backend");
  cmd->add_option("--testbed-tag", req->testbed_tag)->group("");
  cmd->footer(
      "Fit: one-way time t(s) = lat_factor(s) * latency + s / (bw_factor(s) * bandwidth), factors constant over\n"
      "size intervals (as SMPI's network factors). latency is the smallest messages' (factor 1 in the first\n"
      "interval), bandwidth the largest messages' (factor 1 in the last). Intervals are the fewest whose affine\n"
      "fit stays within --tolerance of every measured size; sizes between intervals interpolate. The samples are\n"
      "the steps of the runtime's ring allreduce (--fit ring, the default), a bare exchange loop, or ping-pong.\n"
      "The table prints measured vs fitted per size.");
  cmd->callback([req, np_opt] {
    req->np_given = np_opt->count() > 0;
    g_exit_code = calibrate(*req);
  });
}

}  // namespace ddplab::cli
