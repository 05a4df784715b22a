#include "plan_replay_setup.hpp"

#include "calibration_install.hpp"
#include "ddplab/core/error.hpp"

namespace ddplab::sim {

ComputeGroups compute_groups(const StepPlan& plan, bool merge) {
  const auto on_comm_stream = [](OpKind k) { return !on_compute_stream(k); };
  std::vector<char> waited_on(plan.ops.size(), 0);  // by some op of the comm stream
  for (const PlanOp& op : plan.ops)
    if (on_comm_stream(op.kind))
      for (int d : op.deps) waited_on[static_cast<std::size_t>(d)] = 1;
  auto waits_for_comm = [&](const PlanOp& op) {
    for (int d : op.deps)
      if (on_comm_stream(plan.ops[static_cast<std::size_t>(d)].kind)) return true;
    return false;
  };
  ComputeGroups groups;
  bool open = false;  // may the next op join the last group?
  for (const PlanOp& op : plan.ops) {
    if (on_comm_stream(op.kind)) continue;
    const bool join =
        merge && open && !waits_for_comm(op) && !is_comm(op.kind) &&
        is_optimizer(plan.ops[static_cast<std::size_t>(groups.back().back())].kind) == is_optimizer(op.kind);
    if (!join) groups.emplace_back();
    groups.back().push_back(op.id);
    open = !waited_on[static_cast<std::size_t>(op.id)] && !is_comm(op.kind);
  }
  return groups;
}

Chains plan_chains(const PlanJob& job) {
  Chains chains;
  if (job.stages.empty()) chains.push_back(&job.steps);
  for (const auto& c : job.stages) chains.push_back(&c);
  if (!job.stages.empty() && (!job.layout || job.layout->pp() != static_cast<int>(job.stages.size())))
    throw InternalError("simulator: a chain per pipeline stage needs the layout they are the stages of");
  for (const auto* c : chains)
    if (c->empty() || c->size() != chains.front()->size())
      throw InternalError("simulator: no micro-step to simulate, or stages with chains of different lengths");
  return chains;
}

std::vector<RankPlace> rank_places(const PlanJob& job, int n) {
  std::vector<RankPlace> places(static_cast<std::size_t>(n));
  for (int r = 0; r < n; ++r) {
    RankPlace& p = places[static_cast<std::size_t>(r)];
    p.local = r;
    if (job.stages.empty()) continue;
    const RankCoord c = job.layout->coord(r);
    p.chain = static_cast<std::size_t>(c.pp);
    p.local = c.dp;
    p.group = job.layout->dp_group(r);
    p.pipeline = job.layout->pp_group(r);
    p.tp_local = c.tp;
    p.tp_group = job.layout->tp_group(r);
  }
  return places;
}

ReplayedRanks replayed_ranks(const PlanJob& job, int n, bool replica_zero) {
  ReplayedRanks out{std::vector<char>(static_cast<std::size_t>(n), 1), std::vector<int>(static_cast<std::size_t>(n))};
  for (int r = 0; r < n; ++r) {
    out.counterpart[static_cast<std::size_t>(r)] = r;
    if (!replica_zero) continue;
    if (!job.layout) {
      out.replayed[static_cast<std::size_t>(r)] = r == 0;
      out.counterpart[static_cast<std::size_t>(r)] = 0;
      continue;
    }
    RankCoord c = job.layout->coord(r);
    out.replayed[static_cast<std::size_t>(r)] = c.dp == 0;
    c.dp = 0;
    out.counterpart[static_cast<std::size_t>(r)] = job.layout->rank(c);
  }
  return out;
}

std::vector<std::vector<StepWork>> chain_work(const PlanJob& job, const Chains& chains) {
  // Merged compute groups are exact for every time but the per-op split inside a group, which is exact
  // too unless codec work on the comm actor shares the core: then a trace keeps one Exec per op.
  std::vector<std::vector<StepWork>> work(chains.size());
  for (std::size_t c = 0; c < chains.size(); ++c)
    for (const PlannedStep& ps : *chains[c]) {
      StepWork& w = work[c].emplace_back();
      w.costs = op_costs(ps.plan, job.compute_s, job.stages.empty() ? 0.0 : job.fb_flops);
      if (job.stages.empty()) apply_calibrated_compute(w.costs, ps.plan, job.options);
      w.optimizer_s = job.optimizer_s;
      if (!job.stages.empty() && job.parameters > 0)
        w.optimizer_s *=
            static_cast<double>(ps.strategy->model().parameter_count()) / static_cast<double>(job.parameters);
      w.codec = work_model(job.cluster, job.options.calibration.get(), w.costs.seconds_per_flop);
      if (job.options.calibration && native_of(job).transport == Transport::Mpi)
        w.native_serialize_from = job.options.calibration->tcp_rendezvous_bytes;
      bool codec_work = false;
      for (const PlanOp& op : ps.plan.ops)
        for (const CollectiveCall& call : op.calls)
          codec_work = codec_work || !call.before.empty() || !call.after.empty();
      w.groups = compute_groups(ps.plan, !(job.options.keep_trace && codec_work));
    }
  return work;
}

}  // namespace ddplab::sim
