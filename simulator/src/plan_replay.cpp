#include "plan_replay.hpp"

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
#include "platform.hpp"
#include "replay.hpp"

namespace sg4 = simgrid::s4u;

namespace ddplab::sim {
namespace {

bool is_compute_work(OpKind k) { return k == OpKind::Forward || k == OpKind::Backward; }
bool is_optimizer(OpKind k) { return k == OpKind::Optimizer || k == OpKind::ShardOptimizer; }

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
  explicit ScheduleCache(const Strategy& s) : strategy_(s), world_(s.context().world_size) {}
  const Schedule& acquire(const PlanOp& op, std::size_t call) {
    Entry& e = entries_[{op.id, call}];
    if (!e.schedule) {
      e.schedule = std::make_unique<Schedule>(strategy_.schedule_for(op.calls[call], op.schedule, "ring"));
      e.users_left = world_;
    }
    return *e.schedule;
  }
  void release(const PlanOp& op, std::size_t call) {
    auto it = entries_.find({op.id, call});
    if (--it->second.users_left == 0) it->second.schedule.reset();
  }

 private:
  struct Entry {
    std::unique_ptr<Schedule> schedule;
    int users_left = 0;
  };
  const Strategy& strategy_;
  int world_;
  std::map<std::pair<int, std::size_t>, Entry> entries_;
};

// One rank's state, shared by its two actors: which ops are done, and what they recorded.
struct RankState {
  sg4::MutexPtr mu = sg4::Mutex::create();
  sg4::ConditionVariablePtr cv = sg4::ConditionVariable::create();
  std::vector<char> done;
  std::vector<SimOpRecord> ops;  // by op id
  double exposed_s = 0, end_s = 0;
  bool compute_finished = false, comm_finished = false;
  SendTally tally;
};

// Blocks until every op in deps is done; returns the simulated time spent waiting.
double wait_for(RankState& st, const std::vector<int>& deps) {
  const double before = sg4::Engine::get_clock();
  std::unique_lock<sg4::Mutex> lock(*st.mu);
  st.cv->wait(lock, [&] {
    for (int d : deps)
      if (!st.done[static_cast<std::size_t>(d)]) return false;
    return true;
  });
  return sg4::Engine::get_clock() - before;
}

void mark_done(RankState& st, int id) {
  std::unique_lock<sg4::Mutex> lock(*st.mu);
  st.done[static_cast<std::size_t>(id)] = 1;
  st.cv->notify_all();
}

// The compute stream: compute ops in plan order, each after its deps (the comm ops it needs), then a
// wait for comm still in flight, as the runtime's run_step does. That waiting is the exposed comm.
void compute_stream(const PlanJob& job, const OpCosts& costs, int rank, RankState& st) {
  const StepPlan& plan = *job.plan;
  for (const PlanOp& op : plan.ops) {
    if (is_comm(op.kind)) continue;
    st.exposed_s += wait_for(st, op.deps);
    SimOpRecord& rec = st.ops[static_cast<std::size_t>(op.id)];
    rec.start_s = sg4::Engine::get_clock();
    work_for(costs.compute_seconds(op, *job.strategy, rank, job.optimizer_s));
    rec.end_s = sg4::Engine::get_clock();
    mark_done(st, op.id);
  }
  std::vector<int> all(plan.ops.size());
  for (std::size_t i = 0; i < all.size(); ++i) all[i] = static_cast<int>(i);
  st.exposed_s += wait_for(st, all);
  st.end_s = sg4::Engine::get_clock();
  st.compute_finished = true;
}

// The comm stream: comm ops in plan order (the runtime's FIFO comm thread), each after its deps; per
// collective call, the codec's local work, then the call's schedule message by message (or, with `phases`,
// as the aggregated mode's phases: aggregate.hpp).
struct Aggregated {
  PhaseCache phases;
  RouteLatencies latency;
};
void comm_stream(const PlanJob& job, const OpCosts& costs, int rank, RankState& st, ScheduleCache& cache,
                 Aggregated* agg) {
  RankMailboxes boxes(rank);
  for (const PlanOp& op : job.plan->ops) {
    if (!is_comm(op.kind)) continue;
    wait_for(st, op.deps);
    SimOpRecord& rec = st.ops[static_cast<std::size_t>(op.id)];
    rec.start_s = sg4::Engine::get_clock();
    for (std::size_t c = 0; c < op.calls.size(); ++c) {
      work_for(op.calls[c].flops_before * costs.seconds_per_flop);
      if (agg) {
        rec.bytes += replay_phases(agg->phases.acquire(op, c), rank, elem_bytes(op.calls[c].type), boxes, st.tally,
                                   agg->latency);
        agg->phases.release(op, c);
        continue;
      }
      rec.bytes += replay_schedule(cache.acquire(op, c), rank, elem_bytes(op.calls[c].type), boxes, st.tally);
      cache.release(op, c);
    }
    rec.end_s = sg4::Engine::get_clock();
    mark_done(st, op.id);
  }
  st.comm_finished = true;
}

}  // namespace

OpCosts op_costs(const StepPlan& plan, double compute_s) {
  OpCosts c;
  for (const PlanOp& op : plan.ops)
    if (is_compute_work(op.kind)) c.fb_flops += op.flops;
  c.seconds_per_flop = c.fb_flops > 0 ? compute_s / c.fb_flops : 0.0;
  return c;
}

double OpCosts::compute_seconds(const PlanOp& op, const Strategy& s, int rank, double optimizer_s) const {
  if (is_compute_work(op.kind) && !backward_s.empty() && s.is_worker(rank))  // a calibration's per-layer times
    return op.kind == OpKind::Forward ? forward_s : backward_s.at(static_cast<std::size_t>(op.index));
  if (is_compute_work(op.kind))  // compute_s split by FLOPs; a dedicated parameter server trains nothing
    return s.is_worker(rank) ? op.flops * seconds_per_flop : 0.0;
  // optimizer_s is for the whole model: each update gets its share of the elements it touches.
  const std::size_t total = s.bucketing().total;
  if (!is_optimizer(op.kind) || total == 0) return 0.0;
  const Bucket& b = s.bucketing().buckets.at(static_cast<std::size_t>(op.index));
  const std::size_t count = op.kind == OpKind::Optimizer ? b.count : s.shard(b.id, rank).count;
  return optimizer_s * static_cast<double>(count) / static_cast<double>(total);
}

SimStepResult run_plan_simulation(const PlanJob& job) {
  const StepPlan& plan = *job.plan;
  const int n = job.strategy->context().world_size;
  OpCosts costs = op_costs(plan, job.compute_s);
  apply_calibrated_compute(costs, job);
  auto* engine = make_engine(job.cluster, job.options);
  const auto hosts = build_platform(job.cluster, n);

  ScheduleCache cache(*job.strategy);
  std::unique_ptr<Aggregated> agg;
  if (use_aggregated(job.options, n)) {
    const auto& ctx = job.strategy->context();
    agg.reset(new Aggregated{PhaseCache({n, 0, ctx.ranks_per_node, job.strategy->ps_layout().servers}),
                             RouteLatencies(hosts)});
  }
  std::vector<RankState> states(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) {
    RankState& st = states[static_cast<std::size_t>(r)];
    st.done.assign(plan.ops.size(), 0);
    st.ops.resize(plan.ops.size());
    for (const PlanOp& op : plan.ops)
      st.ops[static_cast<std::size_t>(op.id)] = {is_comm(op.kind) ? "comm" : "compute", op_label(op)};
    auto* host = hosts[static_cast<std::size_t>(r)];
    sg4::Actor::create(fmt::format("compute{}", r), host, [&job, &costs, &st, r] { compute_stream(job, costs, r, st); });
    sg4::Actor::create(fmt::format("comm{}", r), host, [&job, &costs, &st, &cache, &agg, r] { comm_stream(job, costs, r, st, cache, agg.get()); });
  }
  engine->run();

  SimStepResult res;
  res.world_size = n;
  res.step = plan.step;
  res.bytes_sent.resize(static_cast<std::size_t>(n));
  res.ranks.resize(static_cast<std::size_t>(n));
  int slowest = 0;
  for (int r = 0; r < n; ++r) {
    RankState& st = states[static_cast<std::size_t>(r)];
    if (!st.compute_finished || !st.comm_finished)
      throw std::runtime_error(fmt::format("rank {} did not finish its step plan (deadlock)", r));
    SimRankTimes& t = res.ranks[static_cast<std::size_t>(r)];
    // The runtime's StepRecord definitions (plan_executor.cpp), op by op.
    for (const PlanOp& op : plan.ops) {
      const SimOpRecord& rec = st.ops[static_cast<std::size_t>(op.id)];
      const double d = rec.end_s - rec.start_s;
      if (is_compute_work(op.kind)) t.compute_s += d;
      else if (is_optimizer(op.kind)) t.optimizer_s += d;
      else t.comm_s += d;
    }
    t.exposed_comm_s = st.exposed_s;
    t.step_s = st.end_s;
    if (job.options.keep_trace) t.trace = std::move(st.ops);
    if (t.step_s > res.ranks[static_cast<std::size_t>(slowest)].step_s) slowest = r;
    res.bytes_sent[static_cast<std::size_t>(r)] = st.tally.bytes;
    res.comms += st.tally.messages;
    for (const auto& [peer, bytes] : st.tally.to_peer) res.bytes_between[{r, peer}] = bytes;
  }
  const SimRankTimes& worst = res.ranks[static_cast<std::size_t>(slowest)];
  res.step_s = worst.step_s;
  res.compute_s = worst.compute_s;
  res.comm_s = worst.comm_s;
  res.exposed_comm_s = worst.exposed_comm_s;
  res.optimizer_s = worst.optimizer_s;
  return res;
}

}  // namespace ddplab::sim
