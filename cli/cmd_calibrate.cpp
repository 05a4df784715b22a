// `ddplab calibrate`: measures this machine's network and compute under MPI, fits the simulator's network
// model to it (calibration.hpp) and stores the fit by name, with the measurements, in the results store.
//
// Measured on the job's ranks: (1) ping-pong between rank 0 and every other rank over message sizes; (2)
// what the fit describes (--fit): by default the runtime's own ring allreduce of n x each size, whose steps
// are exchanges of one chunk of that size (every rank sends right, receives left), as training runs them;
// (3) every allreduce schedule over sizes at the job's world size (the `bench collectives` tables, stored as
// a bench so that `ddplab validate` replays it; --schedules none skips it); (4) with --scenario, per-layer
// forward and backward and the optimizer of the scenario's MLP at its batch size, on every rank at once (as
// training loads the cores), averaged over ranks.
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
#include "validators.hpp"
#include "ddplab/core/scenario.hpp"
#include "ddplab/core/store.hpp"
#include "ddplab/core/units.hpp"
#include "ddplab/core/version.hpp"
#include "ddplab/runtime/collective_bench.hpp"
#include "ddplab/runtime/communicator.hpp"
#include "ddplab/runtime/mlp.hpp"
#include "ddplab/runtime/ops.hpp"
#include "ddplab/runtime/schedule_executor.hpp"
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
  double pingpong_budget = 1.0;           // seconds of round trips per size and peer
  std::string fit = "ring";               // what the simulator's fit describes: "ring", "exchange" or "pingpong"
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

// Round trips of `bytes` between rank 0 and `peer` after 2 warm-ups: as many as fit in `budget_s` seconds
// (judged from the warm-ups), at least 5 and at most 100. On a slow link a fixed count of large messages
// takes minutes (64 MiB at 100 Mbit/s: 11 s per round trip).
int pingpong_iters(double warm_rtt_s, double budget_s) {
  if (!(warm_rtt_s > 0)) return 100;
  return static_cast<int>(std::clamp(budget_s / warm_rtt_s, 5.0, 100.0));
}

// Every rank calls it; rank 0 gets one row per (peer, size): one-way = half the fastest round trip. Noise
// on a shared machine (preemption, other jobs) only ever adds time, so the minimum is the link's own time;
// a median of a few round trips was not even monotonic in size under load. Rank 0 chooses the count from
// the warm-ups and tells the peer.
std::vector<PingPongRow> measure_pingpong(Communicator& comm, const std::vector<std::uint64_t>& sizes, double budget_s) {
  const int me = comm.rank();
  std::vector<PingPongRow> rows;
  std::vector<char> buf(sizes.empty() ? 1 : sizes.back(), 1);
  for (int peer = 1; peer < comm.size(); ++peer) {
    comm.barrier();
    if (me != 0 && me != peer) continue;
    for (std::uint64_t bytes : sizes) {
      auto round_trip = [&] {
        const auto t0 = Clock::now();
        if (me == 0) {
          comm.isend(buf.data(), bytes, peer, 7);
          comm.wait_all();
          comm.irecv(buf.data(), bytes, peer, 8);
          comm.wait_all();
        } else {
          comm.irecv(buf.data(), bytes, 0, 7);
          comm.wait_all();
          comm.isend(buf.data(), bytes, 0, 8);
          comm.wait_all();
        }
        return seconds_since(t0);
      };
      double warm = round_trip();
      warm = std::min(warm, round_trip());
      std::int32_t iters = pingpong_iters(warm, budget_s);
      if (me == 0) comm.isend(&iters, sizeof iters, peer, 9);
      else comm.irecv(&iters, sizeof iters, 0, 9);
      comm.wait_all();
      std::vector<double> rtt;
      for (int it = 0; it < iters; ++it) rtt.push_back(round_trip());
      if (me == 0) rows.push_back({0, peer, static_cast<std::int64_t>(bytes), iters, *std::min_element(rtt.begin(), rtt.end()) / 2});
    }
  }
  comm.barrier();
  return rows;
}

// Every rank at once sends `bytes` to its right neighbour and receives as much from its left, back to back:
// the pattern of each step of a ring allreduce (with 2 ranks both directions of one pair, which Open MPI's
// TCP transport carries on one connection). Per size, the median over iterations of each rank's time per
// exchange, averaged over ranks. The median, not the minimum: a token-bucket shaper lets a burst through
// faster than its rate after an idle moment, which a training step's stream of messages does not get.
std::vector<PingPongSample> measure_exchange(Communicator& comm, const std::vector<std::uint64_t>& sizes, double budget_s) {
  const int me = comm.rank(), n = comm.size();
  const int right = (me + 1) % n, left = (me + n - 1) % n;
  std::vector<char> out(sizes.empty() ? 1 : sizes.back(), 1), in(out.size());
  std::vector<PingPongSample> samples;
  for (std::uint64_t bytes : sizes) {
    auto exchange = [&] {
      const auto t0 = Clock::now();
      comm.irecv(in.data(), bytes, left, 10);
      comm.isend(out.data(), bytes, right, 10);
      comm.wait_all();
      return seconds_since(t0);
    };
    comm.barrier();
    double warm = exchange();
    warm = std::min(warm, exchange());
    std::int32_t iters = pingpong_iters(2 * warm, budget_s);
    comm.broadcast(&iters, sizeof iters, 0);
    std::vector<double> t;
    for (int it = 0; it < iters; ++it) t.push_back(exchange());
    double m = median(t);
    comm.allreduce_sum(&m, 1);
    samples.push_back({bytes, m / n});
  }
  comm.barrier();
  return samples;
}

// The runtime's own ring allreduce (ScheduleExecutor, as training runs it) of n x s bytes for each sample
// size s: 2(n-1) steps, each an exchange of s-byte chunks, so one allreduce's time t / (2(n-1)) is the
// one-way sample at size s. Unlike a bare exchange loop it includes what chaining steps costs on a busy
// machine (a step waits for the slowest neighbour's previous one), which made training's ring steps ~20%
// slower than the bare exchange on the 3-host test bed. Per size: 2 warm-ups, then `iters` allreduces (at
// least 5); each rank's mean, averaged over ranks. The mean, not the median: the jitter of a busy machine
// (a late neighbour, a preempted rank) is part of every training step's allreduce too; on the test bed the
// median fitted allreduces 7-10% faster than training's, the mean within 1-4%.
std::vector<PingPongSample> measure_ring(Communicator& comm, const std::vector<std::uint64_t>& sizes, int iters) {
  const int n = comm.size();
  ScheduleExecutor exec(comm);
  std::vector<PingPongSample> samples;
  for (std::uint64_t s : sizes) {
    const std::size_t chunk = std::max<std::uint64_t>(1, s / 4);  // floats per rank's chunk
    const Schedule ring = make_schedule("ring", n, chunk * static_cast<std::size_t>(n));
    std::vector<float> buf(ring.count, 1.0f);
    comm.barrier();
    std::vector<double> t;
    for (int it = -2; it < std::max(iters, 5); ++it) {
      const auto t0 = Clock::now();
      exec.run(ring, buf.data());
      if (it >= 0) t.push_back(seconds_since(t0));
      std::fill(buf.begin(), buf.end(), 1.0f);  // keep the sums finite
    }
    double m = 0;
    for (double v : t) m += v / static_cast<double>(t.size());
    comm.allreduce_sum(&m, 1);
    samples.push_back({chunk * 4, m / n / (2.0 * (n - 1))});
  }
  comm.barrier();
  return samples;
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

// The allreduce schedules to measure; `none` alone: no collectives at all.
std::vector<std::string> resolve_schedules(const std::vector<std::string>& given) {
  if (given.size() == 1 && given[0] == "none") return {};
  std::vector<std::string> names = given.empty() ? allreduce_schedule_names() : given;
  for (const auto& s : names)
    if (!has_schedule(s, "allreduce")) throw std::invalid_argument("--schedules: unknown allreduce schedule \"" + s + "\"");
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

    const auto rows = measure_pingpong(*comm, sizes, req.pingpong_budget);
    std::vector<PingPongSample> exchange;
    if (req.fit == "exchange") exchange = measure_exchange(*comm, sizes, req.pingpong_budget);
    if (req.fit == "ring") exchange = measure_ring(*comm, sizes, req.coll_iters);
    Calibration cal, pingpong_fit;
    if (me == 0) {
      try {
        pingpong_fit = fit_pingpong(samples_of(rows, sizes), req.tolerance);
      } catch (const CalibrationError&) {
        if (req.fit == "pingpong") throw;  // otherwise it is only printed: a shaper's burst can defeat it
      }
      pingpong_fit.name = req.name + " (ping-pong)";
      cal = req.fit == "pingpong" ? pingpong_fit : fit_exchange(exchange, req.tolerance, true);
      cal.fitted = req.fit;
      cal.name = req.name;
      cal.link_class = req.testbed_tag.empty() ? "mpi" : "testbed";
      pingpong_fit.link_class = cal.link_class;
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
    std::int64_t wrong = 0;
    if (!opt.schedules.empty()) {
      if (me == 0) {
        nlohmann::json extra = {{"calibration", req.name}};
        if (!req.testbed_tag.empty()) extra["testbed"] = nlohmann::json::parse(req.testbed_tag);
        bench_id = begin_collective_bench(*store, opt, n, extra);
        std::printf("#\n# allreduce schedules at world %d (stored as bench %lld)\n#%17s %12s %11s %11s %7s\n", n,
                    static_cast<long long>(bench_id), "schedule", "size (B)", "time_us", "busbw GB/s", "#wrong");
      }
      run_collective_bench(*comm, opt, [&](const CollectiveBenchRow& r) {
        wrong += r.wrong.value_or(0);
        if (me != 0) return;
        store->add_bench_row(bench_id, r);
        std::printf(" %17s %12lld %11.2f %11.3f %7lld\n", r.schedule.c_str(), static_cast<long long>(r.bytes), r.time_us,
                    r.busbw_gbs, static_cast<long long>(r.wrong.value_or(0)));
      });
    }
    if (me == 0) {
      if (bench_id) store->finish_bench(bench_id, wrong == 0 ? "completed" : "failed");
      nlohmann::json host = nlohmann::json::parse(host_info_json());
      host["world_size"] = n;
      if (!req.testbed_tag.empty()) host["testbed"] = nlohmann::json::parse(req.testbed_tag);
      nlohmann::json fit = cal.to_json();
      if (bench_id) fit["bench_id"] = bench_id;
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
                                   "--pingpong-budget", fmt::format("{}", req.pingpong_budget), "--fit", req.fit,
                                   "--tolerance", fmt::format("{}", req.tolerance)};
  if (!req.coll_sizes.empty()) args.insert(args.end(), {"--coll-sizes", req.coll_sizes});
  if (!req.schedules.empty()) {
    std::string joined;
    for (const auto& s : req.schedules) joined += (joined.empty() ? "" : ",") + s;
    args.insert(args.end(), {"--schedules", joined});
  }
  if (!req.scenario.empty()) args.insert(args.end(), {"--scenario", req.scenario});
  if (bed) args.insert(args.end(), {"--testbed-tag", testbed::run_tag(*bed).dump()});
  require_writable_store(req.db);
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
                     ->capture_default_str()
                     ->check(positive_int());
  cmd->add_option("--name", req->name, "Name to store the fit under; a scenario uses it as [cluster] calibration = NAME")
      ->capture_default_str();
  cmd->add_option("--sizes", req->sizes, "Ping-pong message sizes: LO:HI doubling, or a comma list")->capture_default_str();
  cmd->add_option("--coll-sizes", req->coll_sizes, "Allreduce buffer sizes (default: the ping-pong sizes)");
  cmd->add_option("--schedules", req->schedules,
                  "Comma list of allreduce schedules (default: all, and native); none: measure no collectives")
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
  cmd->add_option("--tolerance", req->tolerance, "Relative error each size interval's fit must stay within")
      ->capture_default_str()
      ->check(number_in(1e-6, 1.0));
  cmd->add_option("--db", req->db, "Results store (SQLite)")->capture_default_str();
  cmd->add_flag("--testbed", req->testbed, "One rank per host of the emulated cluster (`ddplab testbed up`)");
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
