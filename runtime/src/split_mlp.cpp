#include "ddplab/runtime/split_mlp.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <stdexcept>
#include <string>

#include <fmt/format.h>

#include "ddplab/runtime/mlp.hpp"

namespace ddplab {

namespace {
int largest_microbatch(int batch, int microbatches) {
  if (microbatches < 1 || batch < microbatches)
    throw std::invalid_argument(fmt::format("SplitMlp: a batch of {} in {} microbatches", batch, microbatches));
  return (batch + microbatches - 1) / microbatches;
}
}  // namespace

SplitMlp::SplitMlp(Ops& ops, std::vector<int> widths, ModelSpec stage_model, PipelineStage pipeline, int tp, int tp_rank,
                   int batch)
    : Model(ops, std::move(stage_model), widths.empty() ? 0 : widths.front(), widths.empty() ? 0 : widths.back(), batch),
      widths_(std::move(widths)), pipe_(std::move(pipeline)), batch_cap_(batch),
      micro_(largest_microbatch(batch, pipe_.shape.microbatches)) {
  const ModelSpec whole = ModelSpec::mlp(widths_);
  const int L = static_cast<int>(whole.layers.size());
  const std::string who = "SplitMlp (" + spec().name + "): ";
  if (tp < 1 || tp_rank < 0 || tp_rank >= tp) throw std::invalid_argument(who + fmt::format("TP rank {} of {}", tp_rank, tp));
  std::vector<std::size_t> weight_at;  // each whole layer's weight offset in parameter order
  for (std::size_t i = 0, at = 0; i < whole.params.size(); at += whole.params[i].count(), ++i)
    if (i % 2 == 0) weight_at.push_back(at);
  whole_count_ = whole.parameter_count();
  layers_.resize(static_cast<std::size_t>(num_layers()));
  for (std::size_t c = 0; c < pipe_.chunks.size(); ++c) {
    const StageChunk& ch = pipe_.chunks[c];
    for (int l = ch.first; l < ch.end; ++l) {
      const int g = ch.model_first + (l - ch.first);
      if (l < 0 || l >= num_layers() || g < 0 || g >= L)
        throw std::invalid_argument(who + fmt::format("chunk {} reaches layer {} (whole layer {})", c, l, g));
      Layer& y = layers_[static_cast<std::size_t>(l)];
      y.global = g, y.chunk = static_cast<int>(c);
      y.split = tp > 1 ? whole.layers[static_cast<std::size_t>(g)].tp : TpSplit::None;
      const int in = widths_[static_cast<std::size_t>(g)], out = widths_[static_cast<std::size_t>(g) + 1];
      if ((y.split == TpSplit::Column && out % tp) || (y.split == TpSplit::Row && in % tp))
        throw std::invalid_argument(who + fmt::format("tp = {} does not divide layer {} ({} x {})", tp, g, out, in));
      y.in = y.split == TpSplit::Row ? in / tp : in;
      y.out = y.split == TpSplit::Column ? out / tp : out;
      y.relu = g + 1 < L;
      y.sums = y.split == TpSplit::Row;
      y.input_grad = g > 0;
      // The stage's spec holds this layer's weight and bias, as this rank's share.
      const std::vector<int>& ps = layer_params(l);
      const auto& info = param_info();
      const auto lin = static_cast<std::size_t>(y.in), lout = static_cast<std::size_t>(y.out);
      const std::size_t bias = y.split == TpSplit::Column ? lout : static_cast<std::size_t>(out);
      if (ps.size() != 2 || info[static_cast<std::size_t>(ps[0])].count != lout * lin ||
          info[static_cast<std::size_t>(ps[1])].count != bias ||
          info[static_cast<std::size_t>(ps[0])].name != whole.params[2 * static_cast<std::size_t>(g)].name)
        throw std::invalid_argument(who + fmt::format("layer {} is not this MLP's layer {} at tp = {}", l, g, tp));
      // Where the share's elements are in the whole model.
      const std::size_t w = weight_at[static_cast<std::size_t>(g)], b = w + static_cast<std::size_t>(out) * in;
      runs_.resize(info.size());
      std::vector<Run>& wr = runs_[static_cast<std::size_t>(ps[0])];
      std::vector<Run>& br = runs_[static_cast<std::size_t>(ps[1])];
      const auto t = static_cast<std::size_t>(tp_rank);
      if (y.split == TpSplit::Column) {
        wr.push_back({w + t * lout * lin, 0, lout * lin});
        br.push_back({b + t * lout, 0, lout});
      } else if (y.split == TpSplit::Row) {
        for (std::size_t r = 0; r < lout; ++r) wr.push_back({w + r * static_cast<std::size_t>(in) + t * lin, r * lin, lin});
        br.push_back({b, 0, bias});
      } else {
        wr.push_back({w, 0, lout * lin});
        br.push_back({b, 0, bias});
      }
    }
  }
  for (std::size_t i = 0; i < runs_.size(); ++i)
    if (runs_[i].empty()) throw std::invalid_argument(who + "parameter " + param_info()[i].name + " is in no chunk");
  const auto M = static_cast<std::size_t>(pipe_.shape.microbatches), mu = static_cast<std::size_t>(micro_);
  int widest = 1;
  for (const Layer& y : layers_) {
    acts_.emplace_back(ops_, M * mu * static_cast<std::size_t>(y.out));
    widest = std::max(widest, y.in);
  }
  for (std::size_t c = 0; c < pipe_.chunks.size(); ++c) {
    const StageChunk& ch = pipe_.chunks[c];
    const auto in = static_cast<std::size_t>(layers_[static_cast<std::size_t>(ch.first)].in);
    const auto out = static_cast<std::size_t>(layers_[static_cast<std::size_t>(ch.end - 1)].out);
    const bool first = first_place(static_cast<int>(c)), last = last_place(static_cast<int>(c));
    in_.emplace_back(ops_, first ? 0 : M * mu * in);
    in_grad_.emplace_back(ops_, first ? 0 : M * mu * in);
    out_grad_.emplace_back(ops_, last ? 0 : M * mu * out);
    if (last) dlogits_ = DeviceBuffer(ops_, M * mu * static_cast<std::size_t>(classes()));
  }
  dx_a_ = DeviceBuffer(ops_, mu * static_cast<std::size_t>(widest));
  dx_b_ = DeviceBuffer(ops_, mu * static_cast<std::size_t>(widest));
  next_.assign(pipe_.chunks.size(), std::vector<int>(M, 0));
}

bool SplitMlp::first_place(int chunk) const { return chunk * pipe_.shape.stages + pipe_.stage == 0; }
bool SplitMlp::last_place(int chunk) const {
  return chunk * pipe_.shape.stages + pipe_.stage + 1 == pipe_.shape.stages * pipe_.shape.chunks;
}

void SplitMlp::init(std::uint64_t seed) {
  const std::vector<float> whole = mlp_initial_params(widths_, seed);
  std::vector<float> host(num_params());
  const auto& info = param_info();
  for (std::size_t i = 0; i < info.size(); ++i)
    for (const Run& r : runs_[i])
      std::copy_n(whole.begin() + static_cast<std::ptrdiff_t>(r.whole), r.count,
                  host.begin() + static_cast<std::ptrdiff_t>(info[i].offset + r.local));
  ops_.to_device(params(), host.data(), host.size());
  ops_.synchronize();  // host is pageable and goes out of scope
}

std::vector<float> SplitMlp::whole_contribution(bool replicated, bool gradients) {
  std::vector<float> host(num_params()), whole(whole_count_, 0.0f);
  ops_.to_host(host.data(), gradients ? grads() : params(), host.size());
  const auto& info = param_info();
  for (std::size_t i = 0; i < info.size(); ++i) {
    const Layer& y = layers_[static_cast<std::size_t>(info[i].layer)];
    const bool weight = static_cast<int>(i) == layer_params(info[i].layer).front();
    const bool shared = y.split == TpSplit::None || (y.split == TpSplit::Row && !weight);
    if (shared && !replicated) continue;
    for (const Run& r : runs_[i])
      std::copy_n(host.begin() + static_cast<std::ptrdiff_t>(info[i].offset + r.local), r.count,
                  whole.begin() + static_cast<std::ptrdiff_t>(r.whole));
  }
  return whole;
}

void SplitMlp::begin_step(const float* x, const std::int32_t* y, int batch, int microbatches) {
  if (microbatches != pipe_.shape.microbatches || batch < microbatches || batch > batch_cap_)
    throw std::invalid_argument(fmt::format("SplitMlp: a batch of {} in {} microbatches (built for {} in {})", batch,
                                            microbatches, batch_cap_, pipe_.shape.microbatches));
  x_ = x, y_ = y, step_batch_ = batch;
  rows_.assign(static_cast<std::size_t>(microbatches), batch / microbatches);
  for (int m = 0; m < batch % microbatches; ++m) ++rows_[static_cast<std::size_t>(m)];
  start_.assign(rows_.size(), 0);
  for (std::size_t m = 1; m < rows_.size(); ++m) start_[m] = start_[m - 1] + static_cast<std::size_t>(rows_[m - 1]);
  losses_.assign(static_cast<std::size_t>(microbatches), std::numeric_limits<double>::quiet_NaN());
  for (std::size_t c = 0; c < next_.size(); ++c) std::fill(next_[c].begin(), next_[c].end(), pipe_.chunks[c].first);
}

const float* SplitMlp::input_of(int m, int l) const {
  const Layer& y = layers_[static_cast<std::size_t>(l)];
  if (l > pipe_.chunks[static_cast<std::size_t>(y.chunk)].first)
    return acts_[static_cast<std::size_t>(l) - 1].data() + slot(m, static_cast<std::size_t>(layers_[static_cast<std::size_t>(l) - 1].out));
  if (!first_place(y.chunk)) return in_[static_cast<std::size_t>(y.chunk)].data() + slot(m, static_cast<std::size_t>(y.in));
  return x_ + start_[static_cast<std::size_t>(m)] * static_cast<std::size_t>(input_features());
}

void SplitMlp::forward(int m, int chunk, int last) {
  int& next = next_.at(static_cast<std::size_t>(chunk)).at(static_cast<std::size_t>(m));
  const StageChunk& ch = pipe_.chunks[static_cast<std::size_t>(chunk)];
  if (last < next || last >= ch.end)
    throw std::logic_error(fmt::format("SplitMlp: forward of microbatch {} chunk {} through layer {} (next is {})", m,
                                       chunk, last, next));
  const int n = static_cast<int>(rows(m));
  for (int l = next; l <= last; ++l) {
    const Layer& y = layers_[static_cast<std::size_t>(l)];
    const std::vector<int>& ps = layer_params(l);
    float* out = acts_[static_cast<std::size_t>(l)].data() + slot(m, static_cast<std::size_t>(y.out));
    // Y = X W^T (+ b once whole), W stored out x in as in PyTorch.
    ops_.gemm(false, true, n, y.out, y.in, 1.0f, input_of(m, l), y.in, param(ps[0]), y.in, 0.0f, out, y.out);
    if (!y.sums) finish(m, l);
  }
  next = last + 1;
}

void SplitMlp::finish(int m, int l) {
  const Layer& y = layers_[static_cast<std::size_t>(l)];
  const auto n = rows(m);
  float* out = acts_[static_cast<std::size_t>(l)].data() + slot(m, static_cast<std::size_t>(y.out));
  ops_.add_bias(out, param(layer_params(l)[1]), static_cast<int>(n), y.out);
  if (y.relu) ops_.relu(out, n * static_cast<std::size_t>(y.out));
  if (y.relu) return;
  // The model's last layer: the loss of the microbatch, its gradient weighted by the microbatch's share of the
  // batch so that the microbatches' gradients add up to the batch mean's.
  const auto cls = static_cast<std::size_t>(classes());
  float* d = dlogits_.data() + slot(m, cls);
  losses_[static_cast<std::size_t>(m)] = ops_.softmax_xent(out, y_ + start_[static_cast<std::size_t>(m)], static_cast<int>(n), classes(), d);
  if (pipe_.shape.microbatches > 1)
    ops_.scale(d, n * cls, static_cast<float>(static_cast<double>(n) / static_cast<double>(step_batch_)));
}

void SplitMlp::backward(int m, int l, bool accumulate) {
  const Layer& y = layers_[static_cast<std::size_t>(l)];
  const StageChunk& ch = pipe_.chunks[static_cast<std::size_t>(y.chunk)];
  const std::vector<int>& ps = layer_params(l);
  const auto n = rows(m);
  const auto out_w = static_cast<std::size_t>(y.out), in_w = static_cast<std::size_t>(y.in);
  float* delta = l + 1 < ch.end             ? pending_dx_
                 : last_place(y.chunk)      ? dlogits_.data() + slot(m, static_cast<std::size_t>(classes()))
                                            : out_grad_[static_cast<std::size_t>(y.chunk)].data() + slot(m, out_w);
  float* dx = l == ch.first ? (y.input_grad ? in_grad_[static_cast<std::size_t>(y.chunk)].data() + slot(m, in_w) : nullptr)
                            : (delta == dx_a_.data() ? dx_b_.data() : dx_a_.data());
  pending_dx_ = dx;
  if (!delta) throw std::logic_error(fmt::format("SplitMlp: backward of layer {} before the layer after it", l));
  const int rn = static_cast<int>(n);
  // d(loss)/d(output) through this layer's ReLU, then dW = dY^T X, db = column sums of dY, dX = dY W.
  if (y.relu) ops_.relu_backward(delta, acts_[static_cast<std::size_t>(l)].data() + slot(m, out_w), n * out_w);
  ops_.gemm(true, false, y.out, y.in, rn, 1.0f, delta, y.out, input_of(m, l), y.in, accumulate ? 1.0f : 0.0f, grad(ps[0]),
            y.in);
  ops_.bias_grad(delta, grad(ps[1]), rn, y.out, accumulate);
  if (y.input_grad) ops_.gemm(false, false, rn, y.in, y.out, 1.0f, delta, y.out, param(ps[0]), y.in, 0.0f, dx, y.in);
}

StagePasses::Span SplitMlp::tp_sum(int m, int l, bool gradient) {
  const Layer& y = layers_.at(static_cast<std::size_t>(l));
  if (!gradient) {
    if (!y.sums) throw std::logic_error(fmt::format("SplitMlp: layer {} has no partial output to sum", l));
    return {acts_[static_cast<std::size_t>(l)].data() + slot(m, static_cast<std::size_t>(y.out)), rows(m) * static_cast<std::size_t>(y.out)};
  }
  if (y.split != TpSplit::Column || !y.input_grad)
    throw std::logic_error(fmt::format("SplitMlp: layer {} has no partial input gradient to sum", l));
  const bool first = l == pipe_.chunks[static_cast<std::size_t>(y.chunk)].first;
  float* dx = first ? in_grad_[static_cast<std::size_t>(y.chunk)].data() + slot(m, static_cast<std::size_t>(y.in)) : pending_dx_;
  return {dx, rows(m) * static_cast<std::size_t>(y.in)};
}

void SplitMlp::tp_summed(int m, int l, bool gradient) {
  if (!gradient) finish(m, l);  // the summed input gradient needs nothing more
}

StagePasses::Span SplitMlp::boundary(int m, int chunk, bool gradient, bool send) {
  const auto c = static_cast<std::size_t>(chunk);
  const StageChunk& ch = pipe_.chunks.at(c);
  const auto in = static_cast<std::size_t>(layers_[static_cast<std::size_t>(ch.first)].in);
  const auto out = static_cast<std::size_t>(layers_[static_cast<std::size_t>(ch.end - 1)].out);
  const bool input_side = gradient == send;  // a forward receive or a backward send: the chunk's input
  if (input_side ? first_place(chunk) : last_place(chunk))
    throw std::logic_error(fmt::format("SplitMlp: chunk {} has no {} from another stage", chunk,
                                       input_side ? "input" : "output"));
  if (input_side) return {(send ? in_grad_[c] : in_[c]).data() + slot(m, in), rows(m) * in};
  return {(send ? acts_[static_cast<std::size_t>(ch.end - 1)] : out_grad_[c]).data() + slot(m, out), rows(m) * out};
}

double SplitMlp::step_loss() const {
  if (dlogits_.size() == 0) return std::numeric_limits<double>::quiet_NaN();
  if (losses_.size() == 1) return losses_.front();
  double sum = 0;
  for (std::size_t m = 0; m < losses_.size(); ++m) sum += losses_[m] * static_cast<double>(rows_[m]);
  return sum / static_cast<double>(step_batch_);
}

void SplitMlp::run_segment(int) { throw std::logic_error("SplitMlp runs microbatch by microbatch (StagePasses::forward)"); }
const float* SplitMlp::logits() const { throw std::logic_error("SplitMlp: logits are per microbatch"); }
float* SplitMlp::start_backward() { throw std::logic_error("SplitMlp runs microbatch by microbatch (StagePasses::backward)"); }
void SplitMlp::backward_layer(int, bool) {
  throw std::logic_error("SplitMlp runs microbatch by microbatch (StagePasses::backward)");
}

}  // namespace ddplab
