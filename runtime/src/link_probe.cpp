// The measurements behind `ddplab calibrate` (link_probe.hpp), shared by MPI and NCCL.
#include "ddplab/runtime/link_probe.hpp"

#include <algorithm>
#include <chrono>
#include <random>
#include <stdexcept>
#include <string>

#include "ddplab/core/error.hpp"
#include "ddplab/core/stats.hpp"
#include "ddplab/runtime/mlp.hpp"
#include "ddplab/runtime/model_optimizer.hpp"
#include "ddplab/runtime/schedule_executor.hpp"
#include "ddplab/strategies/schedule.hpp"

namespace ddplab {
namespace {

using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t0) { return std::chrono::duration<double>(Clock::now() - t0).count(); }

// Floats in the communicator's memory: the device backend's for a communicator with ChunkMemory (NCCL),
// the host's otherwise. put/get move values in and out (outside any timed part).
class MessageBuffer {
 public:
  MessageBuffer(Communicator& comm, Ops* device, std::size_t floats) : device_(comm.chunk_memory() ? device : nullptr) {
    if (comm.chunk_memory() && !device)
      throw InternalError(
          "link probe: this communicator's buffers live on a device (NCCL); pass the "
          "backend that allocates them");
    floats = std::max<std::size_t>(floats, 1);
    if (device_)
      dev_ = DeviceBuffer(*device_, floats);
    else
      host_.assign(floats, 1.0f);
  }
  float* data() { return device_ ? dev_.data() : host_.data(); }
  void put(const std::vector<float>& v) {
    if (device_)
      device_->to_device(dev_.data(), v.data(), v.size());
    else
      std::copy(v.begin(), v.end(), host_.begin());
  }
  float get_first() {
    if (!device_) return host_[0];
    float v = 0;
    device_->to_host(&v, dev_.data(), 1);
    return v;
  }

 private:
  Ops* device_;
  DeviceBuffer dev_;
  std::vector<float> host_;
};

// Posts are complete: MPI's wait_all completes them; NCCL's only enqueues its group, and ChunkMemory's
// end_step waits for the transfers, as the schedule executor's steps do.
void begin_transfers(Communicator& comm, const char* what) {
  if (ChunkMemory* m = comm.chunk_memory()) m->begin(what);
}
void complete(Communicator& comm) {
  comm.wait_all();
  if (ChunkMemory* m = comm.chunk_memory()) m->end_step();
}

std::size_t floats_for(std::uint64_t bytes) { return static_cast<std::size_t>((bytes + 3) / 4); }

// Spans of queued compute: CUDA events on a device backend (the kernels' own time), else the host clock
// around work that a host backend runs synchronously. Points are taken in order; seconds() after settle().
class Stopwatch {
 public:
  explicit Stopwatch(Ops& ops) : ops_(ops) {}
  void restart() {
    ops_.synchronize();
    ops_.reset_marks();
    host_.clear();
  }
  int point() {
    const int m = ops_.mark();
    if (m >= 0) return m;
    ops_.synchronize();
    host_.push_back(Clock::now());
    return static_cast<int>(host_.size()) - 1;
  }
  void settle() { ops_.synchronize(); }
  double seconds(int a, int b) {
    if (host_.empty()) return ops_.seconds_between(a, b);
    return std::chrono::duration<double>(host_[static_cast<std::size_t>(b)] - host_[static_cast<std::size_t>(a)])
        .count();
  }

 private:
  Ops& ops_;
  std::vector<Clock::time_point> host_;
};

}  // namespace

int pingpong_iters(double warm_rtt_s, double budget_s) {
  // On a slow link a fixed count of large messages takes minutes (64 MiB at 100 Mbit/s: 11 s per round trip).
  if (!(warm_rtt_s > 0)) return 100;
  return static_cast<int>(std::clamp(budget_s / warm_rtt_s, 5.0, 100.0));
}

// Noise on a shared machine (preemption, other jobs) only ever adds time, so the minimum round trip is the
// link's own time; a median of a few round trips was not even monotonic in size under load. Rank 0 chooses
// the count from the warm-ups and sends it to the peer.
std::vector<PingPongRow> measure_pingpong(Communicator& comm, Ops* device, const std::vector<std::uint64_t>& sizes,
                                          double budget_s) {
  const int me = comm.rank();
  std::vector<PingPongRow> rows;
  MessageBuffer buf(comm, device, floats_for(sizes.empty() ? 1 : *std::max_element(sizes.begin(), sizes.end())));
  MessageBuffer count(comm, device, 1);
  for (int peer = 1; peer < comm.size(); ++peer) {
    comm.barrier();
    if (me != 0 && me != peer) continue;
    const int other = me == 0 ? peer : 0;
    auto transfer = [&](bool send, void* data, std::uint64_t bytes) {
      begin_transfers(comm, "ping-pong");
      if (send)
        comm.isend(data, bytes, other, 7);
      else
        comm.irecv(data, bytes, other, 7);
      complete(comm);
    };
    for (std::uint64_t bytes : sizes) {
      auto round_trip = [&] {
        const auto t0 = Clock::now();
        transfer(me == 0, buf.data(), bytes);
        transfer(me != 0, buf.data(), bytes);
        return seconds_since(t0);
      };
      double warm = round_trip();
      warm = std::min(warm, round_trip());
      if (me == 0) count.put({static_cast<float>(pingpong_iters(warm, budget_s))});  // whole numbers to 100: exact
      transfer(me == 0, count.data(), sizeof(float));
      const int iters = static_cast<int>(count.get_first());
      std::vector<double> rtt;
      for (int it = 0; it < iters; ++it) rtt.push_back(round_trip());
      if (me == 0)
        rows.push_back(
            {0, peer, static_cast<std::int64_t>(bytes), iters, *std::min_element(rtt.begin(), rtt.end()) / 2});
    }
  }
  comm.barrier();
  return rows;
}

// The median, not the minimum: a token-bucket shaper lets a burst through faster than its rate after an
// idle moment, which a training step's stream of messages does not get.
std::vector<MessageTime> measure_exchange(Communicator& comm, Ops* device, const std::vector<std::uint64_t>& sizes,
                                          double budget_s) {
  const int me = comm.rank(), n = comm.size();
  const int right = (me + 1) % n, left = (me + n - 1) % n;
  const std::size_t floats = floats_for(sizes.empty() ? 1 : *std::max_element(sizes.begin(), sizes.end()));
  MessageBuffer out(comm, device, floats), in(comm, device, floats);
  std::vector<MessageTime> samples;
  for (std::uint64_t bytes : sizes) {
    auto exchange = [&] {
      const auto t0 = Clock::now();
      begin_transfers(comm, "exchange");
      comm.irecv(in.data(), bytes, left, 10);
      comm.isend(out.data(), bytes, right, 10);
      complete(comm);
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

// Unlike a bare exchange loop this includes what chaining steps costs on a busy machine (a step waits for
// the slowest neighbour's previous one), which training's ring steps pay too. The mean, not the median: the
// jitter of a busy machine (a late neighbour, a preempted rank) is part of every training step's allreduce
// too, and a median would fit allreduces faster than training's (docs/calibration.md compares the fits).
std::vector<MessageTime> measure_ring(Communicator& comm, Ops* device, const std::vector<std::uint64_t>& sizes,
                                      int iters) {
  const int n = comm.size();
  if (n < 2) throw InputError("measure_ring needs at least 2 ranks");
  ScheduleExecutor exec(comm);
  std::vector<MessageTime> samples;
  for (std::uint64_t s : sizes) {
    const std::size_t chunk = std::max<std::uint64_t>(1, s / 4);  // floats per rank's chunk
    const Schedule ring = make_schedule("ring", n, chunk * static_cast<std::size_t>(n));
    MessageBuffer buf(comm, device, ring.count);
    const std::vector<float> ones(ring.count, 1.0f);
    comm.barrier();
    std::vector<double> t;
    for (int it = -2; it < std::max(iters, 5); ++it) {
      buf.put(ones);  // keep the sums finite
      if (device) device->synchronize();
      const auto t0 = Clock::now();
      exec.run(ring, buf.data());
      if (it >= 0) t.push_back(seconds_since(t0));
    }
    double m = 0;
    for (double v : t) m += v / static_cast<double>(t.size());
    comm.allreduce_sum(&m, 1);
    samples.push_back({chunk * 4, m / n / (2.0 * (n - 1))});
  }
  comm.barrier();
  return samples;
}

MlpComputeTimes measure_mlp_compute(Communicator& comm, Ops& ops, const std::vector<int>& w, int batch,
                                    std::uint64_t seed, int reps, const OptimizerConfig& optimizer_config) {
  if (w.size() < 2) throw InputError("measure_mlp_compute: an MLP needs at least 2 widths");
  if (batch < 1 || reps < 1) throw InputError("measure_mlp_compute: batch and reps must be >= 1");
  const int L = static_cast<int>(w.size()) - 1;
  const auto ul = [](int l) { return static_cast<std::size_t>(l); };
  Mlp mlp(ops, w, batch);
  mlp.init(seed);
  std::mt19937 rng(static_cast<unsigned>(seed + static_cast<std::uint64_t>(comm.rank())));
  std::uniform_real_distribution<float> u(0, 1);
  std::vector<float> xh(static_cast<std::size_t>(batch) * w[0]);
  for (auto& v : xh) v = u(rng);
  std::vector<std::int32_t> yh(static_cast<std::size_t>(batch));
  for (auto& v : yh) v = static_cast<std::int32_t>(rng() % static_cast<unsigned>(w.back()));
  DeviceBuffer x(ops, xh.size());
  ops.to_device(x.data(), xh.data(), xh.size());
  std::int32_t* y = ops.alloc_labels(yh.size());
  ops.labels_to_device(y, yh.data(), yh.size());
  std::vector<DeviceBuffer> act;
  for (int l = 0; l < L; ++l) act.emplace_back(ops, static_cast<std::size_t>(batch) * w[ul(l + 1)]);
  const auto& info = mlp.param_info();
  ModelOptimizer optimizer(ops, mlp, optimizer_config);  // at lr 0 below, so the parameters stay put

  Stopwatch watch(ops);
  std::vector<std::vector<double>> fwd(ul(L)), bwd(ul(L));
  std::vector<double> opt;
  for (int rep = -2; rep < reps; ++rep) {
    // Forward as Mlp::forward runs it, timed per layer.
    watch.restart();
    std::vector<int> fp = {watch.point()};
    const float* in = x.data();
    for (int l = 0; l < L; ++l) {
      float* out = act[ul(l)].data();
      const int k = w[ul(l)], m = w[ul(l + 1)];
      ops.gemm(false, true, batch, m, k, 1.0f, in, k, mlp.params() + info[ul(2 * l)].offset, k, 0.0f, out, m);
      ops.add_bias(out, mlp.params() + info[ul(2 * l + 1)].offset, batch, m);
      if (l + 1 < L) ops.relu(out, static_cast<std::size_t>(batch) * m);
      fp.push_back(watch.point());
      in = out;
    }
    watch.settle();
    if (rep >= 0)
      for (int l = 0; l < L; ++l) fwd[ul(l)].push_back(watch.seconds(fp[ul(l)], fp[ul(l + 1)]));

    mlp.forward(x.data(), batch);  // the state backward needs
    watch.restart();
    std::vector<int> bp = {watch.point()};
    mlp.loss_grad(y);
    for (int l = L - 1; l >= 0; --l) {
      mlp.backward_layer(l);
      bp.push_back(watch.point());
    }
    const int o0 = watch.point();
    optimizer.step(rep + 3, 0.0f);  // update 1 first (rep -2): its own path, as in training
    const int o1 = watch.point();
    watch.settle();
    if (rep >= 0) {
      for (int i = 0; i < L; ++i) bwd[ul(L - 1 - i)].push_back(watch.seconds(bp[ul(i)], bp[ul(i + 1)]));
      opt.push_back(watch.seconds(o0, o1));
    }
  }
  std::vector<double> v;
  for (int l = 0; l < L; ++l) {
    v.push_back(median(fwd[ul(l)]));
    v.push_back(median(bwd[ul(l)]));
  }
  v.push_back(median(opt));
  comm.allreduce_sum(v.data(), v.size());
  const double n = comm.size();
  MlpComputeTimes out;
  for (int l = 0; l < L; ++l) {
    out.forward_s.push_back(v[2 * ul(l)] / n);
    out.backward_s.push_back(v[2 * ul(l) + 1] / n);
  }
  out.optimizer_s = v.back() / n;
  ops.free_labels(y);
  return out;
}

}  // namespace ddplab
