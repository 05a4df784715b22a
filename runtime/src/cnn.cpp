#include "ddplab/core/error.hpp"
#include "ddplab/runtime/cnn.hpp"

#include <algorithm>
#include <cmath>
#include <random>
#include <stdexcept>

#include "cnn_kernels.hpp"
#include "ddplab/strategies/codec_compute.hpp"

namespace ddplab {
namespace {
using Kind = CnnLayer::Kind;
std::size_t sz(int v) { return static_cast<std::size_t>(v); }
}  // namespace

Cnn::Cnn(Ops& ops, const ModelConfig& model, int max_batch) : Cnn(ops, cnn_layout(model), model, max_batch) {}

Cnn::Cnn(Ops& ops, std::vector<CnnLayer> layout, const ModelConfig& model, int max_batch)
    : Model(ops, cnn_model_spec(layout), model.input_features(), model.classes, max_batch), layout_(std::move(layout)) {
  const std::size_t b = sz(max_batch);
  std::size_t widest = sz(model.input_features()), col = 0, running = 0;
  norm_.resize(layout_.size());
  for (std::size_t l = 0; l < layout_.size(); ++l) {
    const CnnLayer& L = layout_[l];
    out_.emplace_back(ops_, b * L.out_elems());
    pooled_.emplace_back(L.pool ? DeviceBuffer(ops_, b * L.next_elems()) : DeviceBuffer());
    widest = std::max(widest, L.out_elems());
    if (L.kind == Kind::Conv) col = std::max(col, im2col_floats(L, max_batch));
    if (L.kind == Kind::Norm) {
      norm_[l] = {DeviceBuffer(ops_, 2 * sz(L.out) + 1), DeviceBuffer(ops_, sz(L.out)), DeviceBuffer(ops_, sz(L.out)),
                  DeviceBuffer(ops_, 2 * sz(L.out)), running};
      running += 2 * sz(L.out);
    }
  }
  col_ = DeviceBuffer(ops_, std::max<std::size_t>(col, 1));
  pre_ = DeviceBuffer(ops_, b * widest);
  running_ = DeviceBuffer(ops_, running);
  delta_a_ = DeviceBuffer(ops_, b * widest);
  delta_b_ = DeviceBuffer(ops_, b * widest);
}

std::vector<float> cnn_initial_params(const std::vector<CnnLayer>& layout, std::uint64_t seed) {
  const ModelSpec spec = cnn_model_spec(layout);
  std::mt19937_64 rng(seed);
  std::vector<float> out;
  out.reserve(spec.parameter_count());
  for (const ParamSpec& p : spec.params) {
    const CnnLayer& L = layout.at(static_cast<std::size_t>(p.layer));
    if (L.kind == Kind::Norm) {  // weight 1, bias 0
      out.insert(out.end(), p.count(), p.name.ends_with(".weight") ? 1.0f : 0.0f);
      continue;
    }
    const float fan_in = static_cast<float>(L.in * (L.kind == Kind::Conv ? L.kernel * L.kernel : 1));
    std::uniform_real_distribution<float> dist(-1.0f / std::sqrt(fan_in), 1.0f / std::sqrt(fan_in));
    for (std::size_t k = 0; k < p.count(); ++k) out.push_back(dist(rng));
  }
  return out;
}

void Cnn::init(std::uint64_t seed) {
  load_ordered_params(cnn_initial_params(layout_, seed));
  // Running statistics: mean 0, variance 1.
  std::vector<float> running(running_.size(), 0.0f);
  for (std::size_t l = 0; l < layout_.size(); ++l)
    if (layout_[l].kind == Kind::Norm)
      std::fill_n(running.begin() + static_cast<std::ptrdiff_t>(norm_[l].running + sz(layout_[l].out)),
                  sz(layout_[l].out), 1.0f);
  if (!running.empty()) ops_.to_device(running_.data(), running.data(), running.size());
}

const float* Cnn::layer_input(std::size_t l) const { return l == 0 ? input_ : layer_output(l - 1); }

const float* Cnn::layer_output(std::size_t l) const { return layout_[l].pool ? pooled_[l].data() : out_[l].data(); }

void Cnn::run_layers(int first, int end) {
  // A chunk that starts at a sync layer follows one that took its moments (ModelSpec::forward_chunks).
  const auto is_sync = [&](int l) { return spec().layers[static_cast<std::size_t>(l)].sync_channels > 0; };
  for (int l = first; l < end; ++l)
    run_layer(static_cast<std::size_t>(l), training_ && l == first && first > 0 && is_sync(l));
  // A chunk before a sync layer ends with its moments, which the plan sums over the ranks before the next.
  if (end < num_layers() && training_ && is_sync(end)) {
    const CnnLayer& L = layout_[static_cast<std::size_t>(end)];
    ops_.channel_moments(layer_input(static_cast<std::size_t>(end)), L.rows(batch_), L.out,
                         norm_[static_cast<std::size_t>(end)].moments.data());
  }
}

void Cnn::run_layer(std::size_t l, bool moments_taken) {
  const CnnLayer& L = layout_[l];
  const float* in = layer_input(l);
  const int rows = L.rows(batch_);
  switch (L.kind) {
    case Kind::Conv:
      conv_forward(l, in);
      break;
    case Kind::Norm:
      norm_forward(l, in, moments_taken);
      break;
    case Kind::Linear: {
      const int first = layer_params(static_cast<int>(l)).front();
      ops_.gemm(false, true, batch_, L.out, L.in, 1.0f, in, L.in, param(first), L.in, 0.0f, out_[l].data(), L.out);
      ops_.add_bias(out_[l].data(), param(first + 1), batch_, L.out);
      break;
    }
  }
  if (L.relu) ops_.relu(out_[l].data(), sz(rows) * sz(L.out));
  if (L.pool) ops_.max_pool(out_[l].data(), pooled_[l].data(), batch_, L.h, L.w, L.out);
}

float* Cnn::sync_stats(int layer) {
  const std::size_t l = static_cast<std::size_t>(layer);
  if (l >= layout_.size() || !layout_[l].sync) return Model::sync_stats(layer);
  return norm_[l].moments.data();
}

void Cnn::absorb_sync_stats(int layer) {
  NormState& st = norm_[static_cast<std::size_t>(layer)];
  float* running = running_.data() + st.running;
  const int c = layout_[static_cast<std::size_t>(layer)].out;
  ops_.batch_norm_statistics(sync_stats(layer), c, st.mean.data(), st.var.data(), running, running + c, kBnMomentum);
}

float* Cnn::sync_grads(int layer) {
  const std::size_t l = static_cast<std::size_t>(layer);
  if (l >= layout_.size() || !layout_[l].sync) return Model::sync_grads(layer);
  return norm_[l].sums.data();
}

void Cnn::conv_forward(std::size_t l, const float* in) {
  const CnnLayer& L = layout_[l];
  const int first = layer_params(static_cast<int>(l)).front();
  ddplab::conv_forward(ops_, L, param(first), L.bias ? param(first + 1) : nullptr, in, out_[l].data(), batch_,
                       col_.data(), im2col_block(L, max_batch()));
}

void Cnn::norm_forward(std::size_t l, const float* in, bool moments_taken) {
  const CnnLayer& L = layout_[l];
  NormState& st = norm_[l];
  const int rows = L.rows(batch_), first = layer_params(static_cast<int>(l)).front();
  const float* mean = running_.data() + st.running;
  const float* var = mean + L.out;
  if (training_) {
    if (!moments_taken) ops_.channel_moments(in, rows, L.out, st.moments.data());
    float* running = running_.data() + st.running;
    ops_.batch_norm_statistics(st.moments.data(), L.out, st.mean.data(), st.var.data(), running, running + L.out,
                               kBnMomentum);
    mean = st.mean.data(), var = st.var.data();
  }
  ops_.batch_norm(in, out_[l].data(), rows, L.out, mean, var, param(first), param(first + 1), kBnEps);
}

float* Cnn::start_backward() {
  delta_ = delta_a_.data();
  next_ = delta_b_.data();
  pending_ = -1;
  return delta_;
}

void Cnn::backward_layer(int layer, bool accumulate) {
  if (!training_) throw InternalError("Cnn::backward_layer in evaluation mode (set_training(true) first)");
  if (pending_ >= 0) {  // the sync layer above: its input gradient, now that its sums are summed
    norm_input_grad(static_cast<std::size_t>(pending_), pending_dy_);
    pending_ = -1;
    std::swap(delta_, next_);
  }
  const std::size_t l = static_cast<std::size_t>(layer);
  const CnnLayer& L = layout_.at(l);
  const int rows = L.rows(batch_);
  // d(loss)/d(the layer's output before ReLU and pool): back through the pool, then the ReLU.
  float* dy = delta_;
  if (L.pool) {
    ops_.max_pool_backward(out_[l].data(), pooled_[l].data(), delta_, pre_.data(), batch_, L.h, L.w, L.out);
    dy = pre_.data();
  }
  if (L.relu) ops_.relu_backward(dy, out_[l].data(), sz(rows) * sz(L.out));
  const float* in = layer_input(l);
  switch (L.kind) {
    case Kind::Conv:
      conv_backward(l, in, dy, accumulate);
      break;
    case Kind::Norm:
      norm_backward(l, in, dy, accumulate);
      if (L.sync) {  // the input gradient waits for the plan to sum the gradient sums over the ranks
        pending_ = layer;
        pending_dy_ = dy;
        return;
      }
      norm_input_grad(l, dy);
      break;
    case Kind::Linear: {
      const int first = layer_params(layer).front();
      ops_.gemm(true, false, L.out, L.in, batch_, 1.0f, dy, L.out, in, L.in, accumulate ? 1.0f : 0.0f, grad(first),
                L.in);
      ops_.bias_grad(dy, grad(first + 1), batch_, L.out, accumulate);
      if (l > 0) ops_.gemm(false, false, batch_, L.in, L.out, 1.0f, dy, L.out, param(first), L.in, 0.0f, next_, L.in);
      break;
    }
  }
  std::swap(delta_, next_);
}

void Cnn::conv_backward(std::size_t l, const float* in, const float* dy, bool accumulate) {
  const CnnLayer& L = layout_[l];
  const int first = layer_params(static_cast<int>(l)).front();
  // The model's input needs no gradient.
  ddplab::conv_backward(ops_, L, param(first), in, dy, grad(first), L.bias ? grad(first + 1) : nullptr,
                        l == 0 ? nullptr : next_, batch_, col_.data(), im2col_block(L, max_batch()), accumulate);
}

void Cnn::norm_backward(std::size_t l, const float* in, const float* dy, bool accumulate) {
  const CnnLayer& L = layout_[l];
  NormState& st = norm_[l];
  const int rows = L.rows(batch_), first = layer_params(static_cast<int>(l)).front();
  const std::size_t c = sz(L.out);
  ops_.batch_norm_backward_sums(dy, in, rows, L.out, st.mean.data(), st.var.data(), kBnEps, st.sums.data());
  // sums = [sum dy | sum dy xhat]: this replica's gradients of the bias (beta) and the weight (gamma).
  CodecCompute& cc = ops_.codec_compute();
  if (accumulate) {
    cc.add(grad(first), st.sums.data() + c, c);
    cc.add(grad(first + 1), st.sums.data(), c);
  } else {
    cc.copy(grad(first), st.sums.data() + c, c * sizeof(float));
    cc.copy(grad(first + 1), st.sums.data(), c * sizeof(float));
  }
}

void Cnn::norm_input_grad(std::size_t l, const float* dy) {
  const CnnLayer& L = layout_[l];
  const NormState& st = norm_[l];
  const int first = layer_params(static_cast<int>(l)).front();
  ops_.batch_norm_backward(dy, layer_input(l), L.rows(batch_), L.out, st.mean.data(), st.var.data(), param(first),
                           kBnEps, st.sums.data(), st.moments.data() + 2 * sz(L.out), next_);
}

}  // namespace ddplab
