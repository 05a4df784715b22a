// PlanExecutor (plan_executor.hpp) outside a step: what it holds between steps and how that moves. ZeRO's
// released ranges and ZeRO-3's whole model, the bucket rebuild after the first sync step, and checkpoints.
#include <algorithm>

#include "ddplab/core/error.hpp"
#include "ddplab/runtime/plan_executor.hpp"
#include "parameter_order.hpp"

namespace ddplab {

void PlanExecutor::release_outside_shard(float* base, int bucket) {
  const Bucket& b = strategy_.bucketing().buckets.at(static_cast<std::size_t>(bucket));
  const Chunk mine = strategy_.shard(b.id, comm_.rank());
  ops_.release(base + b.offset, mine.offset);
  ops_.release(base + b.offset + mine.offset + mine.count, b.count - mine.offset - mine.count);
}

void PlanExecutor::gather_parameters() {
  if (strategy_.policy().zero < 3 || comm_.size() == 1 || whole_) return;
  whole_ = true;  // until the next step gives them back
  // Each bucket's shards, as its forward's AllGather would (the backend's own all-gather: this is not a step's).
  for (const Bucket& b : strategy_.bucketing().buckets) comm_.all_gather_shards(model_.params() + b.offset, b.count);
}

void PlanExecutor::apply_layout() {
  // Move the optimizer state with the parameters: read it in the old layout, write it in the new one. A
  // sharded state is spread over the ranks, each range kept by one of them: the sum of their full-size
  // copies (zero outside what each keeps) is all of it, from which each keeps its new ranges.
  const std::vector<ParamInfo> old_info = model_.param_info();
  const auto& offsets = strategy_.bucketing().grad_offset;
  const std::size_t n = model_.num_params();
  std::vector<std::vector<float>> slots;
  for (std::size_t s = 0; s < optimizer_.slots(); ++s) {
    std::vector<float> before = optimizer_.full(s, n), after(n);
    if (strategy_.policy().shards != Shards::None) comm_.allreduce_sum(before.data(), n);
    for (std::size_t i = 0; i < old_info.size(); ++i)
      std::copy_n(before.begin() + static_cast<std::ptrdiff_t>(old_info[i].offset), old_info[i].count,
                  after.begin() + static_cast<std::ptrdiff_t>(offsets[i]));
    slots.push_back(std::move(after));
  }
  model_.set_offsets(offsets);
  optimizer_.reshard(strategy_.optimizer_ranges(comm_.rank()), slots);
}

void PlanExecutor::save(Checkpoint& c) {
  if (micro_in_window_ != 0)
    throw InternalError("PlanExecutor::save: inside an accumulation window (" + std::to_string(micro_in_window_) +
                        " micro-steps accumulated)");
  gather_parameters();
  const auto& info = model_.param_info();
  std::vector<float> flat(model_.num_params());
  ops_.to_host(flat.data(), model_.params(), flat.size());
  c.tensors["params"] = to_parameter_order(flat, info);
  for (std::size_t i = 0; i < optimizer_.slots(); ++i)  // zero outside what this rank keeps
    c.tensors["optimizer." + std::to_string(i)] = to_parameter_order(optimizer_.full(i, flat.size()), info);
  if (model_.num_buffers() > 0) {
    std::vector<float> buffers(model_.num_buffers());
    ops_.to_host(buffers.data(), model_.buffers(), buffers.size());
    c.tensors["buffers"] = std::move(buffers);
  }
  for (auto& [key, values] : strategy_.codec().state()) c.tensors["codec." + key] = std::move(values);
  c.meta["executor"] = {
      {"rebuilt_order", first_sync_done_ ? nlohmann::json(observed_order_) : nlohmann::json(nullptr)}};
}

void PlanExecutor::load(const Checkpoint& c, const std::string& what) {
  if (first_sync_done_ || micro_in_window_ != 0) throw InternalError("PlanExecutor::load: the executor has run steps");
  const nlohmann::json& ex = c.meta.value("executor", nlohmann::json::object());
  if (ex.contains("rebuilt_order") && !ex["rebuilt_order"].is_null()) {
    // The buckets as DDP rebuilt them after the first sync, from the order that step saw.
    observed_order_ = ex["rebuilt_order"].get<std::vector<int>>();
    first_sync_done_ = true;
    try {
      if (strategy_.observe_ready_order(observed_order_)) model_.set_offsets(strategy_.bucketing().grad_offset);
    } catch (const std::exception& e) {
      throw CheckpointError(what + ": its bucket rebuild does not fit this model: " + e.what());
    }
  }
  const auto& info = model_.param_info();
  const std::size_t n = model_.num_params();
  std::vector<std::vector<float>> host;  // kept until the copies are done
  host.push_back(from_parameter_order(c.tensor("params", n, what), info));
  ops_.to_device(model_.params(), host.back().data(), n);
  const std::size_t slots = optimizer_.slots();
  std::vector<std::vector<float>> state;
  for (std::size_t i = 0; i < slots; ++i)
    state.push_back(from_parameter_order(c.tensor("optimizer." + std::to_string(i), n, what), info));
  optimizer_.reshard(strategy_.optimizer_ranges(comm_.rank()), state);  // the ranges of the layout just loaded
  if (c.tensors.count("optimizer." + std::to_string(slots)))
    throw CheckpointError(what + ": holds more optimizer state than train.optimizer keeps (another optimizer?)");
  if (model_.num_buffers() > 0)
    ops_.to_device(model_.buffers(), c.tensor("buffers", model_.num_buffers(), what).data(), model_.num_buffers());
  else if (c.tensors.count("buffers"))
    throw CheckpointError(what + ": holds batch-norm buffers this model does not have");
  Codec::State codec;
  for (const auto& [key, values] : c.tensors)
    if (key.rfind("codec.", 0) == 0) codec[key.substr(6)] = values;
  try {
    strategy_.codec().restore(codec);
  } catch (const InputError& e) {
    throw CheckpointError(what + ": " + e.what());
  }
  ops_.synchronize();  // `host` is pageable and goes out of scope
}

}  // namespace ddplab
