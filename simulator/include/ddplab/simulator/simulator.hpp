// Simulator: executes the same step plan (and collective Schedules) the runtime runs, as SimGrid 3.32 S4U
// activities on a modelled cluster, so that a step can be predicted for world sizes larger than the hardware at hand.
//
// Every simulation runs in a forked child process: SimGrid's engine cannot be re-created in one process
// (3.32 keeps the clock and refuses model changes on a second Engine), so this header never exposes SimGrid
// and the calling process never touches it.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "ddplab/core/join_schedule.hpp"
#include "ddplab/core/scenario.hpp"
#include "ddplab/core/step_pattern.hpp"
#include "ddplab/core/store.hpp"
#include "ddplab/core/trace.hpp"
#include "ddplab/simulator/compute_source.hpp"
#include "ddplab/strategies/layout.hpp"
#include "ddplab/strategies/memory.hpp"
#include "ddplab/strategies/schedule.hpp"

namespace ddplab {

class Store;
struct Calibration;  // calibration.hpp

struct SimOptions {
  // SimGrid network/model: "auto" (the cluster's [cluster].network_model: CM02 on the DGX presets' RDMA
  // fabrics, LV08 otherwise), "LV08" (TCP's latency and bandwidth factors) or "CM02" (pure alpha-beta).
  std::string network_model = "auto";
  // network/crosstraffic: TCP acks load the reverse path. Unset: on under LV08, off under CM02 (an RDMA
  // fabric has no TCP acks).
  std::optional<bool> crosstraffic;
  bool verbose = false;  // keep SimGrid's own log output (silenced by default)
  // SimGrid surf/precision (s): events closer than this are handled as one. 0 = automatic, 1% of the link
  // latency (at least SimGrid's 1e-9 s); see sim::time_precision_for for why.
  double time_precision_s = 0;
  // "exact": every message of every schedule (the reference); "aggregated": schedule steps merged into
  // phases of concurrent flows (simulator/src/aggregate.hpp), for large worlds; "folded" (model-parallel
  // layouts only): the ranks of one DP replica, the other replicas only in the DP collectives that
  // cannot be mirrored (plan_replay.hpp); "probed": one replica (rank 0 without a layout), each distinct DP
  // collective simulated once, alone, and its time reused (collective_probe.hpp); "auto": aggregated above
  // kExactMaxWorld ranks, for a layout probed above kExactMaxLayoutWorld, exact up to them.
  std::string mode = "auto";
  // A fitted calibration (calibration.hpp): its latency and bandwidth replace the links', its size factors
  // are installed as SimGrid network-model callbacks, its per-layer times replace the FLOP split. simulate_sweep
  // loads the one the scenario names ([cluster] calibration) when this is empty.
  std::shared_ptr<const Calibration> calibration;
  // What `native` collectives replay as (schedule_for_call's native_as): unset, the backend's own transport
  // (NCCL's algorithm and protocol by size and scale on the cluster's fabric for a scenario on backend cuda,
  // nccl_model.hpp; Open MPI 4.1's choice by size otherwise); or a transport, or a schedule.
  std::optional<NativeReplay> native;
  // simulate_schedule only: the two directions of a pairwise exchange of messages of at least this many
  // bytes take turns (Open MPI's own collectives over TCP; Calibration::tcp_rendezvous_bytes); 0 = never.
  // In a plan's replay the calibration's value applies to native calls by itself.
  std::uint64_t serialize_exchanges_from = 0;
  // Where compute time comes from in simulate_sweep (compute_source.hpp): "auto", "calibration",
  // "run:ID", "flops" or a duration ("13ms"); an oversubscribed measured run only with allow_oversubscribed.
  std::string compute = "auto";
  bool allow_oversubscribed = false;
  // Keep every rank's per-op records (SimRankTimes.trace) for traces and per-op checks. Off, a large world
  // skips serialising ranks x ops records out of the simulation's child process (at 1024 ranks of
  // ResNet-50 that was the biggest cost after the simulation itself).
  bool keep_trace = true;
  // Mode "probed": a directory where each probe's outcome is kept, for the later simulations of the same
  // cluster and options to reuse (search_layouts makes one per search); "" = none.
  std::string probe_memo;
  // data.uneven = "join": each world size's per-rank shares (join_schedule.hpp), which the caller computes
  // from the dataset (the CLI: runtime's join_schedule). simulate_pattern refuses a join scenario without them.
  std::map<int, JoinSchedule> join;
};

// The SimGrid network model a simulation of this cluster runs: options.network_model, "auto" resolved.
std::string network_model_for(const ClusterConfig& cluster, const SimOptions& options);

// Whether a simulation of this cluster loads reverse paths with TCP acks (SimOptions::crosstraffic).
bool crosstraffic_for(const ClusterConfig& cluster, const SimOptions& options);

// What `native` replays as for this scenario: options.native, or else the backend's own transport.
NativeReplay native_transport(const Scenario& scenario, const SimOptions& options);

// What NCCL would run for the `native` collectives of the strategy's steady block at this world size, on the
// scenario's cluster: "ring/Simple x4, tree/LL128 x1" (algorithm/protocol and how many calls), or "" when the
// strategy's native does not replay as NCCL.
std::string describe_nccl_choices(const Scenario& scenario, const StrategyConfig& strategy, int world_size,
                                  const SimOptions& options);

// Largest world size "auto" simulates message by message (256 ranks of a ring: about 0.4 s).
inline constexpr int kExactMaxWorld = 256;

// Largest model-parallel world "auto" replays rank by rank (GPT-2 XL at TP 2 x PP 2 x DP 16: 2.6 s); above
// it, and for every layout of a --search above it, "probed".
inline constexpr int kExactMaxLayoutWorld = 64;

// The mode a simulation of this world size runs in: "exact", "aggregated", "folded" or "probed"
// (options.mode resolved). pipeline: a layout with pp > 1 or tp > 1, which is refused aggregated; folded is for layouts
// only. Throws InputError for an unknown mode or one the world does not take.
std::string simulation_mode(const SimOptions& options, int world_size, bool pipeline = false);
// The options for one layout of a ranking (--search, published layout points): "auto" becomes "probed" above
// kExactMaxLayoutWorld for every layout, pure DP too, so that the whole ranking is replayed one way.
SimOptions ranking_options(SimOptions options, int world_size);

// One op of the plan as one rank ran it, in simulated seconds since the step began.
struct SimOpRecord {
  std::string stream;  // "compute" | "comm"
  std::string name;    // op kind and index: "forward", "backward 2", "sync_grads 0"
  double start_s = 0, end_s = 0;
  std::uint64_t bytes = 0;  // comm ops: bytes this rank sent
};

// Times of one rank in one simulated step, in simulated seconds, defined as the runtime's StepRecord:
// compute_s = forward + backward op time, comm_s = sum of comm op durations, exposed_comm_s = time the
// compute stream waited for comm ops (including at the end of the step), optimizer_s = optimizer ops,
// step_s = until both streams are done. The compute stream is always either working or waiting, so
// step_s == compute_s + optimizer_s + exposed_comm_s. (simulate_schedule: comm only, no trace.)
struct SimRankTimes {
  double compute_s = 0, comm_s = 0, exposed_comm_s = 0, optimizer_s = 0, step_s = 0;
  std::vector<SimOpRecord> trace;  // every op of the plan, in plan order (empty unless SimOptions.keep_trace)
  double start_s = 0;  // when this rank began the step (simulated seconds since the first step of its chain)
};

struct SimStepResult {
  int world_size = 0;
  std::int64_t step = 0;  // the micro-step simulated (0 for simulate_schedule)
  // The slowest rank's times (the rank whose step ended last). Without overlap (policy flat) the streams
  // take turns, so compute_s + comm_s + optimizer_s == step_s.
  double step_s = 0, compute_s = 0, comm_s = 0, exposed_comm_s = 0, optimizer_s = 0;
  std::vector<std::uint64_t> bytes_sent;                       // per rank
  std::map<std::pair<int, int>, std::uint64_t> bytes_between;  // (src, dst) -> bytes
  double wall_s = 0;                                           // simulator wall time (fork to result)
  std::uint64_t comms = 0;                                     // messages simulated
  std::vector<SimRankTimes> ranks;                             // per rank
  std::string schedule;                                        // the schedule actually replayed ("ring", ...)
};

// Elements of the flat gradient buffer are float32.
inline constexpr std::size_t kGradientElemBytes = 4;

// Which (micro-)step of the strategy to simulate, and how ranks share nodes (hierarchical schedules).
struct SimStepSpec {
  std::int64_t step = 0;
  int ranks_per_node = 1;
};

// Simulates micro-step `spec.step` of the strategy at this world size, in a child process: the same
// StepPlan the runtime executes (Strategy built from the scenario's model, batch size and seed), with a
// compute and a comm actor per rank, each walking its ops in plan order, each op waiting for its deps.
// Forward/Backward last compute_s split by their FLOPs; Optimizer/ShardOptimizer optimizer_s split by
// element counts; codec work runs at the rate compute_s implies; every collective call is replayed
// message by message on schedule_for_call (`native` as SimOptions::native says: Open MPI's choice, or
// NCCL's on the cluster's fabric). For step >= accumulate_steps the buckets are first rebuilt from the expected ready
// order, as the runtime does after its first sync step. Throws InputError for an unsupported strategy, schedule or
// topology, RunFault when the simulation fails (the message names the world size).
SimStepResult simulate_step(const Scenario&, const StrategyConfig&, int world_size, double compute_s,
                            double optimizer_s, const SimOptions& = {}, const SimStepSpec& = {});

// Micro-steps `steps` (any order the run goes through them: increasing) simulated back to back in one
// simulation, as the runtime runs them: each rank starts a step when both its streams are done with the
// one before, without waiting for the other ranks. One result per micro-step; SimRankTimes::start_s says
// when each rank began it. Steps before accumulate_steps run on the initial buckets, later ones on the
// rebuilt ones. Errors as simulate_step.
std::vector<SimStepResult> simulate_steps(const Scenario&, const StrategyConfig&, int world_size, double compute_s,
                                          double optimizer_s, const std::vector<std::int64_t>& steps,
                                          const SimOptions& = {}, int ranks_per_node = 1);

// A whole run's pattern of plans (Strategy::pattern), simulated: the first block of each segment, warm-up
// blocks then the steady block, as one chain (simulate_steps). Steady-state figures are over the steady
// block (step_totals.hpp: samples over the sum of the slowest ranks' step times); the warm-up counts each
// warm-up block as many times as its segment repeats it.
struct SimPatternResult {
  StepPattern pattern;
  std::vector<SimStepResult> steps;  // every micro-step simulated, in chain order
  PsLayout layout;                   // who trains: dedicated parameter servers take no batch
  int batch_per_rank = 0;            // samples per worker and micro-step
  // [parallel] pp > 1 or tp > 1: a replica's samples are counted once, on its last stage's first TP rank
  // (step_rows).
  std::optional<ParallelLayout> parallel;
  // Steady state, per micro-step: the mean of the slowest rank's step_s, and means over the block's steps
  // and ranks of the parts (run_windows over step_rows: the store's summary of the run gives the same).
  double step_s = 0, compute_s = 0, comm_s = 0, exposed_comm_s = 0, optimizer_s = 0;
  double samples_per_s = 0;  // samples of the steady block / its time
  std::int64_t warmup_steps = 0;
  double warmup_s = 0;      // time to go through the warm-up (every repeat counted)
  double wall_s = 0;        // simulator wall time
  std::uint64_t comms = 0;  // messages simulated, all steps
  std::string schedule;     // the schedule replayed
  // data.uneven = "join": the ranks' shares. The steady block is then repeated over a whole epoch, each rank
  // taking its share's samples at each step and none once it has run out (it still syncs, so the step
  // time does not change).
  std::optional<JoinSchedule> join;
};
SimPatternResult simulate_pattern(const Scenario&, const StrategyConfig&, int world_size, double compute_s,
                                  double optimizer_s, const SimOptions& = {}, int ranks_per_node = 1);
// The rows of a simulated pattern as the results store holds them: one per rank and simulated micro-step,
// numbered as in the run, no loss (simulate_sweep stores them; validate and simulate_pattern summarise them).
std::vector<StepMetrics> step_rows(const SimPatternResult& r);

// The simulated step's ops as trace events (one process per rank, compute and comm tracks), with times
// from the rank's start of the step (SimRankTimes::start_s) on.
std::vector<TraceEvent> trace_events(const SimStepResult&);
// Several micro-steps of one chain in one timeline.
std::vector<TraceEvent> trace_events(const std::vector<SimStepResult>&);

// Simulates just one Schedule on the cluster's platform (world size = schedule.world_size), in a child
// process. step_s = comm_s = the collective time (max over ranks of end - start); byte records as above.
SimStepResult simulate_schedule(const ClusterConfig&, const Schedule&, std::size_t elem_bytes, const SimOptions& = {});

// What simulate_sweep decides once for all its world sizes: the compute source (compute_source.hpp, by
// SimOptions::compute) and the options with the calibration the scenario names, its per-layer times kept
// only when they are the compute source.
struct SweepSetup {
  ComputeSource compute;
  SimOptions options;
};

struct SweepPoint {
  int world_size = 0;
  SimPatternResult result;  // its samples_per_s counts workers only (dedicated parameter servers take no batch)
  double efficiency = 0;    // samples_per_s / (workers * batch / (compute_s + optimizer_s / accumulate_steps)): against
                            // the same micro-steps with no communication
  std::int64_t run_id = 0;  // the simulated run written to the store
  MemoryCheck memory;       // the device that needs the most, against cluster.device_memory (memory.hpp)
  // Model FLOPs utilisation: the model's forward and backward FLOPs (its table's, per sample) x samples_per_s,
  // over world x cluster.device_flops; none without device_flops.
  std::optional<double> mfu;
};
// "MFU 41.3% (...)": how the point's MFU is counted and what bounds it; "" without one.
std::string describe_mfu(const Scenario& scenario, const SweepPoint& point, const ComputeSource& compute);

// Runs simulate_pattern for each world size and writes each as a completed run (source "simulated",
// backend "simgrid", one step row per rank and simulated micro-step, numbered as in the run; config_json
// holds the pattern, so the store's summary splits warm-up and steady state as simulate_pattern does).
// Points already written stay when a later one fails (the exception propagates). progress(done, total) is
// called after each point when given. Worlds up to kStoredTraceWorld ranks also store their simulated steps'
// timeline (Store::add_trace), which the GUI's Timeline shows under the measured one.
inline constexpr int kStoredTraceWorld = 16;
SweepSetup sweep_setup(const Scenario&, const StrategyConfig&, const Store&, const SimOptions&);
// One world size of a sweep, simulated and not stored (the GUI's What-if): simulate_sweep's figures exactly.
SweepPoint simulate_point(const Scenario&, const StrategyConfig&, int world_size, const SweepSetup&);
std::vector<SweepPoint> simulate_sweep(const Scenario&, const StrategyConfig&, const std::vector<int>& worlds, Store&,
                                       const SimOptions& = {}, std::function<void(int, int)> progress = {});

}  // namespace ddplab
