// See tensor_parallel.hpp.
#include "ddplab/strategies/tensor_parallel.hpp"

#include <cmath>
#include <stdexcept>

#include <fmt/format.h>

#include "ddplab/core/error.hpp"

namespace ddplab {
namespace {

// The tensor's 1/T along `dim` (a Column layer's outputs: 0; a Row layer's inputs: 1, as PyTorch's out x in
// weights), or along the first dimension T divides when that one does not split.
void split_tensor(ParamSpec& p, std::size_t dim, int T, const std::string& model) {
  const auto t = static_cast<std::size_t>(T);
  if (p.shape.empty())
    p.shape = p.cols > 1 ? std::vector<std::size_t>{p.rows, p.cols} : std::vector<std::size_t>{p.rows};
  auto cut = [&](std::size_t& d) {
    d /= t;
    p.rows = p.shape[0];
    p.cols = 1;
    for (std::size_t i = 1; i < p.shape.size(); ++i) p.cols *= p.shape[i];
  };
  if (dim < p.shape.size() && p.shape[dim] % t == 0) return cut(p.shape[dim]);
  for (std::size_t& d : p.shape)
    if (d % t == 0) return cut(d);
  throw InputError(fmt::format("tensor parallelism: {} of {} has no dimension that tp = {} divides", p.name, model, T));
}

}  // namespace

ModelSpec tensor_parallel_shard(const ModelSpec& model, int T) {
  if (T < 1) throw InputError(fmt::format("tensor parallelism: tp = {}", T));
  if (T == 1) return model;
  ModelSpec out = model;
  for (std::size_t l = 0; l < out.layers.size(); ++l) {
    LayerSpec& layer = out.layers[l];
    if (layer.tp == TpSplit::None) continue;
    layer.forward_flops /= T;
    layer.backward_flops /= T;
    if (layer.tp == TpSplit::Row) layer.tp_sync_bytes = layer.activation_bytes;
    // The first layer's input is the data: no gradient to sum.
    if (layer.tp == TpSplit::Column && l > 0) layer.tp_sync_bytes = model.layers[l - 1].activation_bytes;
    if (layer.tp != TpSplit::Row) {
      if (std::fmod(layer.activation_bytes, 4.0 * T) != 0)
        throw InputError(
            fmt::format("tensor parallelism: tp = {} does not divide the output of {} ({} bytes "
                        "per sample)",
                        T, layer.name, layer.activation_bytes));
      layer.activation_bytes /= T;
    }
  }
  for (ParamSpec& p : out.params) {
    const TpSplit split = out.layers.at(static_cast<std::size_t>(p.layer)).tp;
    const bool vector = p.shape.size() <= 1 && p.cols == 1;
    if (split == TpSplit::Column || (split == TpSplit::Row && !vector))
      split_tensor(p, split == TpSplit::Column ? 0 : 1, T, model.name);
  }
  return out;
}

}  // namespace ddplab
