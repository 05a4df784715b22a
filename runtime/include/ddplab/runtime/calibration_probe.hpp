// What each rank of `ddplab calibrate` measures, put together from link_probe.hpp, codec_probe.hpp and
// collective_bench.hpp: (1) the links over the calibration's transport: ping-pong between rank 0 and every
// other rank, and the samples under load the fit describes (the runtime's ring allreduce steps, or a bare
// exchange); (2) the per-layer compute of a scenario's MLP and the codecs' local work on the compute backend;
// (3) every allreduce schedule at several world sizes, each stored as a bench so that `ddplab validate`
// replays it. The fits of what it measures are the simulator's (simulator/calibration.hpp).
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

#include "ddplab/core/scenario.hpp"
#include "ddplab/core/store.hpp"
#include "ddplab/runtime/codec_probe.hpp"
#include "ddplab/runtime/collective_bench.hpp"
#include "ddplab/runtime/communicator.hpp"
#include "ddplab/runtime/link_probe.hpp"
#include "ddplab/runtime/transport.hpp"

namespace ddplab {

// Every rank's node (its host name; "rank<r>" when it has none), on every rank, in rank order. Collective.
std::vector<std::string> node_names(Communicator& comm);

// The world sizes the schedules are measured at: `worlds` (each 2..n, else InputError naming --worlds), else
// 2, 4, 8, ... below n, and n itself. Ascending, without repeats.
std::vector<int> schedule_worlds(std::vector<int> worlds, int n);

struct LinkSamples {
  std::vector<PingPongRow> pingpong;  // rank 0: one row per (peer, size); the other ranks: none
  std::vector<std::string> nodes;     // rank r's node, on every rank
  std::vector<MessageTime> loaded;    // fit "ring": ring allreduce steps; "exchange": the exchange; "pingpong": none
};

struct ComputeSamples {
  std::optional<MlpComputeTimes> mlp;       // with a scenario: its MLP at its batch size, averaged over ranks
  std::string compute_backend;              // Ops::name() of the backend that ran it
  std::vector<CodecWorkTiming> codec_work;  // when asked for
  std::string codec_backend;                // the CodecCompute that ran it ("host", "cuda")
};

struct ScheduleBenches {
  std::vector<std::int64_t> ids;  // rank 0: one bench per world size, ascending world
  std::int64_t wrong = 0;         // elements wrong, over the benches this rank took part in
};

// Rank 0 is told of each world's bench before its rows (begin) and of each row once stored.
struct ScheduleBenchHooks {
  std::function<void(int world, std::int64_t bench_id)> begin;
  BenchRowSink row;
};

// One rank's part of a calibration. Every rank calls the same members in the same order (each is
// collective). It keeps every transport it opens (NCCL communicators, the groups of the schedules' smaller
// worlds) until it is destroyed, so that a worker that catches an error can abort the job first: tearing an
// NCCL communicator down could wait for peers still inside a collective.
class CalibrationProbe {
 public:
  explicit CalibrationProbe(Communicator& job) : job_(job) { net_.comm = &job; }

  // The transport the links and schedules are measured on: "mpi" (the job's communicator, until this is
  // called) or "nccl" over it, whose watchdog aborts a collective stuck longer than comm_timeout_s.
  void open(Transport transport, double comm_timeout_s);
  Transport transport() const { return net_.nccl ? Transport::Nccl : Transport::Mpi; }

  // (1): ping-pong over `sizes` (ascending) for about pingpong_budget_s per size and peer, node names, and
  // the samples of `fit` ("ring": ring_iters allreduces per size; "exchange": the same budget per size).
  LinkSamples measure_links(const std::vector<std::uint64_t>& sizes, const std::string& fit, double pingpong_budget_s,
                            int ring_iters);

  // (2) on `backend`: "cpu" (OpenBLAS), else the CUDA backend (TF32 when the scenario asks for it). The MLP
  // of `scenario` (null: none) at its batch size, the median of 10 runs of each part; the codecs' work, the
  // median of 5, when codec_work.
  ComputeSamples measure_compute(Backend backend, const Scenario* scenario, bool codec_work);

  // (3): every schedule of `options` at each world size w of `worlds` (ascending): the job's first w ranks
  // reduce, over the transport (w = n) or over a split of it, while the others wait; ranks_per_node is capped
  // at w. Rank 0 stores each world's bench in `store` (null on the other ranks), with `extra` config entries.
  ScheduleBenches measure_schedules(const std::vector<int>& worlds, CollectiveBenchOptions options, Store* store,
                                    const nlohmann::json& extra, const ScheduleBenchHooks& hooks = {});

 private:
  Communicator& job_;
  double comm_timeout_s_ = 300;
  TransportComm net_;
  std::vector<std::pair<std::unique_ptr<Communicator>, TransportComm>> groups_;  // the smaller worlds', kept
};

}  // namespace ddplab
