// A pipeline stage's part of the plan: its model's layers cut from the whole model, and the compute pass
// of every microbatch in the pipeline schedule's order, with the point-to-point sends between stages and,
// under tensor parallelism, the TP group's allreduces.
#include <algorithm>
#include <cmath>
#include <map>
#include <string>
#include <stdexcept>
#include <utility>

#include <fmt/format.h>

#include "ddplab/core/error.hpp"
#include "ddplab/strategies/pipeline.hpp"
#include "ddplab/strategies/strategy.hpp"

namespace ddplab {

namespace {

// Where chunk j of C ends, in layers, for every j: the model's numbered blocks (runs of layers of one
// block) shared out C ways by count, as Megatron-LM shares transformer layers; layers before the first
// block go with chunk 0, those after the last with chunk C - 1, others with the block before them. A
// model without numbered blocks is cut by layer count. Throws when there are fewer blocks than chunks.
std::vector<int> chunk_ends(const ModelSpec& model, int C) {
  const int L = static_cast<int>(model.layers.size());
  std::vector<int> block_end;  // one past the last layer of each block
  std::string current;
  for (int l = 0; l < L; ++l) {
    const std::string b = layer_block(model.layers[static_cast<std::size_t>(l)].name);
    if (!b.empty() && b != current)
      block_end.push_back(l + 1);
    else if (!block_end.empty())
      block_end.back() = l + 1;
    if (!b.empty()) current = b;
  }
  if (block_end.empty())
    for (int l = 0; l < L; ++l) block_end.push_back(l + 1);
  // Layers after the last block belong to the last chunk, not to the last block's share.
  int last = L;
  for (int l = L - 1; l >= 0 && layer_block(model.layers[static_cast<std::size_t>(l)].name).empty(); --l) last = l;
  if (last > 0 && last < L && !block_end.empty()) block_end.back() = std::min(block_end.back(), last);
  const int B = static_cast<int>(block_end.size());
  if (B < C)
    throw InputError(fmt::format("pipeline: {} has {} {}, fewer than the {} pipeline chunks", model.name, B,
                                 B == L ? "layers" : "numbered blocks", C));
  std::vector<int> ends;
  for (int j = 0; j < C; ++j) ends.push_back(j + 1 == C ? L : block_end[static_cast<std::size_t>((j + 1) * B / C - 1)]);
  return ends;
}

}  // namespace

StageModel pipeline_stage(const ModelSpec& model, const PipelineInfo& schedule, const PipelineShape& shape, int stage) {
  const int P = shape.stages, v = shape.chunks, C = P * v;
  const int L = static_cast<int>(model.layers.size());
  if (P < 1 || v < 1 || stage < 0 || stage >= P)
    throw InternalError(fmt::format("pipeline: stage {} of {} stages x {} chunks", stage, P, v));
  if (!model.sync_layers().empty())
    throw InputError(
        fmt::format("pipeline: {} has SyncBatchNorm layers, whose statistics would span stages", model.name));
  const std::vector<int> ends = chunk_ends(model, C);
  StageModel out;
  out.model.name = fmt::format("{} stage {}", model.name, stage);
  out.stage.schedule = &schedule;
  out.stage.shape = shape;
  out.stage.stage = stage;
  std::vector<int> renumbered(static_cast<std::size_t>(L), -1);
  auto boundary = [&](int layer) {  // the activations leaving `layer` for the next chunk, per sample
    const double bytes = model.layers[static_cast<std::size_t>(layer)].activation_bytes;
    if (!(bytes > 0))
      throw InputError(
          fmt::format("pipeline: layer {} (\"{}\") of {} ends a pipeline chunk but has no "
                      "activation_bytes: the bytes it sends to the next stage are unknown",
                      layer, model.layers[static_cast<std::size_t>(layer)].name, model.name));
    return bytes;
  };
  for (int c = 0; c < v; ++c) {
    const int j = c * P + stage;  // the chunk's place in the whole pipeline
    const int first = j == 0 ? 0 : ends[static_cast<std::size_t>(j - 1)], end = ends[static_cast<std::size_t>(j)];
    StageChunk& ch = out.stage.chunks.emplace_back();
    ch.first = static_cast<int>(out.model.layers.size());
    ch.model_first = first;
    for (int l = first; l < end; ++l) {
      renumbered[static_cast<std::size_t>(l)] = static_cast<int>(out.model.layers.size());
      out.model.layers.push_back(model.layers[static_cast<std::size_t>(l)]);
    }
    ch.end = static_cast<int>(out.model.layers.size());
    if (j > 0) ch.input_bytes = boundary(first - 1);
    if (j + 1 < C) ch.output_bytes = boundary(end - 1);
  }
  for (const ParamSpec& p : model.params)
    if (const int l = renumbered.at(static_cast<std::size_t>(p.layer)); l >= 0) {
      out.model.params.push_back(p);
      out.model.params.back().layer = l;
    }
  return out;
}

std::vector<int> Strategy::add_pipeline_pass(StepPlan& plan) const {
  const PipelineStage& pipe = ctx_.pipeline;
  const int P = pipe.shape.stages, M = pipe.shape.microbatches, places = P * pipe.shape.chunks;
  if (M < 1 || ctx_.batch_size % M != 0)
    throw InputError(fmt::format("pipeline: {} microbatches do not divide the batch of {}", M, ctx_.batch_size));
  const int micro = ctx_.batch_size / M;  // samples per microbatch
  const int prev_stage = (pipe.stage + P - 1) % P, next_stage = (pipe.stage + 1) % P;
  // The tables' activation sizes are fp32; [train] precision may hold them in 16 bits.
  const double act_scale = static_cast<double>(elem_bytes(ctx_.activations)) / 4;
  auto p2p = [&](OpKind kind, const PipeOp& p, int peer, double bytes_per_sample, std::vector<int> deps) {
    const int id = add_op(plan, kind, p.microbatch, std::move(deps));
    PlanOp& op = plan.ops[static_cast<std::size_t>(id)];
    op.microbatch = p.microbatch, op.chunk = p.chunk, op.peer = peer, op.gradient = !p.forward;
    op.p2p_bytes = static_cast<std::uint64_t>(std::llround(bytes_per_sample * act_scale * micro));
    return id;
  };
  auto pass = [&](OpKind kind, int index, const PipeOp& p, double flops, std::vector<int> deps) {
    const int id = add_op(plan, kind, index, std::move(deps));
    PlanOp& op = plan.ops[static_cast<std::size_t>(id)];
    op.microbatch = p.microbatch, op.chunk = p.chunk, op.flops = flops * micro;
    return id;
  };
  auto tp_sync = [&](const LayerSpec& layer, TpSplit kind) {
    return ctx_.tp > 1 && layer.tp == kind && layer.tp_sync_bytes > 0;
  };
  auto tp = [&](int layer, const PipeOp& p, const LayerSpec& spec, bool gradient, int after) {
    const int id = add_op(plan, OpKind::TpSync, layer, {after});
    PlanOp& op = plan.ops[static_cast<std::size_t>(id)];
    op.microbatch = p.microbatch, op.chunk = p.chunk, op.gradient = gradient;
    op.calls = {{Collective::Allreduce, ctx_.activations,
                 static_cast<std::size_t>(std::llround(spec.tp_sync_bytes / 4 * micro)),
                 gradient ? "tp_grads" : "tp_activations"}};
    return id;
  };
  std::vector<int> backward(model_.layers.size(), -1);
  std::map<std::pair<int, int>, int> forward_of;  // (microbatch, chunk) -> what its backward and send wait for
  for (const PipeOp& p : pipe.schedule->order(pipe.shape, pipe.stage)) {
    const StageChunk& ch = pipe.chunks.at(static_cast<std::size_t>(p.chunk));
    const int place = p.chunk * P + pipe.stage;
    const bool first = place == 0, last = place + 1 == places;
    if (p.forward) {
      std::vector<int> deps;
      if (!first) deps.push_back(p2p(OpKind::PpRecv, p, prev_stage, ch.input_bytes, {}));
      // Forward runs in segments that end at each row-parallel layer's allreduce (one segment without TP),
      // each op's index its segment's last layer.
      double flops = 0;
      for (int l = ch.first; l < ch.end; ++l) {
        const LayerSpec& layer = model_.layers[static_cast<std::size_t>(l)];
        flops += layer.forward_flops;
        const bool syncs = tp_sync(layer, TpSplit::Row);
        if (!syncs && l + 1 < ch.end) continue;
        const int f = pass(OpKind::Forward, -1, p, flops, std::move(deps));
        plan.ops[static_cast<std::size_t>(f)].index = l;
        flops = 0;
        deps = {syncs ? tp(l, p, layer, false, f) : f};
      }
      forward_of[{p.microbatch, p.chunk}] = deps.front();
      if (!last) p2p(OpKind::PpSend, p, next_stage, ch.output_bytes, {deps.front()});
    } else {
      std::vector<int> deps{forward_of.at({p.microbatch, p.chunk})};
      if (!last) deps.push_back(p2p(OpKind::PpRecv, p, next_stage, ch.output_bytes, {}));
      int prev = -1;
      auto after = [&] { return prev < 0 ? std::move(deps) : std::vector<int>{prev}; };
      for (int l = ch.end - 1; l >= ch.first; --l) {
        const LayerSpec& layer = model_.layers[static_cast<std::size_t>(l)];
        // Recomputation: on reaching a block's last layer, its forward again (with its TP allreduces).
        // (Chunks are cut between blocks, so a block ends where its chunk's part of it does.)
        if (ctx_.recompute && model_.ends_block(l)) {
          double flops = 0;
          for (int m = std::max(model_.block_start(l), ch.first); m <= l; ++m) {
            const LayerSpec& fl = model_.layers[static_cast<std::size_t>(m)];
            flops += fl.forward_flops;
            const bool syncs = tp_sync(fl, TpSplit::Row);
            if (!syncs && m < l) continue;
            prev = pass(OpKind::Recompute, m, p, flops, after());
            flops = 0;
            if (syncs) prev = tp(m, p, fl, false, prev);
          }
        }
        prev = pass(OpKind::Backward, l, p, layer.backward_flops, after());
        backward[static_cast<std::size_t>(l)] = prev;  // the schedule's last microbatch of the layer wins
        // A column-parallel layer's input gradient is whole only once the TP group has summed it.
        if (tp_sync(layer, TpSplit::Column)) prev = tp(l, p, layer, true, prev);
      }
      if (!first) p2p(OpKind::PpSend, p, prev_stage, ch.input_bytes, {prev});
    }
  }
  return backward;
}

}  // namespace ddplab
