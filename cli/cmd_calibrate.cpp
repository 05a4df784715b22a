// `ddplab calibrate`: measures this machine's network and compute on the ranks of an MPI job
// (runtime/calibration_probe.hpp: ping-pong, the samples under load that --fit describes, the scenario's MLP,
// the codecs' local work, every allreduce schedule at world sizes up to the job's), fits the simulator's
// model to it (simulator/calibration.hpp) and stores the fit by name, with the measurements and one bench per
// world size, in the results store. The network is measured over MPI, or over NCCL between GPUs with
// --backend cuda; compute on the CPU, or on the GPU with --backend cuda or cuda+mpi.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
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
#include "ddplab/core/store.hpp"
#include "ddplab/core/units.hpp"
#include "ddplab/runtime/calibration_probe.hpp"
#include "ddplab/runtime/collective_bench.hpp"
#include "ddplab/runtime/collective_bench_job.hpp"
#include "ddplab/runtime/communicator.hpp"
#include "ddplab/runtime/job_info.hpp"
#include "ddplab/runtime/launch.hpp"
#include "ddplab/runtime/transport.hpp"
#include "ddplab/simulator/calibration.hpp"
#include "ddplab/strategies/codec.hpp"
#include "ddplab/strategies/schedule.hpp"
#include "ddplab/testbed/testbed.hpp"

namespace ddplab::cli {
namespace {

struct CalibrateRequest {
  int np = 2;
  bool np_given = false;
  std::string name = "here";
  std::string sizes = "1KiB:64MiB";    // ping-pong
  std::string coll_sizes;              // collectives; empty: the ping-pong sizes
  std::vector<std::string> schedules;  // empty: every allreduce schedule + native
  int coll_iters = 5;
  double pingpong_budget = 1.0;  // seconds of round trips per size and peer
  std::string fit = "ring";      // what the simulator's fit describes: "ring", "exchange" or "pingpong"
  std::string scenario;          // optional: per-layer compute of its MLP
  std::string db = kDefaultDb;
  double tolerance = 0.01;
  bool testbed = false;
  std::string testbed_tag;    // set by the launcher
  std::vector<int> worlds;    // world sizes of the schedules; empty: 2, 4, ... below np, and np
  std::string backend;        // cpu, cuda, cuda+mpi; empty: the scenario's train.backend, else cpu
  double comm_timeout = 300;  // cuda: NCCL's watchdog limit per collective
  bool codec_work = true;     // time the codecs' local work on the backend
};

// "cuda": the network over NCCL (device buffers) and compute on the GPU; "cuda+mpi": the network over MPI,
// compute on the GPU; "cpu": both on MPI and OpenBLAS.
Backend resolved_backend(const CalibrateRequest& req, const std::optional<Scenario>& sc) {
  if (!req.backend.empty()) return parse_choice<Backend>(req.backend, {.field = "--backend"});
  return sc ? sc->train.backend : Backend::Cpu;
}

// The runtime's one-way times as the simulator's samples.
std::vector<PingPongSample> samples_from(const std::vector<MessageTime>& times) {
  std::vector<PingPongSample> out;
  for (const auto& t : times) out.push_back({t.bytes, t.one_way_s});
  return out;
}

// The allreduce schedules to measure; `none` alone: no collectives at all.
std::vector<std::string> resolve_schedules(const std::vector<std::string>& given) {
  if (given.size() == 1 && given[0] == "none") return {};
  std::vector<std::string> names = given.empty() ? allreduce_schedule_names() : given;
  for (const auto& s : names)
    if (!has_schedule(s, Collective::Allreduce))
      throw InputError("--schedules: unknown allreduce schedule \"" + s + "\"");
  return names;
}

void print_fit(const Calibration& c) {
  std::printf(
      "# calibration \"%s\" (link class %s): latency %s, bandwidth %.4g GB/s, %zu size intervals, fitted to %s\n",
      c.name.c_str(), c.link_class.c_str(), format_duration(c.latency_s).c_str(), c.bandwidth / 1e9, c.segments.size(),
      c.fitted == "ring"       ? "ring allreduce steps"
      : c.fitted == "exchange" ? "the exchange"
                               : "ping-pong");
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
    std::printf(" %13llu %14.3f %14.3f %9.2f\n", static_cast<unsigned long long>(s.bytes), s.one_way_s * 1e6, fit * 1e6,
                err);
  }
  std::printf(
      "# max |error| %.2f%% over %zu sizes: the fit's own samples, which its size intervals interpolate;\n"
      "# how well it predicts training and benches is what `ddplab validate` measures\n",
      worst, c.samples.size());
}

// The codec work fits: per kind, its fixed and per-unit costs and how far the fit is from its samples.
void print_codec_work(const Calibration& c, const std::vector<WorkSample>& samples) {
  std::printf("#\n# codec local work on %s (the simulator charges each kind a codec's plan announces by these)\n",
              c.codec_backend.c_str());
  std::printf("#%-18s %7s %12s %14s %14s %9s\n", "kind", "sizes", "fixed_us", "ns_per_unit", "ns_per_extra",
              "max err %");
  for (const auto& [key, f] : c.codec_work) {
    double worst = 0;
    int n = 0;
    for (const WorkSample& w : samples)
      if (w.key == key) ++n, worst = std::max(worst, std::abs(100 * (f.seconds(w.size) - w.seconds) / w.seconds));
    std::printf(" %-18s %7d %12.3f %14.4f %14.4f %9.1f\n", key.c_str(), n, f.fixed_s * 1e6, f.per_unit_s * 1e9,
                f.per_extra_s * 1e9, worst);
  }
  std::printf(
      "# units: elements; bytes for copy; pairs for scatter_add; matrix elements for the products and "
      "orthogonalize\n# extra: k log2 k for topk; FLOPs for the products and orthogonalize\n");
}

// One rank of the job (calibration_probe.hpp measures); rank 0 fits (calibration.hpp), prints and stores.
int calibrate_worker(const CalibrateRequest& req) {
  int argc = 0;
  char** argv = nullptr;
  auto comm = make_mpi_communicator(&argc, &argv);
  const int me = comm->rank(), n = comm->size();
  CalibrationProbe probe(*comm);  // outside the try: an error aborts the job before NCCL is torn down
  try {
    if (n < 2) throw InputError("calibrate needs at least 2 ranks for ping-pong (--np 2 or more)");
    const auto sizes = parse_size_list(req.sizes);
    std::optional<Scenario> sc;
    if (!req.scenario.empty()) sc = load_scenario(req.scenario);
    if (sc && sc->model.type != ModelType::Mlp)
      throw InputError(req.scenario + ": per-layer compute is measured for MLP scenarios only");
    const Backend backend = resolved_backend(req, sc);
    probe.open(transport_of(backend), req.comm_timeout);
    const LinkSamples links = probe.measure_links(sizes, req.fit, req.pingpong_budget, req.coll_iters);
    const nlohmann::json testbed = req.testbed_tag.empty() ? nlohmann::json() : nlohmann::json::parse(req.testbed_tag);
    LinkFit fit;
    if (me == 0) {
      const std::string link_class = probe.transport() == ddplab::Transport::Nccl ? "nccl"
                                     : testbed.is_null()                          ? "mpi"
                                                                                  : "testbed";
      fit = fit_named_links(
          {links.pingpong, links.nodes, sizes, samples_from(links.loaded), req.fit, link_class, req.tolerance},
          req.name);
    }
    Calibration& cal = fit.fit;
    std::vector<WorkSample> codec_samples;
    if (sc || req.codec_work) {
      const ComputeSamples compute = probe.measure_compute(backend, sc ? &*sc : nullptr, req.codec_work);
      if (compute.mlp)
        set_mlp_compute(cal, compute.compute_backend, sc->model.layers, sc->train.batch_size, compute.mlp->forward_s,
                        compute.mlp->backward_s, compute.mlp->optimizer_s);
      for (const CodecWorkTiming& t : compute.codec_work)
        codec_samples.push_back({work_key(t.work), work_size(t.work), t.seconds});
      if (req.codec_work && me == 0) {
        cal.codec_work = fit_codec_work(codec_samples);
        cal.codec_backend = compute.codec_backend;
      }
    }

    std::unique_ptr<Store> store;
    if (me == 0) store = std::make_unique<Store>(req.db);
    CollectiveBenchOptions opt;
    opt.sizes = parse_size_list(req.coll_sizes.empty() ? req.sizes : req.coll_sizes);
    opt.schedules = resolve_schedules(req.schedules);
    opt.iters = req.coll_iters;
    opt.warmup = 2;
    opt.ranks_per_node = job_ranks_per_node(*comm);
    ScheduleBenches benches;
    if (!opt.schedules.empty()) {
      nlohmann::json extra = {{"calibration", req.name}};
      if (!testbed.is_null()) extra["testbed"] = testbed;
      ScheduleBenchHooks hooks;
      hooks.begin = [&](int w, std::int64_t id) {
        std::printf("#\n# allreduce schedules at world %d over %s (stored as bench %lld)\n#%17s %12s %11s %11s %7s\n",
                    w, to_string(probe.transport()).c_str(), static_cast<long long>(id), "schedule", "size (B)",
                    "time_us", "busbw GB/s", "#wrong");
      };
      hooks.row = [](const CollectiveBenchRow& r) {
        std::printf(" %17s %12lld %11.2f %11.3f %7lld\n", r.schedule.c_str(), static_cast<long long>(r.bytes),
                    r.time_us, r.busbw_gbs, static_cast<long long>(r.wrong.value_or(0)));
      };
      benches = probe.measure_schedules(schedule_worlds(req.worlds, n), opt, store.get(), extra, hooks);
    }
    const std::int64_t wrong = benches.wrong;
    const std::string job = job_host_info(*comm);  // collective
    if (me == 0) {
      const std::int64_t id = store->add_calibration(
          calibration_record(fit, {job, n, backend, testbed, benches.ids, sc ? sc->name : ""}), links.pingpong);
      std::printf("#\n");
      if (cal.fitted != "pingpong" && fit.pingpong.bandwidth > 0)
        std::printf(
            "# ping-pong (one message at a time): latency %s, bandwidth %.4f GB/s; the simulator uses the "
            "fit below\n",
            format_duration(fit.pingpong.latency_s).c_str(), fit.pingpong.bandwidth / 1e9);
      print_fit(cal);
      if (!cal.codec_work.empty()) print_codec_work(cal, codec_samples);
      if (cal.intra) {
        std::printf("#\n# inside rank 0's node (%s): the simulator's intra-node links and factors\n",
                    links.nodes[0].c_str());
        print_fit(*cal.intra);
      }
      if (!fit.intra_note.empty()) std::printf("# %s\n", fit.intra_note.c_str());
      if (!cal.layers.empty()) {
        std::printf("# compute of %s at batch %d on %s (mean over %d ranks)\n#%6s %12s %12s\n", sc->name.c_str(),
                    cal.batch_size, cal.compute_backend.c_str(), n, "layer", "forward_ms", "backward_ms");
        for (std::size_t l = 0; l < cal.layers.size(); ++l)
          std::printf(" %6zu %12.3f %12.3f\n", l, cal.layers[l].forward_s * 1e3, cal.layers[l].backward_s * 1e3);
        std::printf("# optimizer %.3f ms\n", cal.optimizer_s * 1e3);
      }
      std::fprintf(stderr, "ddplab: calibration \"%s\" stored as id %lld in %s\n", req.name.c_str(),
                   static_cast<long long>(id), req.db.c_str());
      if (wrong > 0)
        std::fprintf(stderr, "error: a schedule gave %lld wrong elements (see #wrong)\n",
                     static_cast<long long>(wrong));
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
  const Backend backend = resolved_backend(req, sc);
  require_gpu_backend(req.backend.empty() && sc ? req.scenario + ": train.backend" : "--backend", to_string(backend));
  if (backend == Backend::CudaMpi && !sc)
    throw InputError(
        "--backend cuda+mpi differs from cpu only in the compute it times: give --scenario "
        "(the MLP and batch to time on the GPU)");
  std::vector<std::string> args = {"calibrate",
                                   "--np",
                                   std::to_string(np),
                                   "--name",
                                   req.name,
                                   "--sizes",
                                   req.sizes,
                                   "--coll-iters",
                                   std::to_string(req.coll_iters),
                                   "--db",
                                   req.db,
                                   "--pingpong-budget",
                                   fmt::format("{}", req.pingpong_budget),
                                   "--fit",
                                   req.fit,
                                   "--tolerance",
                                   fmt::format("{}", req.tolerance),
                                   "--backend",
                                   to_string(backend),
                                   "--comm-timeout",
                                   fmt::format("{}", req.comm_timeout)};
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
  if (end.signal)
    std::fprintf(stderr, "ddplab: calibrate interrupted (%s)\n", strsignal(end.signal));
  else if (end.rc != 0)
    std::fprintf(stderr, "error: calibrate failed (mpirun exit %d)\n", end.rc);
  return end.exit_code();
}

}  // namespace

void add_calibrate(CLI::App& app) {
  auto req = std::make_shared<CalibrateRequest>();
  auto* cmd = app.add_subcommand(
      "calibrate", "Measure ping-pong, collectives and compute here; fit and store the simulator's network model");
  auto* np_opt = cmd->add_option("--np", req->np, "Ranks to start (ping-pong runs between rank 0 and each other rank)")
                     ->capture_default_str()
                     ->check(positive_int());
  cmd->add_option("--name", req->name,
                  "Name to store the fit under; a scenario uses it as [cluster] calibration = NAME")
      ->capture_default_str();
  cmd->add_option("--sizes", req->sizes, "Ping-pong message sizes: LO:HI doubling, or a comma list")
      ->capture_default_str();
  cmd->add_option("--coll-sizes", req->coll_sizes, "Allreduce buffer sizes (default: the ping-pong sizes)");
  cmd->add_option("--schedules", req->schedules,
                  "Comma list of allreduce schedules (default: all, and native); none: measure no collectives")
      ->delimiter(',');
  cmd->add_option("--worlds", req->worlds,
                  "World sizes to measure the schedules at, a comma list (the job's first ranks; default: 2, 4, 8, ... "
                  "below --np, and --np)")
      ->delimiter(',');
  cmd->add_option("--coll-iters", req->coll_iters, "Timed iterations per allreduce size")
      ->capture_default_str()
      ->check(positive_int());
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
  cmd->add_option("--scenario", req->scenario,
                  "Also measure per-layer compute of this scenario's MLP at its batch size");
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
