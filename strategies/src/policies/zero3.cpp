// zero3: ZeRO stage 3 (FSDP's FULL_SHARD). A rank keeps only its shard of each bucket's parameters, as of
// its gradients and optimizer state. Each bucket is a parameter unit of whole layers (make_buckets'
// whole_layers, as FSDP wraps whole modules): all-gathered before the first forward
// chunk that needs it and given back (Reshard) after the last; all-gathered again before the backward of its
// top layer and given back after its lowest; its gradients are then reduce-scattered and its shard updated,
// with no all-gather after the update. The units the forward ends with stay whole into the backward, as
// FSDP keeps the root's. A micro-step that only accumulates gathers and gives back the same way, and keeps
// its gradients whole until the window's last micro-step reduce-scatters them.
//
// Option zero3_prefetch (default 1, FSDP's forward_prefetch / BACKWARD_PRE): the gather of the next unit runs
// while the current one computes, so at most two units are whole at once; with 0 a unit is gathered only
// once the unit before it is done, exposed, one whole at a time.
#include <algorithm>
#include <map>
#include <stdexcept>

#include "policies.hpp"
#include "ddplab/core/error.hpp"

namespace ddplab {

std::vector<OptionSpec> zero3_options() {
  return {{"zero3_prefetch", OptionKind::Integer, 0, 1, false, "1", "0",
           "1 gathers the next parameter unit while the current one computes, 0 only once it is done"}};
}

namespace {

// Which buckets each layer's parameters are in, and each bucket's first and last layer.
struct Units {
  std::vector<std::vector<int>> of_layer;
  std::vector<int> first, last;
};

Units units(const Strategy& s) {
  const ModelSpec& m = s.model();
  Units u;
  u.of_layer.resize(m.layers.size());
  const std::size_t n = s.bucketing().buckets.size();
  u.first.assign(n, static_cast<int>(m.layers.size()));
  u.last.assign(n, -1);
  for (const Bucket& b : s.bucketing().buckets)
    for (int p : b.params) {
      const int l = m.params.at(static_cast<std::size_t>(p)).layer;
      auto& v = u.of_layer.at(static_cast<std::size_t>(l));
      if (std::find(v.begin(), v.end(), b.id) == v.end()) v.push_back(b.id);
      const auto i = static_cast<std::size_t>(b.id);
      u.first[i] = std::min(u.first[i], l);
      u.last[i] = std::max(u.last[i], l);
    }
  return u;
}

void build(const Strategy& s, StepPlan& plan, bool sync) {
  if (s.context().pipeline.schedule)
    throw InputError(
        "policy \"zero3\" cannot shard a split model ([parallel] tp or pp > 1): ZeRO-3 gathers "
        "parameter units around whole-batch passes (use zero1 or zero2 with a layout)");
  const bool prefetch = policy_option(s.config(), "zero3_prefetch") != 0;
  const Units u = units(s);
  const int layers = static_cast<int>(s.model().layers.size());
  const std::size_t n = s.bucketing().buckets.size();
  const auto at = [](auto& v, int i) -> decltype(auto) { return v[static_cast<std::size_t>(i)]; };

  // Forward: a chunk ends wherever the next layer needs a unit not gathered yet; the units first needed in
  // chunk k are gathered once chunk k - 2 (prefetch) or k - 1 is done and its units given back.
  std::vector<int> cuts;
  for (int l = 0; l + 1 < layers; ++l)
    for (int b : at(u.of_layer, l + 1))
      if (at(u.first, b) == l + 1) cuts.push_back(l);
  const std::vector<int> ends = s.model().forward_chunks(cuts);
  const auto chunk_of = [&](int layer) {
    return static_cast<int>(std::lower_bound(ends.begin(), ends.end(), layer) - ends.begin());
  };
  std::map<int, std::vector<int>> starting;  // chunk -> the units first needed in it
  for (std::size_t b = 0; b < n; ++b) starting[chunk_of(u.first[b])].push_back(static_cast<int>(b));
  // The units the last chunk uses stay whole: the backward starts with them.
  std::vector<char> kept(n, 0);
  for (std::size_t b = 0; b < n; ++b) kept[b] = chunk_of(u.last[b]) + 1 == static_cast<int>(ends.size());
  std::vector<int> forward_gather(n, -1), forward_reshard(n, -1);
  const auto gather_chunk = [&](int k, const std::vector<int>& deps) {
    for (int b : starting[k]) at(forward_gather, b) = s.add_op(plan, OpKind::AllGather, b, deps);
  };
  gather_chunk(0, {});
  if (prefetch) gather_chunk(1, {});
  int chunk = 0;
  const int last_forward = s.add_forward_pass(
      plan, cuts,
      [&](int end) {
        std::vector<int> deps;
        for (int b : starting[chunk_of(end)]) deps.push_back(at(forward_gather, b));
        return deps;
      },
      [&](int, int id) {
        int done = id;
        for (std::size_t b = 0; b < n; ++b)
          if (!kept[b] && chunk_of(u.last[b]) == chunk)
            done = forward_reshard[b] = s.add_op(plan, OpKind::Reshard, static_cast<int>(b), {done});
        gather_chunk(chunk + (prefetch ? 2 : 1), {done});
        ++chunk;
      });

  // Backward: the units given back after the forward, by top layer, highest first. Unit i is gathered once
  // the backward of the layer above its top is done (no prefetch) or of the layer above unit i - 1's top
  // (`layers`: the forward), and not before its forward's reshard.
  std::vector<int> order;
  for (std::size_t b = 0; b < n; ++b)
    if (!kept[b]) order.push_back(static_cast<int>(b));
  std::stable_sort(order.begin(), order.end(), [&](int a, int b) { return at(u.last, a) > at(u.last, b); });
  std::map<int, std::vector<int>> trigger;  // layer whose backward is done (`layers`: the forward) -> units
  for (std::size_t i = 0; i < order.size(); ++i) {
    const int above = prefetch ? (i == 0 ? layers : at(u.last, order[i - 1]) + 1) : at(u.last, order[i]) + 1;
    trigger[above].push_back(order[i]);
  }
  std::vector<int> backward_gather(n, -1);
  const auto gather = [&](int layer, int after) {
    for (int b : trigger[layer]) {
      const int reshard = at(forward_reshard, b);
      at(backward_gather, b) =
          s.add_op(plan, OpKind::AllGather, b, {std::min(after, reshard), std::max(after, reshard)});
    }
  };
  gather(layers, last_forward);
  std::vector<int> scatters;
  s.add_backward_pass(
      plan, last_forward,
      [&](int l) {
        std::vector<int> deps;
        for (int b : at(u.of_layer, l))
          if (!at(kept, b)) deps.push_back(at(backward_gather, b));
        return deps;
      },
      [&](int l, int id) {
        // Given back first (in plan order, as it is in time: no wait), then the gathers go on the wire before
        // the reduce-scatters.
        std::vector<int> lowest;
        for (std::size_t b = 0; b < n; ++b)
          if (u.first[b] == l)
            lowest.push_back(static_cast<int>(b)), s.add_op(plan, OpKind::Reshard, static_cast<int>(b), {id});
        gather(l, id);
        if (sync)
          for (int b : lowest) scatters.push_back(s.add_op(plan, OpKind::ReduceScatter, b, {id}));
      });
  for (int rs : scatters) s.add_op(plan, OpKind::ShardOptimizer, at(plan.ops, rs).index, {rs});
}

}  // namespace

void build_zero3(const Strategy& s, std::int64_t, StepPlan& plan) { build(s, plan, true); }
void accumulate_zero3(const Strategy& s, std::int64_t, StepPlan& plan) { build(s, plan, false); }

}  // namespace ddplab
