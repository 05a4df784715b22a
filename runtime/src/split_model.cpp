#include "ddplab/runtime/split_model.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "cnn_kernels.hpp"
#include "ddplab/core/error.hpp"
#include "ddplab/runtime/cnn.hpp"
#include "ddplab/runtime/mlp.hpp"

namespace ddplab {

namespace {
using Kind = CnnLayer::Kind;

int largest_microbatch(int batch, int microbatches) {
  if (microbatches < 1 || batch < microbatches)
    throw InputError(fmt::format("SplitModel: a batch of {} in {} microbatches", batch, microbatches));
  return (batch + microbatches - 1) / microbatches;
}

// The whole model's layers: the MLP's as Linear layers (ReLU on the hidden ones), the CNN's as its layout.
std::vector<CnnLayer> whole_layers(const ModelConfig& model) {
  if (model.type == ModelType::Cnn) {
    std::vector<CnnLayer> layout = cnn_layout(model);
    for (const CnnLayer& L : layout)
      if (L.kind == Kind::Norm) throw InputError("SplitModel: batch norm (" + L.name + ") in a split model");
    return layout;
  }
  if (model.type != ModelType::Mlp)
    throw InputError("SplitModel: the MLP and the CNN split, not model type \"" + to_string(model.type) + "\"");
  std::vector<CnnLayer> out;
  for (std::size_t g = 0; g + 1 < model.layers.size(); ++g) {
    CnnLayer L;
    L.name = "layers." + std::to_string(g);
    L.in = model.layers[g], L.out = model.layers[g + 1];
    L.relu = g + 2 < model.layers.size();
    out.push_back(L);
  }
  return out;
}

ModelSpec whole_spec(const ModelConfig& model, const std::vector<CnnLayer>& layers) {
  return model.type == ModelType::Cnn ? cnn_model_spec(layers) : ModelSpec::mlp(model.layers);
}

std::size_t sz(int v) { return static_cast<std::size_t>(v); }
}  // namespace

SplitModel::SplitModel(Ops& ops, const ModelConfig& model, ModelSpec stage_model, PipelineStage pipeline, int tp,
                       int tp_rank, int batch)
    : Model(ops, std::move(stage_model), model.input_features(), model.output_classes(), batch),
      config_(model),
      whole_layers_(whole_layers(model)),
      pipe_(std::move(pipeline)),
      batch_cap_(batch),
      micro_(largest_microbatch(batch, pipe_.shape.microbatches)) {
  const std::string who = "SplitModel (" + spec().name + "): ";
  if (tp < 1 || tp_rank < 0 || tp_rank >= tp) throw InternalError(who + fmt::format("TP rank {} of {}", tp_rank, tp));
  place_layers(whole_spec(model, whole_layers_), tp, tp_rank, who);
  allocate_buffers();
}

void SplitModel::place_layers(const ModelSpec& whole, int tp, int tp_rank, const std::string& who) {
  const int L = static_cast<int>(whole_layers_.size());
  // Each whole layer's parameters (weight, then bias) by their offset and index in parameter order.
  std::vector<std::vector<std::pair<std::size_t, std::size_t>>> whole_params(sz(L));
  for (std::size_t i = 0, at = 0; i < whole.params.size(); at += whole.params[i].count(), ++i)
    whole_params.at(sz(whole.params[i].layer)).push_back({at, i});
  whole_count_ = whole.parameter_count();
  layers_.resize(sz(num_layers()));
  runs_.resize(param_info().size());
  for (std::size_t c = 0; c < pipe_.chunks.size(); ++c) {
    const StageChunk& ch = pipe_.chunks[c];
    for (int l = ch.first; l < ch.end; ++l) {
      const int g = ch.model_first + (l - ch.first);
      if (l < 0 || l >= num_layers() || g < 0 || g >= L)
        throw InternalError(who + fmt::format("chunk {} reaches layer {} (whole layer {})", c, l, g));
      Layer& y = layers_[sz(l)];
      y.global = g, y.chunk = static_cast<int>(c);
      shape_layer(y, whole, tp, who);
      place_share(l, y, whole, whole_params[sz(g)], tp, tp_rank, who);
    }
  }
  for (std::size_t i = 0; i < runs_.size(); ++i)
    if (runs_[i].empty()) throw InternalError(who + "parameter " + param_info()[i].name + " is in no chunk");
}

void SplitModel::shape_layer(Layer& y, const ModelSpec& whole, int tp, const std::string& who) const {
  const int g = y.global;
  const CnnLayer& W = whole_layers_[sz(g)];
  y.shape = W;
  y.split = tp > 1 ? whole.layers[sz(g)].tp : TpSplit::None;
  if (y.split != TpSplit::None && W.kind != Kind::Linear)
    throw InternalError(who + fmt::format("layer {} ({}) is marked for a TP split", g, W.name));
  if ((y.split == TpSplit::Column && W.out % tp) || (y.split == TpSplit::Row && W.in % tp))
    throw InputError(who + fmt::format("tp = {} does not divide layer {} ({} x {})", tp, g, W.out, W.in));
  if (y.split == TpSplit::Row) y.shape.in = W.in / tp;
  if (y.split == TpSplit::Column) y.shape.out = W.out / tp;
  y.sums = y.split == TpSplit::Row;
  y.input_grad = g > 0;
  y.last = g + 1 == static_cast<int>(whole_layers_.size());
  y.in = y.shape.pixels() * sz(y.shape.in), y.out = y.shape.out_elems(), y.next = y.shape.next_elems();
}

void SplitModel::place_share(int l, const Layer& y, const ModelSpec& whole,
                             const std::vector<std::pair<std::size_t, std::size_t>>& wp, int tp, int tp_rank,
                             const std::string& who) {
  const int g = y.global;
  const CnnLayer& W = whole_layers_[sz(g)];
  // The stage's spec holds this layer's weight and bias, as this rank's share.
  const std::vector<int>& ps = layer_params(l);
  const auto& info = param_info();
  const std::size_t ckk = sz(y.shape.in * y.shape.kernel * y.shape.kernel), lout = sz(y.shape.out);
  const std::size_t bias = y.split == TpSplit::Column ? lout : sz(W.out);
  if (ps.size() != 2 || wp.size() != 2 || info[sz(ps[0])].count != lout * ckk || info[sz(ps[1])].count != bias ||
      info[sz(ps[0])].name != whole.params[wp[0].second].name)
    throw InternalError(who + fmt::format("layer {} is not this model's layer {} at tp = {}", l, g, tp));
  // Where the share's elements are in the whole model.
  const std::size_t w = wp[0].first, b = wp[1].first;
  std::vector<Run>& wr = runs_[sz(ps[0])];
  std::vector<Run>& br = runs_[sz(ps[1])];
  const auto t = static_cast<std::size_t>(tp_rank);
  if (y.split == TpSplit::Column) {
    wr.push_back({w + t * lout * ckk, 0, lout * ckk});
    br.push_back({b + t * lout, 0, lout});
  } else if (y.split == TpSplit::Row) {
    for (std::size_t r = 0; r < lout; ++r) wr.push_back({w + r * sz(W.in) + t * ckk, r * ckk, ckk});
    br.push_back({b, 0, bias});
  } else {
    wr.push_back({w, 0, lout * ckk});
    br.push_back({b, 0, bias});
  }
}

void SplitModel::allocate_buffers() {
  const auto M = static_cast<std::size_t>(pipe_.shape.microbatches), mu = static_cast<std::size_t>(micro_);
  std::size_t widest_in = 1, widest_out = 1, col = 1;
  for (const Layer& y : layers_) {
    acts_.emplace_back(ops_, M * mu * y.out);
    pooled_.emplace_back(y.shape.pool ? DeviceBuffer(ops_, M * mu * y.next) : DeviceBuffer());
    widest_in = std::max(widest_in, y.in), widest_out = std::max(widest_out, y.out);
    if (y.shape.kind == Kind::Conv) col = std::max(col, im2col_floats(y.shape, micro_));
  }
  for (std::size_t c = 0; c < pipe_.chunks.size(); ++c) {
    const StageChunk& ch = pipe_.chunks[c];
    const std::size_t in = layers_[sz(ch.first)].in, out = layers_[sz(ch.end - 1)].next;
    const bool first = first_place(static_cast<int>(c)), last = last_place(static_cast<int>(c));
    in_.emplace_back(ops_, first ? 0 : M * mu * in);
    in_grad_.emplace_back(ops_, first ? 0 : M * mu * in);
    out_grad_.emplace_back(ops_, last ? 0 : M * mu * out);
    if (last) dlogits_ = DeviceBuffer(ops_, M * mu * static_cast<std::size_t>(classes()));
  }
  dx_a_ = DeviceBuffer(ops_, mu * widest_in);
  dx_b_ = DeviceBuffer(ops_, mu * widest_in);
  pre_ = DeviceBuffer(ops_, mu * widest_out);
  col_ = DeviceBuffer(ops_, col);
  next_.assign(pipe_.chunks.size(), std::vector<int>(M, 0));
}

bool SplitModel::first_place(int chunk) const { return chunk * pipe_.shape.stages + pipe_.stage == 0; }
bool SplitModel::last_place(int chunk) const {
  return chunk * pipe_.shape.stages + pipe_.stage + 1 == pipe_.shape.stages * pipe_.shape.chunks;
}

void SplitModel::init(std::uint64_t seed) {
  const std::vector<float> whole = config_.type == ModelType::Cnn ? cnn_initial_params(whole_layers_, seed)
                                                                  : mlp_initial_params(config_.layers, seed);
  std::vector<float> host(num_params());
  const auto& info = param_info();
  for (std::size_t i = 0; i < info.size(); ++i)
    for (const Run& r : runs_[i])
      std::copy_n(whole.begin() + static_cast<std::ptrdiff_t>(r.whole), r.count,
                  host.begin() + static_cast<std::ptrdiff_t>(info[i].offset + r.local));
  ops_.to_device(params(), host.data(), host.size());
  ops_.synchronize();  // host is pageable and goes out of scope
}

std::vector<float> SplitModel::whole_contribution(bool replicated, bool gradients) {
  std::vector<float> host(num_params()), whole(whole_count_, 0.0f);
  ops_.to_host(host.data(), gradients ? grads() : params(), host.size());
  const auto& info = param_info();
  for (std::size_t i = 0; i < info.size(); ++i) {
    const Layer& y = layers_[sz(info[i].layer)];
    const bool weight = static_cast<int>(i) == layer_params(info[i].layer).front();
    const bool shared = y.split == TpSplit::None || (y.split == TpSplit::Row && !weight);
    if (shared && !replicated) continue;
    for (const Run& r : runs_[i])
      std::copy_n(host.begin() + static_cast<std::ptrdiff_t>(info[i].offset + r.local), r.count,
                  whole.begin() + static_cast<std::ptrdiff_t>(r.whole));
  }
  return whole;
}

void SplitModel::begin_step(const float* x, const std::int32_t* y, int batch, int microbatches) {
  if (microbatches != pipe_.shape.microbatches || batch < microbatches || batch > batch_cap_)
    throw InternalError(fmt::format("SplitModel: a batch of {} in {} microbatches (built for {} in {})", batch,
                                    microbatches, batch_cap_, pipe_.shape.microbatches));
  x_ = x, y_ = y, step_batch_ = batch;
  rows_.assign(static_cast<std::size_t>(microbatches), batch / microbatches);
  for (int m = 0; m < batch % microbatches; ++m) ++rows_[static_cast<std::size_t>(m)];
  start_.assign(rows_.size(), 0);
  for (std::size_t m = 1; m < rows_.size(); ++m) start_[m] = start_[m - 1] + static_cast<std::size_t>(rows_[m - 1]);
  losses_.assign(static_cast<std::size_t>(microbatches), std::numeric_limits<double>::quiet_NaN());
  for (std::size_t c = 0; c < next_.size(); ++c) std::fill(next_[c].begin(), next_[c].end(), pipe_.chunks[c].first);
}

float* SplitModel::output_of(int m, int l) {
  const Layer& y = layers_[sz(l)];
  return (y.shape.pool ? pooled_[sz(l)] : acts_[sz(l)]).data() + slot(m, y.next);
}

const float* SplitModel::input_of(int m, int l) const {
  const Layer& y = layers_[sz(l)];
  if (l > pipe_.chunks[sz(y.chunk)].first) {
    const Layer& before = layers_[sz(l) - 1];
    return (before.shape.pool ? pooled_[sz(l) - 1] : acts_[sz(l) - 1]).data() + slot(m, before.next);
  }
  if (!first_place(y.chunk)) return in_[sz(y.chunk)].data() + slot(m, y.in);
  return x_ + start_[static_cast<std::size_t>(m)] * static_cast<std::size_t>(input_features());
}

void SplitModel::forward(int m, int chunk, int last) {
  int& next = next_.at(sz(chunk)).at(sz(m));
  const StageChunk& ch = pipe_.chunks[sz(chunk)];
  if (last < next || last >= ch.end)
    throw InternalError(fmt::format("SplitModel: forward of microbatch {} chunk {} through layer {} (next is {})", m,
                                    chunk, last, next));
  const int n = static_cast<int>(rows(m));
  for (int l = next; l <= last; ++l) {
    const Layer& y = layers_[sz(l)];
    const std::vector<int>& ps = layer_params(l);
    float* out = acts_[sz(l)].data() + slot(m, y.out);
    if (y.shape.kind == Kind::Conv) {
      conv_forward(ops_, y.shape, param(ps[0]), nullptr, input_of(m, l), out, n, col_.data(),
                   im2col_block(y.shape, micro_));
    } else {  // Y = X W^T (+ b once whole), W stored out x in as in PyTorch.
      ops_.gemm(false, true, n, y.shape.out, y.shape.in, 1.0f, input_of(m, l), y.shape.in, param(ps[0]), y.shape.in,
                0.0f, out, y.shape.out);
    }
    if (!y.sums) finish(m, l);
  }
  next = last + 1;
}

void SplitModel::finish(int m, int l) {
  const Layer& y = layers_[sz(l)];
  const auto n = rows(m);
  float* out = acts_[sz(l)].data() + slot(m, y.out);
  ops_.add_bias(out, param(layer_params(l)[1]), y.shape.rows(static_cast<int>(n)), y.shape.out);
  if (y.shape.relu) ops_.relu(out, n * y.out);
  if (y.shape.pool) ops_.max_pool(out, output_of(m, l), static_cast<int>(n), y.shape.h, y.shape.w, y.shape.out);
  if (!y.last) return;
  // The model's last layer: the loss of the microbatch, its gradient weighted by the microbatch's share of the
  // batch so that the microbatches' gradients add up to the batch mean's.
  const auto cls = static_cast<std::size_t>(classes());
  float* d = dlogits_.data() + slot(m, cls);
  losses_[sz(m)] = ops_.softmax_xent(output_of(m, l), y_ + start_[sz(m)], static_cast<int>(n), classes(), d);
  if (pipe_.shape.microbatches > 1)
    ops_.scale(d, n * cls, static_cast<float>(static_cast<double>(n) / static_cast<double>(step_batch_)));
}

void SplitModel::backward(int m, int l, bool accumulate) {
  const Layer& y = layers_[sz(l)];
  const StageChunk& ch = pipe_.chunks[sz(y.chunk)];
  const std::vector<int>& ps = layer_params(l);
  const auto n = rows(m);
  // d(loss)/d(the layer's output after the pool).
  float* delta = l + 1 < ch.end        ? pending_dx_
                 : last_place(y.chunk) ? dlogits_.data() + slot(m, static_cast<std::size_t>(classes()))
                                       : out_grad_[sz(y.chunk)].data() + slot(m, y.next);
  float* dx = l == ch.first ? (y.input_grad ? in_grad_[sz(y.chunk)].data() + slot(m, y.in) : nullptr)
                            : (delta == dx_a_.data() ? dx_b_.data() : dx_a_.data());
  pending_dx_ = dx;
  if (!delta) throw InternalError(fmt::format("SplitModel: backward of layer {} before the layer after it", l));
  const int rn = static_cast<int>(n);
  float* act = acts_[sz(l)].data() + slot(m, y.out);
  // Back through the pool and the ReLU to d(loss)/d(output) of the layer's own operation.
  float* dy = delta;
  if (y.shape.pool) {
    ops_.max_pool_backward(act, output_of(m, l), delta, pre_.data(), rn, y.shape.h, y.shape.w, y.shape.out);
    dy = pre_.data();
  }
  if (y.shape.relu) ops_.relu_backward(dy, act, n * y.out);
  if (y.shape.kind == Kind::Conv) {
    conv_backward(ops_, y.shape, param(ps[0]), input_of(m, l), dy, grad(ps[0]), grad(ps[1]),
                  y.input_grad ? dx : nullptr, rn, col_.data(), im2col_block(y.shape, micro_), accumulate);
    return;
  }
  // dW = dY^T X, db = column sums of dY, dX = dY W.
  const int in = y.shape.in, out = y.shape.out;
  ops_.gemm(true, false, out, in, rn, 1.0f, dy, out, input_of(m, l), in, accumulate ? 1.0f : 0.0f, grad(ps[0]), in);
  ops_.bias_grad(dy, grad(ps[1]), rn, out, accumulate);
  if (y.input_grad) ops_.gemm(false, false, rn, in, out, 1.0f, dy, out, param(ps[0]), in, 0.0f, dx, in);
}

StagePasses::Span SplitModel::tp_sum(int m, int l, bool gradient) {
  const Layer& y = layers_.at(sz(l));
  if (!gradient) {
    if (!y.sums) throw InternalError(fmt::format("SplitModel: layer {} has no partial output to sum", l));
    return {acts_[sz(l)].data() + slot(m, y.out), rows(m) * y.out};
  }
  if (y.split != TpSplit::Column || !y.input_grad)
    throw InternalError(fmt::format("SplitModel: layer {} has no partial input gradient to sum", l));
  const bool first = l == pipe_.chunks[sz(y.chunk)].first;
  float* dx = first ? in_grad_[sz(y.chunk)].data() + slot(m, y.in) : pending_dx_;
  return {dx, rows(m) * y.in};
}

void SplitModel::tp_summed(int m, int l, bool gradient) {
  if (!gradient) finish(m, l);  // the summed input gradient needs nothing more
}

StagePasses::Span SplitModel::boundary(int m, int chunk, bool gradient, bool send) {
  const auto c = sz(chunk);
  const StageChunk& ch = pipe_.chunks.at(c);
  const std::size_t in = layers_[sz(ch.first)].in, out = layers_[sz(ch.end - 1)].next;
  const bool input_side = gradient == send;  // a forward receive or a backward send: the chunk's input
  if (input_side ? first_place(chunk) : last_place(chunk))
    throw InternalError(
        fmt::format("SplitModel: chunk {} has no {} from another stage", chunk, input_side ? "input" : "output"));
  if (input_side) return {(send ? in_grad_[c] : in_[c]).data() + slot(m, in), rows(m) * in};
  return {send ? output_of(m, ch.end - 1) : out_grad_[c].data() + slot(m, out), rows(m) * out};
}

double SplitModel::step_loss() const {
  if (dlogits_.size() == 0) return std::numeric_limits<double>::quiet_NaN();
  if (losses_.size() == 1) return losses_.front();
  double sum = 0;
  for (std::size_t m = 0; m < losses_.size(); ++m) sum += losses_[m] * static_cast<double>(rows_[m]);
  return sum / static_cast<double>(step_batch_);
}

void SplitModel::run_layers(int, int) {
  throw InternalError("SplitModel runs microbatch by microbatch (StagePasses::forward)");
}
const float* SplitModel::logits() const { throw InternalError("SplitModel: logits are per microbatch"); }
float* SplitModel::start_backward() {
  throw InternalError("SplitModel runs microbatch by microbatch (StagePasses::backward)");
}
void SplitModel::backward_layer(int, bool) {
  throw InternalError("SplitModel runs microbatch by microbatch (StagePasses::backward)");
}

}  // namespace ddplab
