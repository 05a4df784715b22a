#include "ddplab/strategies/model_spec.hpp"

#include <algorithm>
#include <stdexcept>

#include "ddplab/core/error.hpp"

namespace ddplab {

std::size_t ModelSpec::parameter_count() const {
  std::size_t n = 0;
  for (const auto& p : params) n += p.count();
  return n;
}

double ModelSpec::forward_flops() const {
  double f = 0;
  for (const auto& l : layers) f += l.forward_flops;
  return f;
}

double ModelSpec::backward_flops() const {
  double f = 0;
  for (const auto& l : layers) f += l.backward_flops;
  return f;
}

std::vector<int> ModelSpec::expected_ready_order() const {
  std::vector<int> order;
  for (int l = static_cast<int>(layers.size()) - 1; l >= 0; --l)
    for (std::size_t i = 0; i < params.size(); ++i)
      if (params[i].layer == l) order.push_back(static_cast<int>(i));
  return order;
}

std::vector<int> ModelSpec::sync_layers() const {
  std::vector<int> out;
  for (std::size_t l = 0; l < layers.size(); ++l)
    if (layers[l].sync_channels > 0) out.push_back(static_cast<int>(l));
  return out;
}

std::string layer_block(const std::string& name) {
  std::size_t start = 0;
  while (start <= name.size()) {
    const std::size_t dot = std::min(name.find('.', start), name.size());
    const std::string part = name.substr(start, dot - start);
    if (!part.empty() && part.find_first_not_of("0123456789") == std::string::npos) return name.substr(0, dot);
    start = dot + 1;
  }
  return "";
}

int ModelSpec::block_start(int l) const {
  const std::string b = layer_block(layers.at(static_cast<std::size_t>(l)).name);
  if (b.empty()) return -1;
  while (l > 0 && layer_block(layers[static_cast<std::size_t>(l) - 1].name) == b) --l;
  return l;
}

bool ModelSpec::ends_block(int l) const {
  const int b0 = block_start(l);
  return b0 >= 0 && (l + 1 == static_cast<int>(layers.size()) || block_start(l + 1) != b0);
}

double ModelSpec::block_forward_flops() const {
  double f = 0;
  for (const LayerSpec& l : layers)
    if (!layer_block(l.name).empty()) f += l.forward_flops;
  return f;
}

std::vector<int> ModelSpec::forward_chunks(const std::vector<int>& cuts) const {
  const int n = static_cast<int>(layers.size());
  std::vector<int> ends{n - 1};
  for (int c : cuts) {
    if (c < 0 || c >= n)
      throw std::out_of_range("forward chunk through layer " + std::to_string(c) + " of " + std::to_string(n));
    ends.push_back(c);
  }
  for (int l : sync_layers()) {
    if (l == 0) throw InputError(name + ": a SyncBatchNorm layer first has no forward before it to take its moments");
    ends.push_back(l - 1);
  }
  std::sort(ends.begin(), ends.end());
  ends.erase(std::unique(ends.begin(), ends.end()), ends.end());
  return ends;
}

const char* tp_split_name(TpSplit s) {
  switch (s) {
    case TpSplit::None:
      return "";
    case TpSplit::Column:
      return "column";
    case TpSplit::Row:
      return "row";
    case TpSplit::Split:
      return "split";
  }
  return "?";
}

ModelSpec ModelSpec::mlp(const std::vector<int>& widths) {
  if (widths.size() < 2) throw InputError("an MLP needs at least an input and an output width");
  ModelSpec m;
  m.name = "mlp";
  for (std::size_t l = 0; l + 1 < widths.size(); ++l) {
    const auto in = static_cast<std::size_t>(widths[l]), out = static_cast<std::size_t>(widths[l + 1]);
    const int layer = static_cast<int>(l);
    const std::string name = "layers." + std::to_string(l);
    m.params.push_back({name + ".weight", out, in, layer, {out, in}});
    m.params.push_back({name + ".bias", out, 1, layer, {out}});
    // Forward: one multiply-add per weight (2 FLOPs) plus bias and ReLU; backward: twice the GEMM work
    // (input and weight gradients), except the first layer, which needs no input gradient.
    const double gemm = 2.0 * static_cast<double>(in * out);
    m.layers.push_back({gemm + 2.0 * static_cast<double>(out), (l == 0 ? 1.0 : 2.0) * gemm + static_cast<double>(out),
                        4.0 * static_cast<double>(out), name});  // fp32 output per sample
  }
  // Tensor parallelism as Megatron-LM's MLP: each pair of layers column- then row-parallel; an unpaired
  // last layer (the classifier of an odd count) replicated.
  for (std::size_t l = 0; l + 1 < m.layers.size(); l += 2)
    m.layers[l].tp = TpSplit::Column, m.layers[l + 1].tp = TpSplit::Row;
  return m;
}

}  // namespace ddplab
