#include "plan_replay.hpp"

#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <stdexcept>
#include <string>
#include <vector>

#include <fmt/format.h>
#include <simgrid/s4u.hpp>

#include "aggregate.hpp"
#include "calibration_install.hpp"
#include "collective_probe.hpp"
#include "plan_replay_setup.hpp"
#include "platform.hpp"
#include "replay.hpp"
#include "work_cost.hpp"
#include "ddplab/core/error.hpp"

namespace sg4 = simgrid::s4u;

namespace ddplab::sim {
namespace {

// Actors with stack guard pages at most (each costs two memory mappings of the 65536 Linux allows).
constexpr long kGuardedActorsMax = 16384;

std::string op_label(const PlanOp& op) {
  return op.index < 0 ? op_name(op.kind) : fmt::format("{} {}", op_name(op.kind), op.index);
}

// Work is an Exec sized to last `seconds` on an idle host. The compute and comm actors of a rank share
// their host's one core: codec work on the comm actor slows backward down and vice versa. On a CPU rank
// that contention is real (the runtime's comm thread and compute thread share the cores); keep it.
void work_for(double seconds) {
  if (seconds > 0) sg4::this_actor::execute(seconds * kHostSpeed);
}

// The Schedule of each collective call, built by the first rank that needs it and freed once every rank
// has replayed it: at 1024 ranks one ring is millions of steps, so only the calls in flight stay alive.
// Actors run one at a time, so no locks.
class ScheduleCache {
 public:
  // users: the ranks that replay the chain's plans (every rank, or a pipeline stage's).
  ScheduleCache(std::vector<int> users, NativeReplay native_as, const NcclFabric* nccl)
      : users_(std::move(users)), native_as_(std::move(native_as)), nccl_(nccl) {}
  const Schedule& acquire(const PlannedStep& step, std::size_t chain, std::size_t plan, const PlanOp& op,
                          std::size_t call) {
    Entry& e = entries_[{chain, plan, op.id, call}];
    if (!e.schedule) {
      e.schedule = std::make_unique<Schedule>(
          step.strategy->schedule_for(op.calls[call], op.schedule, native_as_, nccl_, op.group));
      e.users_left = users_.at(chain);
    }
    return *e.schedule;
  }
  void release(std::size_t chain, std::size_t plan, const PlanOp& op, std::size_t call) {
    auto it = entries_.find({chain, plan, op.id, call});
    if (--it->second.users_left == 0) it->second.schedule.reset();
  }
  // lockstep_symmetric of the call's schedule (acquired), computed once.
  bool lockstep(std::size_t chain, std::size_t plan, const PlanOp& op, std::size_t call) {
    Entry& e = entries_.at({chain, plan, op.id, call});
    if (e.lockstep < 0) e.lockstep = lockstep_symmetric(*e.schedule);
    return e.lockstep == 1;
  }

 private:
  struct Entry {
    std::unique_ptr<Schedule> schedule;
    int users_left = 0;
    int lockstep = -1;
  };
  std::vector<int> users_;  // by chain
  NativeReplay native_as_;  // what `native` replays as
  const NcclFabric* nccl_;  // the fabric NCCL's choice depends on (native_as "nccl")
  std::map<std::tuple<std::size_t, std::size_t, int, std::size_t>, Entry> entries_;
};

// One rank's state, shared by its two actors: which ops of which micro-step are done, and the times they
// took. Per-op records (SimOpRecord, with names) are kept only for traces: at 16384 ranks x ~180 ops they
// would cost gigabytes.
struct StepState {
  std::vector<char> done;        // by op id
  std::vector<char> started;     // by op id, comm stream ops (the folded replay's other replicas follow them)
  std::vector<SimOpRecord> ops;  // by op id; empty unless keep_trace
  double compute_s = 0, optimizer_s = 0, comm_s = 0;  // the runtime's StepRecord sums (plan_executor.cpp)
  double exposed_s = 0, start_s = 0, end_s = 0;
  bool comm_finished = false;
  SendTally tally;
};
struct RankState {
  sg4::MutexPtr mu = sg4::Mutex::create();
  sg4::ConditionVariablePtr cv = sg4::ConditionVariable::create();
  std::vector<StepState> steps;  // by the micro-step's index in the chain
  std::size_t compute_at = 0;    // the micro-step the compute stream is in (its comm ops are queued then)
  bool compute_finished = false;
};

bool all_done(const StepState& st, const std::vector<int>& deps) {
  for (int d : deps)
    if (!st.done[static_cast<std::size_t>(d)]) return false;
  return true;
}

// Blocks until `ready` holds; returns the simulated time spent waiting.
template <class Pred>
double wait_until(RankState& st, Pred ready) {
  if (ready()) return 0;  // nothing to wait for: no lock, no simcall
  const double before = sg4::Engine::get_clock();
  std::unique_lock<sg4::Mutex> lock(*st.mu);
  st.cv->wait(lock, ready);
  return sg4::Engine::get_clock() - before;
}

// Blocks until every op in deps of micro-step k is done; returns the simulated time spent waiting.
double wait_for(RankState& st, std::size_t k, const std::vector<int>& deps) {
  StepState& step = st.steps[k];
  return wait_until(st, [&] { return all_done(step, deps); });
}

template <class Ids>
void mark_done(RankState& st, std::size_t k, const Ids& ids) {
  std::unique_lock<sg4::Mutex> lock(*st.mu);
  for (int id : ids) st.steps[k].done[static_cast<std::size_t>(id)] = 1;
  st.cv->notify_all();
}

struct Aggregated {
  PhaseCache phases;
  Routes routes;
};
// A pipeline's point-to-point op: a send starts and is waited for at the end of the micro-step (the sender
// goes on, as with MPI_Isend), a receive waits for its data. Each direction and chunk boundary has its own
// mailbox (a tag): a stage runs a chunk's microbatches in order, forward and backward, so the k-th send
// through one meets the k-th receive, however the schedule interleaves chunks and directions.
std::uint64_t pipeline_p2p(const PlanOp& op, const RankPlace& place, SendTally& tally,
                           std::vector<sg4::CommPtr>& sends) {
  const int me = place.pipeline.at(static_cast<std::size_t>(place.chain));
  const int peer = place.pipeline.at(static_cast<std::size_t>(op.peer));
  const int at = op.chunk * static_cast<int>(place.pipeline.size()) + static_cast<int>(place.chain);  // its place
  const bool send = op.kind == OpKind::PpSend;
  const int from = send ? at : op.gradient ? at + 1 : at - 1;  // the place whose pass produced the data
  auto* box = sg4::Mailbox::by_name(
      fmt::format("pp r{}->r{} {}{}", send ? me : peer, send ? peer : me, op.gradient ? "grad" : "act", from));
  if (!send) {
    box->get<int>();
    return 0;
  }
  static int payload = 0;  // messages carry a simulated size only
  sends.push_back(box->put_async(&payload, op.p2p_bytes));
  tally.to_peer[peer] += op.p2p_bytes;
  ++tally.messages;
  tally.bytes += op.p2p_bytes;
  return op.p2p_bytes;
}

// The folded replay's view of the world: which ranks run their plans, and every rank's host.
struct Fold {
  const std::vector<sg4::Host*>* hosts = nullptr;
  const std::vector<char>* replayed = nullptr;
};

// One rank's replay of a comm op: per collective call, the codec's local work, then the call's schedule
// message by message over the op's group (or, with `agg`, as the aggregated mode's phases: aggregate.hpp);
// a pipeline's send or receive. The comm stream runs its ops with it, the compute stream its TP allreduces.
struct RankComm {
  RankComm(int rank, const RankPlace& place, ScheduleCache& cache, Aggregated* agg, Fold fold = {}, bool shadow = false,
           const CollectiveProbes* probes = nullptr)
      : rank(rank), place(place), cache(cache), agg(agg), fold(fold), shadow(shadow), probes(probes), boxes(rank) {}
  int rank;
  const RankPlace& place;
  ScheduleCache& cache;
  Aggregated* agg;
  // Folded replay: a lockstep-symmetric call of a replayed rank mirrors its peers in other replicas; a shadow
  // (a rank of another replica, following its counterpart) replays only the calls that are not.
  Fold fold;
  bool shadow;
  const CollectiveProbes* probes;  // probed replay: DP calls take their probe's time
  RankMailboxes boxes;
  std::vector<sg4::CommPtr> sends;  // pipeline sends in flight, waited for at the end of the micro-step

  // Replays op of micro-step k, records it in the step's trace; returns its seconds.
  double run(const PlannedStep& ps, const StepWork& work, std::size_t k, const PlanOp& op, StepState& step) {
    const double start = sg4::Engine::get_clock();
    std::uint64_t bytes = 0;
    if (op.kind == OpKind::PpSend || op.kind == OpKind::PpRecv) bytes = pipeline_p2p(op, place, step.tally, sends);
    const bool tensor = op.group == CommGroup::Tensor;
    boxes.use_group(tensor ? &place.tp_group : place.group.empty() ? nullptr : &place.group);
    for (std::size_t c = 0; c < op.calls.size(); ++c) {
      const CollectiveCall& call = op.calls[c];
      work_for(work.codec.seconds(call.before));
      if (probes && !tensor) {
        const ProbeOutcome p = probes->outcome(rank, *ps.strategy, op, call);
        sg4::this_actor::sleep_for(p.seconds);
        bytes += p.tally.bytes;
        step.tally.bytes += p.tally.bytes;
        step.tally.messages += p.tally.messages;
        for (const auto& [peer, b] : p.tally.to_peer) step.tally.to_peer[peer] += b;
      } else if (agg) {
        bytes +=
            replay_phases(agg->phases.acquire(k, op, c), rank, elem_bytes(call.type), boxes, step.tally, agg->routes);
        agg->phases.release(k, op, c);
      } else {
        const Schedule& sched = cache.acquire(ps, place.chain, k, op, c);
        const bool mirror = fold.hosts && !tensor && cache.lockstep(place.chain, k, op, c);
        boxes.fold(mirror ? fold.hosts : nullptr, mirror ? fold.replayed : nullptr);
        if (!(shadow && mirror))
          bytes += replay_schedule(sched, tensor ? place.tp_local : place.local, elem_bytes(call.type), boxes,
                                   step.tally, is_backend_native(op.schedule) ? work.native_serialize_from : 0);
        cache.release(place.chain, k, op, c);
      }
      work_for(work.codec.seconds(call.after));
    }
    const double end = sg4::Engine::get_clock();
    step.comm_s += end - start;
    if (!step.ops.empty()) {
      SimOpRecord& rec = step.ops[static_cast<std::size_t>(op.id)];
      rec.start_s = start - step.start_s;
      rec.end_s = end - step.start_s;
      rec.bytes = bytes;
    }
    return end - start;
  }
};

// The compute stream: per micro-step, compute ops in plan order, each after its deps (the comm ops it
// needs), then a wait for comm still in flight, as the runtime's run_step does. That waiting is the
// exposed comm. Ops run by groups (compute_groups); a group's ops get consecutive slices of its span, by cost.
// A TP allreduce runs here, blocking the pass (on_compute_stream): its time is comm, and exposed.
void compute_stream(const std::vector<PlannedStep>& chain, const std::vector<StepWork>& work, int rank, RankState& st,
                    RankComm& tp) {
  std::vector<double> seconds;
  for (std::size_t k = 0; k < chain.size(); ++k) {
    const PlannedStep& ps = chain[k];
    const StepPlan& plan = ps.plan;
    StepState& step = st.steps[k];
    {
      std::unique_lock<sg4::Mutex> lock(*st.mu);
      st.compute_at = k;
      st.cv->notify_all();
    }
    step.start_s = sg4::Engine::get_clock();
    for (const auto& group : work[k].groups) {
      // Only a group's first op may wait for a comm op; the others wait for earlier compute ops, done by now.
      step.exposed_s += wait_for(st, k, plan.ops[static_cast<std::size_t>(group.front())].deps);
      if (const PlanOp& op = plan.ops[static_cast<std::size_t>(group.front())]; is_comm(op.kind)) {
        step.exposed_s += tp.run(ps, work[k], k, op, step);
        mark_done(st, k, group);
        continue;
      }
      seconds.clear();
      double total = 0;
      for (int id : group) {
        seconds.push_back(work[k].costs.compute_seconds(plan.ops[static_cast<std::size_t>(id)], *ps.strategy, rank,
                                                        work[k].optimizer_s));
        total += seconds.back();
      }
      const double start = sg4::Engine::get_clock();
      work_for(total);
      const double end = sg4::Engine::get_clock();
      const PlanOp& first = plan.ops[static_cast<std::size_t>(group.front())];
      (is_optimizer(first.kind) ? step.optimizer_s : step.compute_s) += end - start;  // a Reshard takes no time
      if (!step.ops.empty()) {
        double done_s = 0;
        for (std::size_t i = 0; i < group.size(); ++i) {
          SimOpRecord& rec = step.ops[static_cast<std::size_t>(group[i])];
          rec.start_s = (total > 0 ? start + (end - start) * done_s / total : start) - step.start_s;
          done_s += seconds[i];
          rec.end_s = (i + 1 == group.size() ? end
                       : total > 0           ? start + (end - start) * done_s / total
                                             : start) -
                      step.start_s;
        }
      }
      mark_done(st, k, group);
    }
    // Then every comm op of the step: the comm stream finishes last among them.
    step.exposed_s += wait_until(st, [&] { return step.comm_finished; });
    step.end_s = sg4::Engine::get_clock();
  }
  st.compute_finished = true;
}

// The comm stream: per micro-step, once the compute stream has begun it (the runtime queues a step's comm
// ops when run_step starts), comm ops in plan order (the runtime's FIFO comm thread), each after its deps.
void comm_stream(const std::vector<PlannedStep>& chain, const std::vector<StepWork>& work, RankState& st,
                 RankComm& comm) {
  for (std::size_t k = 0; k < chain.size(); ++k) {
    const PlannedStep& ps = chain[k];
    StepState& step = st.steps[k];
    wait_until(st, [&] { return st.compute_at >= k; });
    for (const PlanOp& op : ps.plan.ops) {
      if (on_compute_stream(op.kind)) continue;
      wait_for(st, k, op.deps);
      if (!step.started.empty()) {
        std::unique_lock<sg4::Mutex> lock(*st.mu);
        step.started[static_cast<std::size_t>(op.id)] = 1;
        st.cv->notify_all();
      }
      comm.run(ps, work[k], k, op, step);
      mark_done(st, k, std::initializer_list<int>{op.id});
    }
    if (!comm.sends.empty()) sg4::Comm::wait_all(comm.sends);
    comm.sends.clear();
    std::unique_lock<sg4::Mutex> lock(*st.mu);
    step.comm_finished = true;
    st.cv->notify_all();
  }
}

// A rank of another replica in the folded replay: it runs no compute, no TP allreduce and no pipeline
// message, only its part of the DP collectives that cannot be mirrored (RankComm::shadow), each op when
// its replica-0 counterpart starts it (the replicas run alike, so it would start it then).
void shadow_stream(const std::vector<PlannedStep>& chain, const std::vector<StepWork>& work, RankState& counterpart,
                   RankComm& comm, std::vector<StepState>& mine) {
  for (std::size_t k = 0; k < chain.size(); ++k) {
    const PlannedStep& ps = chain[k];
    StepState& theirs = counterpart.steps[k];
    for (const PlanOp& op : ps.plan.ops) {
      if (on_compute_stream(op.kind) || op.group == CommGroup::Tensor || op.kind == OpKind::PpSend ||
          op.kind == OpKind::PpRecv)
        continue;
      wait_until(counterpart, [&] { return theirs.started[static_cast<std::size_t>(op.id)] != 0; });
      comm.run(ps, work[k], k, op, mine[k]);
    }
  }
}

// Without a layout, the probed replay stands every rank for rank 0: the plans must not tell them apart.
void check_probed(const PlanJob& job, const Chains& chains, int n) {
  if (job.layout) return;
  for (int r = 0; r < n; ++r)
    if (job.cluster.compute_factor(r) != 1)
      throw InputError(fmt::format(
          "simulator: the probed mode replays rank 0 for every rank; rank {} is a straggler (factor {}): use exact or "
          "aggregated",
          r, job.cluster.compute_factor(r)));
  if (uses_parameter_servers(chains.front()->front().strategy->config()))
    throw InputError(
        "simulator: the probed mode replays rank 0 for every rank; a parameter server's ranks differ: use exact "
        "or aggregated");
}

// Every DP collective call of the replayed ranks' chains, over their DP groups.
std::unique_ptr<CollectiveProbes> make_probes(const PlanJob& job, const Chains& chains,
                                              const std::vector<RankPlace>& places, const std::vector<char>& replayed) {
  const int n = static_cast<int>(places.size());
  std::vector<std::vector<int>> group_of(places.size());
  std::vector<std::size_t> chain_of(places.size());
  for (int r = 0; r < n; ++r) {
    const RankPlace& p = places[static_cast<std::size_t>(r)];
    chain_of[static_cast<std::size_t>(r)] = p.chain;
    if (!replayed[static_cast<std::size_t>(r)]) continue;
    auto& g = group_of[static_cast<std::size_t>(r)];
    g = p.group;  // without a layout: every rank
    if (!job.layout)
      for (int i = 0; i < n; ++i) g.push_back(i);
  }
  auto probes = std::make_unique<CollectiveProbes>(group_of, chain_of, job.cluster.devices_per_node,
                                                   probes_one_group(job.cluster));
  for (int r = 0; r < n; ++r) {
    if (!replayed[static_cast<std::size_t>(r)]) continue;
    for (const PlannedStep& ps : *chains[places[static_cast<std::size_t>(r)].chain])
      for (const PlanOp& op : ps.plan.ops)
        if (op.group != CommGroup::Tensor)
          for (const CollectiveCall& call : op.calls) probes->add(r, *ps.strategy, op, call);
  }
  return probes;
}

// The replay's actors, started at once or once the probes are done: each replayed rank's compute and comm
// streams and, folded, a shadow of every other rank. Holds what they share, for as long as the engine runs.
struct Actors {
  Actors(const PlanJob& job, const Chains& chains, const std::vector<std::vector<StepWork>>& work,
         const std::vector<RankPlace>& places, const ReplayedRanks& ranks, const std::vector<sg4::Host*>& hosts,
         ScheduleCache& cache, Aggregated* agg, const CollectiveProbes* probes, bool folded)
      : job(job),
        chains(chains),
        work(work),
        places(places),
        ranks(ranks),
        hosts(hosts),
        cache(cache),
        agg(agg),
        probes(probes),
        folded(folded),
        states(places.size()),
        shadow_steps(places.size()) {}

  const PlanJob& job;
  const Chains& chains;
  const std::vector<std::vector<StepWork>>& work;
  const std::vector<RankPlace>& places;
  const ReplayedRanks& ranks;
  const std::vector<sg4::Host*>& hosts;
  ScheduleCache& cache;
  Aggregated* agg;
  const CollectiveProbes* probes;
  bool folded;
  std::vector<RankState> states;
  std::deque<RankComm> comms;  // two per rank (the compute stream's, the comm stream's); stable addresses
  std::vector<std::vector<StepState>> shadow_steps;
  double replay_from = 0;  // probed: when the probes are done and the plans start

  void start() {
    replay_from = sg4::Engine::get_clock();
    const Fold fold = folded ? Fold{&hosts, &ranks.replayed} : Fold{};
    for (std::size_t r = 0; r < places.size(); ++r)
      if (ranks.replayed[r]) start_rank(static_cast<int>(r), fold);
    for (std::size_t r = 0; r < places.size() && folded; ++r)
      if (!ranks.replayed[r]) start_shadow(static_cast<int>(r), fold);
  }

  void start_rank(int r, Fold fold) {
    RankState& st = states[static_cast<std::size_t>(r)];
    const RankPlace& place = places[static_cast<std::size_t>(r)];
    const std::vector<PlannedStep>& chain = *chains[place.chain];
    const std::vector<StepWork>& w = work[place.chain];
    st.steps.resize(chain.size());
    for (std::size_t k = 0; k < chain.size(); ++k) {
      const StepPlan& plan = chain[k].plan;
      StepState& step = st.steps[k];
      step.done.assign(plan.ops.size(), 0);
      if (folded) step.started.assign(plan.ops.size(), 0);
      if (!job.options.keep_trace) continue;
      step.ops.resize(plan.ops.size());
      for (const PlanOp& op : plan.ops)
        step.ops[static_cast<std::size_t>(op.id)] = {on_compute_stream(op.kind) ? "compute" : "comm", op_label(op)};
    }
    auto* host = hosts[static_cast<std::size_t>(r)];
    RankComm& tp = comms.emplace_back(r, place, cache, agg);  // TP groups are inside a replica
    RankComm& comm = comms.emplace_back(r, place, cache, agg, fold, false, probes);
    sg4::Actor::create(fmt::format("compute{}", r), host,
                       [&chain, &w, &st, &place, &tp] { compute_stream(chain, w, place.local, st, tp); });
    sg4::Actor::create(fmt::format("comm{}", r), host, [&chain, &w, &st, &comm] { comm_stream(chain, w, st, comm); });
  }

  void start_shadow(int r, Fold fold) {
    const RankPlace& place = places[static_cast<std::size_t>(r)];
    shadow_steps[static_cast<std::size_t>(r)].resize(chains.front()->size());
    RankComm& comm = comms.emplace_back(r, place, cache, agg, fold, true);
    sg4::Actor::create(
        fmt::format("shadow{}", r), hosts[static_cast<std::size_t>(r)],
        [&chain = *chains[place.chain], &w = work[place.chain],
         &st = states[static_cast<std::size_t>(ranks.counterpart[static_cast<std::size_t>(r)])], &comm,
         &mine = shadow_steps[static_cast<std::size_t>(r)]] { shadow_stream(chain, w, st, comm, mine); });
  }
};

// One result per micro-step: every rank's times (a rank not replayed reports its counterpart's), the
// slowest rank's as the step's, and the replayed ranks' messages.
std::vector<SimStepResult> step_results(const PlanJob& job, const Chains& chains, Actors& actors, bool folded) {
  const std::size_t n = actors.places.size(), length = chains.front()->size();
  std::vector<SimStepResult> out(length);
  for (std::size_t k = 0; k < length; ++k) {
    SimStepResult& res = out[k];
    res.world_size = static_cast<int>(n);
    res.step = (*chains.front())[k].plan.step;
    res.bytes_sent.resize(n);
    res.ranks.resize(n);
    std::size_t slowest = 0;
    for (std::size_t r = 0; r < n; ++r) {
      RankState& st = actors.states[static_cast<std::size_t>(actors.ranks.counterpart[r])];
      StepState& step = st.steps[k];
      if (!st.compute_finished || !step.comm_finished)
        throw InternalError(fmt::format("rank {} did not finish the plan of micro-step {} (deadlock)", r, res.step));
      SimRankTimes& t = res.ranks[r];
      t.compute_s = step.compute_s;
      t.optimizer_s = step.optimizer_s;
      t.comm_s = step.comm_s;
      t.exposed_comm_s = step.exposed_s;
      t.start_s = step.start_s - actors.replay_from;
      t.step_s = step.end_s - step.start_s;
      if (job.options.keep_trace) t.trace = folded ? step.ops : std::move(step.ops);
      if (t.step_s > res.ranks[slowest].step_s) slowest = r;
      res.bytes_sent[r] = step.tally.bytes;
      if (!actors.ranks.replayed[r]) continue;  // its messages were not simulated
      res.comms += step.tally.messages;
      for (const auto& [peer, bytes] : step.tally.to_peer) res.bytes_between[{static_cast<int>(r), peer}] = bytes;
    }
    const SimRankTimes& worst = res.ranks[slowest];
    res.step_s = worst.step_s;
    res.compute_s = worst.compute_s;
    res.comm_s = worst.comm_s;
    res.exposed_comm_s = worst.exposed_comm_s;
    res.optimizer_s = worst.optimizer_s;
  }
  return out;
}

}  // namespace

std::vector<SimStepResult> run_plan_simulation(const PlanJob& job) {
  const Chains chains = plan_chains(job);
  const Strategy& first = *chains.front()->front().strategy;
  const int n = job.stages.empty() ? first.context().world_size : job.layout->world();
  const std::string mode = simulation_mode(job.options, n, !job.stages.empty());
  const bool aggregated = mode == "aggregated", probed = mode == "probed", folded = mode == "folded";
  const std::vector<RankPlace> places = rank_places(job, n);
  const ReplayedRanks ranks = replayed_ranks(job, n, folded || probed);
  if (probed) check_probed(job, chains, n);
  const std::vector<std::vector<StepWork>> work = chain_work(job, chains);
  auto* engine = make_engine(job.cluster, job.options);
  // Each actor's stack gets a guard page, which splits its mapping in two: 2 actors x 16384 ranks reach
  // Linux's default vm.max_map_count (65536) and SimGrid aborts ("Failed to protect stack"). Large worlds
  // go without guard pages; the actors walk a plan with shallow calls, far from their 256 KiB.
  if (2 * static_cast<long>(n) > kGuardedActorsMax) engine->set_config("contexts/guard-size:0");
  const auto hosts = build_platform(job.cluster, n);

  const NcclFabric fabric = nccl_fabric(job.cluster);
  std::vector<int> users(chains.size(), 0);
  for (int r = 0; r < n; ++r)  // folded: the shadows acquire every call too
    if (!probed || ranks.replayed[static_cast<std::size_t>(r)]) ++users[places[static_cast<std::size_t>(r)].chain];
  ScheduleCache cache(users, native_of(job), &fabric);
  std::unique_ptr<Aggregated> agg;
  if (aggregated) {
    const auto& ctx = first.context();
    agg.reset(new Aggregated{PhaseCache({n, 0, ctx.ranks_per_node, first.ps_layout().servers, &fabric}, native_of(job)),
                             Routes(hosts)});
  }
  std::unique_ptr<CollectiveProbes> probes;
  if (probed) probes = make_probes(job, chains, places, ranks.replayed);
  Actors actors(job, chains, work, places, ranks, hosts, cache, agg.get(), probes.get(), folded);
  if (probes) {
    const CollectiveProbes::Where where{&hosts, native_of(job), &fabric,
                                        job.options.calibration && native_of(job).transport == Transport::Mpi
                                            ? job.options.calibration->tcp_rendezvous_bytes
                                            : 0,
                                        job.options.probe_memo};
    sg4::Actor::create("probes", hosts.front(), [&, where] {  // the actor runs after this scope
      probes->run(where);
      actors.start();
    });
  } else {
    actors.start();
  }
  engine->run();
  return step_results(job, chains, actors, folded);
}

}  // namespace ddplab::sim
