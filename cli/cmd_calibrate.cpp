// `ddplab calibrate`: measures this machine's network and compute under MPI, fits the simulator's network
// model to it (calibration.hpp) and stores the fit by name, with the measurements, in the results store.
//
// Measured on the job's ranks: (1) ping-pong between rank 0 and every other rank over message sizes;
// (2) every allreduce schedule over sizes at the job's world size (the `bench collectives` tables, stored
// as a bench so that `ddplab validate` replays it); (3) with --scenario, per-layer forward and backward
// and the optimizer of the scenario's MLP at its batch size, on every rank at once (as training loads the
// cores), averaged over ranks.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <optional>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "commands.hpp"
#include "ddplab/core/scenario.hpp"
#include "ddplab/core/store.hpp"
#include "ddplab/core/units.hpp"
#include "ddplab/core/version.hpp"
#include "ddplab/runtime/collective_bench.hpp"
#include "ddplab/runtime/communicator.hpp"
#include "ddplab/runtime/mlp.hpp"
#include "ddplab/runtime/ops.hpp"
#include "ddplab/simulator/calibration.hpp"
#include "ddplab/strategies/schedule.hpp"
#include "launch.hpp"
#include "testbed.hpp"

namespace ddplab::cli {
namespace {

using Clock = std::chrono::steady_clock;

struct CalibrateRequest {
  int np = 2;
  bool np_given = false;
  std::string name = "here";
  std::string sizes = "1KiB:64MiB";       // ping-pong
  std::string coll_sizes;                 // collectives; empty: the ping-pong sizes
  std::vector<std::string> schedules;     // empty: every allreduce schedule + native
  int coll_iters = 5;
  std::string scenario;                   // optional: per-layer compute of its MLP
  std::string db = kDefaultDb;
  double tolerance = 0.01;
  bool testbed = false;
  std::string testbed_tag;                // set by the launcher
};

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  const std::size_t m = v.size() / 2;
  return v.size() % 2 ? v[m] : 0.5 * (v[m - 1] + v[m]);
}

// Round trips of `bytes` between rank 0 and `peer`: fewer for large messages, at least 10, after 2 warmups.
int pingpong_iters(std::uint64_t bytes) {
  return static_cast<int>(std::clamp<std::uint64_t>((32ull << 20) / std::max<std::uint64_t>(bytes, 1), 10, 100));
}

// Every rank calls it; rank 0 gets one row per (peer, size): one-way = half the fastest round trip. Noise
// on a shared machine (preemption, other jobs) only ever adds time, so the minimum is the link's own time;
// a median of a few round trips was not even monotonic in size under load.
std::vector<PingPongRow> measure_pingpong(Communicator& comm, const std::vector<std::uint64_t>& sizes) {
  const int me = comm.rank();
  std::vector<PingPongRow> rows;
  std::vector<char> buf(sizes.empty() ? 1 : sizes.back(), 1);
  for (int peer = 1; peer < comm.size(); ++peer) {
    comm.barrier();
    if (me != 0 && me != peer) continue;
    for (std::uint64_t bytes : sizes) {
      const int iters = pingpong_iters(bytes);
      std::vector<double> rtt;
      for (int it = -2; it < iters; ++it) {
        const auto t0 = Clock::now();
        if (me == 0) {
          comm.isend(buf.data(), bytes, peer, 7);
          comm.wait_all();
          comm.irecv(buf.data(), bytes, peer, 8);
          comm.wait_all();
          if (it >= 0) rtt.push_back(seconds_since(t0));
        } else {
          comm.irecv(buf.data(), bytes, 0, 7);
          comm.wait_all();
          comm.isend(buf.data(), bytes, 0, 8);
          comm.wait_all();
        }
      }
      if (me == 0) rows.push_back({0, peer, static_cast<std::int64_t>(bytes), iters, *std::min_element(rtt.begin(), rtt.end()) / 2});
    }
  }
  comm.barrier();
  return rows;
}

// Per sample size, the median one-way time over peers: the link class's samples.
std::vector<PingPongSample> samples_of(const std::vector<PingPongRow>& rows, const std::vector<std::uint64_t>& sizes) {
  std::vector<PingPongSample> out;
  for (std::uint64_t s : sizes) {
    std::vector<double> t;
    for (const auto& r : rows)
      if (static_cast<std::uint64_t>(r.bytes) == s) t.push_back(r.one_way_s);
    if (!t.empty()) out.push_back({s, median(t)});
  }
  return out;
}

// Per-layer forward (GEMM, bias, ReLU, as Mlp::forward) and backward (Mlp::backward_layer; the loss
// gradient counts with the last layer), and one SGD-momentum update of every parameter, each the median
// of `reps` repetitions; averaged over ranks.
void measure_compute(Communicator& comm, const Scenario& sc, Calibration& cal, int reps) {
  const std::vector<int>& w = sc.model.layers;
  const int batch = sc.train.batch_size, L = static_cast<int>(w.size()) - 1;
  auto ops = make_ops("cpu");
  Mlp mlp(*ops, w, batch);
  mlp.init(sc.train.seed);
  std::mt19937 rng(static_cast<unsigned>(sc.train.seed + comm.rank()));
  std::uniform_real_distribution<float> u(0, 1);
  std::vector<float> xh(static_cast<std::size_t>(batch) * w[0]);
  for (auto& v : xh) v = u(rng);
  std::vector<std::int32_t> yh(static_cast<std::size_t>(batch));
  for (auto& v : yh) v = static_cast<std::int32_t>(rng() % static_cast<unsigned>(w.back()));
  float* x = ops->alloc(xh.size());
  ops->to_device(x, xh.data(), xh.size());
  std::int32_t* y = ops->alloc_labels(yh.size());
  ops->labels_to_device(y, yh.data(), yh.size());
  std::vector<float*> act(static_cast<std::size_t>(L));
  for (int l = 0; l < L; ++l) act[static_cast<std::size_t>(l)] = ops->alloc(static_cast<std::size_t>(batch) * w[l + 1]);
  float* mom = ops->alloc(mlp.num_params());
  const auto& info = mlp.param_info();

  std::vector<std::vector<double>> fwd(static_cast<std::size_t>(L)), bwd(static_cast<std::size_t>(L));
  std::vector<double> opt;
  for (int rep = -2; rep < reps; ++rep) {
    const float* in = x;
    for (int l = 0; l < L; ++l) {
      float* out = act[static_cast<std::size_t>(l)];
      ops->synchronize();
      const auto t0 = Clock::now();
      ops->gemm(false, true, batch, w[l + 1], w[l], 1.0f, in, w[l], mlp.params() + info[2 * l].offset, w[l], 0.0f, out, w[l + 1]);
      ops->add_bias(out, mlp.params() + info[2 * l + 1].offset, batch, w[l + 1]);
      if (l + 1 < L) ops->relu(out, static_cast<std::size_t>(batch) * w[l + 1]);
      ops->synchronize();
      if (rep >= 0) fwd[static_cast<std::size_t>(l)].push_back(seconds_since(t0));
      in = out;
    }
    mlp.forward(x, batch);  // the state backward needs
    ops->synchronize();
    auto t0 = Clock::now();
    mlp.loss_grad(y);
    for (int l = L - 1; l >= 0; --l) {
      mlp.backward_layer(l);
      ops->synchronize();
      if (rep >= 0) bwd[static_cast<std::size_t>(l)].push_back(seconds_since(t0));
      t0 = Clock::now();
    }
    ops->synchronize();
    t0 = Clock::now();
    ops->sgd_momentum(mlp.params(), mlp.grads(), mom, mlp.num_params(), 0.0f, 0.9f, 0.0f, rep == -2);
    ops->synchronize();
    if (rep >= 0) opt.push_back(seconds_since(t0));
  }
  std::vector<double> v;
  for (int l = 0; l < L; ++l) {
    v.push_back(median(fwd[static_cast<std::size_t>(l)]));
    v.push_back(median(bwd[static_cast<std::size_t>(l)]));
  }
  v.push_back(median(opt));
  comm.allreduce_sum(v.data(), v.size());
  const double n = comm.size();
  cal.layer_widths = w;
  cal.batch_size = batch;
  cal.layers.clear();
  for (int l = 0; l < L; ++l) cal.layers.push_back({v[2 * static_cast<std::size_t>(l)] / n, v[2 * static_cast<std::size_t>(l) + 1] / n});
  cal.optimizer_s = v.back() / n;
  ops->free(x);
  ops->free_labels(y);
  for (float* a : act) ops->free(a);
  ops->free(mom);
}

std::vector<std::string> resolve_schedules(const std::vector<std::string>& given) {
  std::vector<std::string> names = given.empty() ? allreduce_schedule_names() : given;
  for (const auto& s : names)
    if (!has_schedule(s, "allreduce")) throw std::invalid_argument("--schedules: unknown allreduce schedule \"" + s + "\"");
  return names;
}

void print_fit(const Calibration& c) {
  std::printf("# calibration \"%s\" (link class %s): latency %s, bandwidth %.3f GB/s, %zu size intervals\n",
              c.name.c_str(), c.link_class.c_str(), format_duration(c.latency_s).c_str(), c.bandwidth / 1e9,
              c.segments.size());
  std::printf("#%13s %12s %12s\n", "from (B)", "lat_factor", "bw_factor");
  for (const auto& s : c.segments)
    std::printf(" %13llu %12.4f %12.4f\n", static_cast<unsigned long long>(s.from_bytes), s.lat_factor, s.bw_factor);
  std::printf("#%13s %14s %14s %9s\n", "size (B)", "measured_us", "fitted_us", "error %");
  double worst = 0;
  for (const auto& s : c.samples) {
    const double fit = c.predict(static_cast<double>(s.bytes)), err = 100 * (fit - s.one_way_s) / s.one_way_s;
    worst = std::max(worst, std::abs(err));
    std::printf(" %13llu %14.3f %14.3f %9.2f\n", static_cast<unsigned long long>(s.bytes), s.one_way_s * 1e6,
                fit * 1e6, err);
  }
  std::printf("# max |error| %.2f%% over %zu sizes\n", worst, c.samples.size());
}

// One rank of the job. Rank 0 fits, prints and stores.
int calibrate_worker(const CalibrateRequest& req) {
  int argc = 0;
  char** argv = nullptr;
  auto comm = make_mpi_communicator(&argc, &argv);
  const int me = comm->rank(), n = comm->size();
  try {
    if (n < 2) throw std::invalid_argument("calibrate needs at least 2 ranks for ping-pong (--np 2 or more)");
    const auto sizes = parse_size_list(req.sizes);
    std::optional<Scenario> sc;
    if (!req.scenario.empty()) sc = load_scenario(req.scenario);
    if (sc && sc->model.type != "mlp")
      throw std::invalid_argument(req.scenario + ": per-layer compute is measured for MLP scenarios only");

    const auto rows = measure_pingpong(*comm, sizes);
    Calibration cal;
    if (me == 0) {
      cal = fit_pingpong(samples_of(rows, sizes), req.tolerance);
      cal.name = req.name;
      cal.link_class = req.testbed_tag.empty() ? "mpi" : "testbed";
    }
    if (sc) measure_compute(*comm, *sc, cal, 10);

    std::unique_ptr<Store> store;
    if (me == 0) store = std::make_unique<Store>(req.db);
    CollectiveBenchOptions opt;
    opt.sizes = parse_size_list(req.coll_sizes.empty() ? req.sizes : req.coll_sizes);
    opt.schedules = resolve_schedules(req.schedules);
    opt.iters = req.coll_iters;
    opt.warmup = 2;
    const char* local = std::getenv("OMPI_COMM_WORLD_LOCAL_SIZE");
    opt.ranks_per_node = local ? std::max(1, std::atoi(local)) : n;
    comm->broadcast(&opt.ranks_per_node, sizeof opt.ranks_per_node, 0);
    std::int64_t bench_id = 0;
    if (me == 0) {
      nlohmann::json extra = {{"calibration", req.name}};
      if (!req.testbed_tag.empty()) extra["testbed"] = nlohmann::json::parse(req.testbed_tag);
      bench_id = begin_collective_bench(*store, opt, n, extra);
      std::printf("#\n# allreduce schedules at world %d (stored as bench %lld)\n#%17s %12s %11s %11s %7s\n", n,
                  static_cast<long long>(bench_id), "schedule", "size (B)", "time_us", "busbw GB/s", "#wrong");
    }
    std::int64_t wrong = 0;
    run_collective_bench(*comm, opt, [&](const CollectiveBenchRow& r) {
      wrong += r.wrong.value_or(0);
      if (me != 0) return;
      store->add_bench_row(bench_id, r);
      std::printf(" %17s %12lld %11.2f %11.3f %7lld\n", r.schedule.c_str(), static_cast<long long>(r.bytes), r.time_us,
                  r.busbw_gbs, static_cast<long long>(r.wrong.value_or(0)));
    });
    if (me == 0) {
      store->finish_bench(bench_id, wrong == 0 ? "completed" : "failed");
      nlohmann::json host = nlohmann::json::parse(host_info_json());
      host["world_size"] = n;
      if (!req.testbed_tag.empty()) host["testbed"] = nlohmann::json::parse(req.testbed_tag);
      nlohmann::json fit = cal.to_json();
      fit["bench_id"] = bench_id;
      if (sc) fit["scenario"] = sc->name;
      const std::int64_t id = store->add_calibration({0, req.name, "", host.dump(), fit.dump()}, rows);
      std::printf("#\n");
      print_fit(cal);
      if (!cal.layers.empty()) {
        std::printf("# compute of %s at batch %d (mean over %d ranks)\n#%6s %12s %12s\n", sc->name.c_str(),
                    cal.batch_size, n, "layer", "forward_ms", "backward_ms");
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
    comm->abort(1);
  }
  return 1;  // not reached: abort ends the job
}

int calibrate(const CalibrateRequest& req) {
  if (under_mpi_launcher()) return calibrate_worker(req);
  std::optional<testbed::State> bed;
  if (req.testbed) bed = testbed::require_up(req.np_given ? std::optional<int>(req.np) : std::nullopt);
  const int np = bed ? bed->hosts : req.np;
  if (np < 2) throw std::invalid_argument(fmt::format("--np must be at least 2 (ping-pong needs a pair), got {}", np));
  for (const std::string* s : {&req.sizes, &req.coll_sizes}) {
    if (s->empty()) continue;
    try {
      parse_size_list(*s);
    } catch (const std::invalid_argument& e) {
      throw std::invalid_argument(fmt::format("--sizes {}: {}", *s, e.what()));
    }
  }
  if (parse_size_list(req.sizes).size() < 2) throw std::invalid_argument("--sizes must give at least 2 sizes to fit");
  resolve_schedules(req.schedules);
  if (!req.scenario.empty()) load_scenario(req.scenario);  // its errors now, before any rank starts
  std::vector<std::string> args = {"calibrate", "--np", std::to_string(np), "--name", req.name, "--sizes", req.sizes,
                                   "--coll-iters", std::to_string(req.coll_iters), "--db", req.db,
                                   "--tolerance", fmt::format("{}", req.tolerance)};
  if (!req.coll_sizes.empty()) args.insert(args.end(), {"--coll-sizes", req.coll_sizes});
  if (!req.schedules.empty()) {
    std::string joined;
    for (const auto& s : req.schedules) joined += (joined.empty() ? "" : ",") + s;
    args.insert(args.end(), {"--schedules", joined});
  }
  if (!req.scenario.empty()) args.insert(args.end(), {"--scenario", req.scenario});
  if (bed) args.insert(args.end(), {"--testbed-tag", testbed::run_tag(*bed).dump()});
  const LaunchPlan plan = plan_launch(np, args, bed ? testbed::mpirun_args(*bed) : std::vector<std::string>{});
  std::fprintf(stderr, "ddplab: %s\n", shell_join(plan.argv).c_str());
  const int rc = execute(plan);
  if (rc != 0) std::fprintf(stderr, "error: calibrate failed (mpirun exit %d)\n", rc);
  return rc;
}

}  // namespace

void add_calibrate(CLI::App& app) {
  auto req = std::make_shared<CalibrateRequest>();
  auto* cmd = app.add_subcommand("calibrate", "Measure ping-pong, collectives and compute here; fit and store the simulator's network model");
  auto* np_opt = cmd->add_option("--np", req->np, "Ranks to start (ping-pong runs between rank 0 and each other rank)")
                     ->capture_default_str();
  cmd->add_option("--name", req->name, "Name to store the fit under; a scenario uses it as [cluster] calibration = NAME")
      ->capture_default_str();
  cmd->add_option("--sizes", req->sizes, "Ping-pong message sizes: LO:HI doubling, or a comma list")->capture_default_str();
  cmd->add_option("--coll-sizes", req->coll_sizes, "Allreduce buffer sizes (default: the ping-pong sizes)");
  cmd->add_option("--schedules", req->schedules, "Comma list of allreduce schedules (default: all, and native)")
      ->delimiter(',');
  cmd->add_option("--coll-iters", req->coll_iters, "Timed iterations per allreduce size")->capture_default_str()->check(CLI::PositiveNumber);
  cmd->add_option("--scenario", req->scenario, "Also measure per-layer compute of this scenario's MLP at its batch size");
  cmd->add_option("--tolerance", req->tolerance, "Relative error each size interval's fit must stay within")
      ->capture_default_str()
      ->check(CLI::Range(1e-6, 1.0));
  cmd->add_option("--db", req->db, "Results store (SQLite)")->capture_default_str();
  cmd->add_flag("--testbed", req->testbed, "One rank per host of the emulated cluster (`ddplab testbed up`)");
  cmd->add_option("--testbed-tag", req->testbed_tag)->group("");
  cmd->footer(
      "Fit: one-way time t(s) = lat_factor(s) * latency + s / (bw_factor(s) * bandwidth), factors constant over\n"
      "size intervals (as SMPI's network factors). latency is the smallest messages' (factor 1 in the first\n"
      "interval), bandwidth the largest messages' (factor 1 in the last). Intervals are the fewest whose affine\n"
      "fit stays within --tolerance of every measured size. The table prints measured vs fitted per size.");
  cmd->callback([req, np_opt] {
    req->np_given = np_opt->count() > 0;
    g_exit_code = calibrate(*req);
  });
}

}  // namespace ddplab::cli
