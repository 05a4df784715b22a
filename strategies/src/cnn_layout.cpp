#include "ddplab/strategies/cnn_layout.hpp"

#include <stdexcept>

#include "ddplab/core/error.hpp"

namespace ddplab {

std::vector<CnnLayer> cnn_layout(const ModelConfig& m) {
  if (m.type != ModelType::Cnn)
    throw InternalError("cnn_layout: model type \"" + to_string(m.type) + "\" is not \"cnn\"");
  if (m.image.size() != 3) throw InputError("cnn_layout: image must be [height, width, channels]");
  std::vector<CnnLayer> layers;
  const bool norm = m.bn != "none";
  int h = m.image[0], w = m.image[1], c = m.image[2];
  for (std::size_t b = 0; b < m.conv.size(); ++b) {
    if (h % 2 || w % 2) throw InputError("cnn_layout: a conv block would max-pool an odd image");
    const std::string n = std::to_string(b + 1);
    CnnLayer conv{CnnLayer::Kind::Conv, "conv" + n, h, w, c, m.conv[b], m.kernel, !norm, !norm, !norm};
    layers.push_back(conv);
    if (norm)
      layers.push_back(
          {CnnLayer::Kind::Norm, "bn" + n, h, w, m.conv[b], m.conv[b], 1, true, true, true, m.bn == "sync"});
    c = m.conv[b], h /= 2, w /= 2;
  }
  int features = h * w * c;
  std::vector<int> widths = m.hidden;
  widths.push_back(m.classes);
  for (std::size_t i = 0; i < widths.size(); ++i) {
    const bool last = i + 1 == widths.size();
    layers.push_back(
        {CnnLayer::Kind::Linear, "fc" + std::to_string(i + 1), 1, 1, features, widths[i], 1, true, !last, false});
    features = widths[i];
  }
  return layers;
}

ModelSpec cnn_model_spec(const std::vector<CnnLayer>& layers) {
  ModelSpec m;
  m.name = "cnn";
  for (std::size_t l = 0; l < layers.size(); ++l) {
    const CnnLayer& L = layers[l];
    const int layer = static_cast<int>(l);
    const auto in = static_cast<std::size_t>(L.in), out = static_cast<std::size_t>(L.out);
    const double px = static_cast<double>(L.pixels()), outs = static_cast<double>(L.out_elems());
    double fwd = 0, bwd = 0;
    switch (L.kind) {
      case CnnLayer::Kind::Conv: {
        const auto k = static_cast<std::size_t>(L.kernel);
        m.params.push_back({L.name + ".weight", out, in * k * k, layer, {out, in, k, k}});
        if (L.bias) m.params.push_back({L.name + ".bias", out, 1, layer, {out}});
        // One multiply-add per weight and output pixel; backward computes the weight gradient and, except
        // for the first layer, the input gradient: the same GEMM work each.
        const double gemm = 2.0 * px * static_cast<double>(out * in * k * k);
        fwd = gemm + (L.bias ? outs : 0);
        bwd = (l == 0 ? 1.0 : 2.0) * gemm + (L.bias ? outs : 0);
        break;
      }
      case CnnLayer::Kind::Norm:
        m.params.push_back({L.name + ".weight", out, 1, layer, {out}});
        m.params.push_back({L.name + ".bias", out, 1, layer, {out}});
        fwd = 5.0 * outs;  // sums, squares, normalise and scale
        bwd = 8.0 * outs;
        break;
      case CnnLayer::Kind::Linear: {
        m.params.push_back({L.name + ".weight", out, in, layer, {out, in}});
        m.params.push_back({L.name + ".bias", out, 1, layer, {out}});
        const double gemm = 2.0 * static_cast<double>(in * out);
        fwd = gemm + static_cast<double>(out);
        bwd = (l == 0 ? 1.0 : 2.0) * gemm + static_cast<double>(out);
        break;
      }
    }
    if (L.relu) fwd += outs, bwd += outs;
    if (L.pool) fwd += outs, bwd += outs;
    m.layers.push_back({fwd, bwd, 4.0 * static_cast<double>(L.next_elems()), L.name, L.sync ? L.out : 0});
  }
  return m;
}

}  // namespace ddplab
