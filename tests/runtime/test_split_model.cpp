// SplitModel, a rank's share of an MLP or a CNN under tensor and pipeline parallelism, against the unsplit
// model: the TP
// group and the pipeline are emulated in one process (a TP allreduce is the shards' sum, a send a copy), and
// the shares' gradients put together must be the whole model's.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "ddplab/core/error.hpp"
#include "ddplab/runtime/mlp.hpp"
#include "ddplab/runtime/cnn.hpp"
#include "ddplab/runtime/split_model.hpp"
#include "ddplab/strategies/model_library.hpp"
#include "small_cnn.hpp"
#include "ddplab/strategies/pipeline.hpp"
#include "ddplab/strategies/strategy.hpp"
#include "ddplab/strategies/tensor_parallel.hpp"

namespace ddplab {
namespace {

constexpr std::uint64_t kSeed = 11;

struct Batch {
  std::vector<float> x;
  std::vector<std::int32_t> y;
};
Batch batch_of(int rows, int features, int classes) {
  Batch b;
  std::mt19937 rng(5);
  std::normal_distribution<float> d;
  for (int i = 0; i < rows * features; ++i) b.x.push_back(d(rng));
  for (int i = 0; i < rows; ++i) b.y.push_back(static_cast<std::int32_t>(rng() % static_cast<unsigned>(classes)));
  return b;
}

// The unsplit model's loss and gradients (parameter order) on the whole batch.
struct Whole {
  double loss = 0;
  std::vector<float> grads;
};
ModelConfig mlp(const std::vector<int>& widths) {
  ModelConfig m;
  m.type = ModelType::Mlp;
  m.layers = widths;
  return m;
}

ModelConfig cnn() { return test::small_cnn(2, 6, 5); }

// The unsplit model's loss and gradients (parameter order) on the whole batch.
Whole unsplit(Ops& ops, const ModelConfig& config, const Batch& b) {
  const int rows = static_cast<int>(b.y.size());
  const std::unique_ptr<Model> m = make_model(ops, config, rows);
  m->init(kSeed);
  m->forward(b.x.data(), rows);
  Whole w;
  w.loss = m->backward(b.y.data());
  std::vector<float> at_offsets(m->num_params());
  ops.to_host(at_offsets.data(), m->grads(), at_offsets.size());
  for (const ParamInfo& p : m->param_info())  // parameter order, as whole_contribution gives it
    w.grads.insert(w.grads.end(), at_offsets.begin() + static_cast<std::ptrdiff_t>(p.offset),
                   at_offsets.begin() + static_cast<std::ptrdiff_t>(p.offset + p.count));
  return w;
}

StageModel piece(const ModelConfig& config, int tp, const PipelineShape& shape, int stage) {
  const PipelineInfo* s = find_pipeline_schedule(shape.stages == 1 ? "gpipe" : "1f1b");
  return pipeline_stage(tensor_parallel_shard(model_spec_for(config), tp), *s, shape, stage);
}

std::vector<float> host_of(Ops& ops, const StagePasses::Span& s) {
  std::vector<float> h(s.count);
  ops.to_host(h.data(), s.data, s.count);
  return h;
}

// T shares of one stage run the stage plan's ops in lockstep; each TpSync is the sum of the shares' buffers.
double run_tp_group(Ops& ops, std::vector<std::unique_ptr<SplitModel>>& shares, const Strategy& strategy,
                    const Batch& b) {
  for (auto& s : shares)
    s->begin_step(b.x.data(), b.y.data(), static_cast<int>(b.y.size()), strategy.context().pipeline.shape.microbatches);
  for (const PlanOp& op : strategy.plan(0).ops) {
    for (auto& s : shares) {
      if (op.kind == OpKind::Forward) s->forward(op.microbatch, op.chunk, op.index);
      if (op.kind == OpKind::Backward) s->backward(op.microbatch, op.index, false);
    }
    if (op.kind != OpKind::TpSync) continue;
    std::vector<float> sum(shares.front()->tp_sum(op.microbatch, op.index, op.gradient).count, 0.0f);
    for (auto& s : shares) {
      const std::vector<float> part = host_of(ops, s->tp_sum(op.microbatch, op.index, op.gradient));
      for (std::size_t i = 0; i < sum.size(); ++i) sum[i] += part[i];
    }
    for (auto& s : shares) {
      ops.to_device(s->tp_sum(op.microbatch, op.index, op.gradient).data, sum.data(), sum.size());
      s->tp_summed(op.microbatch, op.index, op.gradient);
    }
  }
  return shares.front()->step_loss();
}

// The shares' gradients (or parameters) put together, each element from the share that holds it.
std::vector<float> assemble(std::vector<std::unique_ptr<SplitModel>>& shares, bool gradients) {
  std::vector<float> whole(shares.front()->whole_params(), 0.0f);
  for (std::size_t t = 0; t < shares.size(); ++t) {
    const std::vector<float> part = shares[t]->whole_contribution(t == 0, gradients);
    for (std::size_t i = 0; i < whole.size(); ++i) whole[i] += part[i];
  }
  return whole;
}

void expect_near_all(const std::vector<float>& got, const std::vector<float>& want, double rel,
                     const std::string& what) {
  ASSERT_EQ(got.size(), want.size()) << what;
  double scale = 0;
  for (float v : want) scale = std::max(scale, std::abs(static_cast<double>(v)));
  for (std::size_t i = 0; i < want.size(); ++i) ASSERT_NEAR(got[i], want[i], rel * scale) << what << ": element " << i;
}

TEST(SplitModel, TheSharesOfTheInitialModelAreTheWholeModelBitForBit) {
  auto ops = make_ops("cpu");
  const ModelConfig model = mlp({12, 8, 6, 4, 5});
  const std::vector<int>& widths = model.layers;
  std::vector<std::unique_ptr<SplitModel>> shares;
  for (int t = 0; t < 2; ++t) {
    const StageModel p = piece(model, 2, {1, 1, 1}, 0);
    shares.push_back(std::make_unique<SplitModel>(*ops, model, p.model, p.stage, 2, t, 4));
    shares.back()->init(kSeed);
  }
  EXPECT_EQ(assemble(shares, false), mlp_initial_params(widths, kSeed));
  Mlp whole(*ops, widths, 4);
  whole.init(kSeed);
  std::vector<float> w(whole.num_params());
  ops->to_host(w.data(), whole.params(), w.size());
  EXPECT_EQ(w, mlp_initial_params(widths, kSeed));
  // A column layer's share is half its weight's rows; the row layer's, half its columns, with the whole bias.
  EXPECT_EQ(shares[0]->param_info()[0].count, 4u * 12u);
  EXPECT_EQ(shares[0]->param_info()[2].count, 6u * 4u);
  EXPECT_EQ(shares[0]->param_info()[3].count, 6u);
}

TEST(SplitModel, TensorParallelGradientsAreTheUnsplitLayersGradients) {
  // Layers 0 and 2 column-parallel, 1 and 3 row-parallel: layer 2's input gradient and the outputs of 1 and 3
  // are summed by the TP group.
  auto ops = make_ops("cpu");
  const ModelConfig model = mlp({12, 8, 6, 4, 5});
  const std::vector<int>& widths = model.layers;
  const Batch b = batch_of(7, 12, 5);
  const Whole want = unsplit(*ops, model, b);
  for (int T : {2, 4}) {
    std::vector<std::unique_ptr<SplitModel>> shares;
    const StageModel p = piece(model, T, {1, 1, 1}, 0);
    for (int t = 0; t < T; ++t) {
      shares.push_back(std::make_unique<SplitModel>(*ops, model, p.model, p.stage, T, t, 7));
      shares.back()->init(kSeed);
    }
    StrategyContext ctx;
    ctx.batch_size = 7, ctx.pipeline = p.stage, ctx.tp = T;
    StrategyConfig cfg;
    const Strategy strategy(cfg, p.model, ctx);
    int syncs = 0;
    for (const PlanOp& op : strategy.plan(0).ops) syncs += op.kind == OpKind::TpSync;
    EXPECT_EQ(syncs, 3) << "rows 1 and 3 in forward, column 2 in backward";
    const double loss = run_tp_group(*ops, shares, strategy, b);
    EXPECT_NEAR(loss, want.loss, 1e-6 * std::abs(want.loss));
    for (int t = 0; t < T; ++t)
      EXPECT_EQ(shares[static_cast<std::size_t>(t)]->step_loss(), loss) << "the logits are whole on every share";
    expect_near_all(assemble(shares, true), want.grads, 1e-5, "TP " + std::to_string(T));
    // What every share holds whole (the row layers' biases) gets the same gradient on each.
    const std::vector<float> a = shares[0]->whole_contribution(true, true),
                             c = shares[1]->whole_contribution(true, true);
    const std::size_t bias1 = 8 * 12 + 8 + 6 * 8;  // layers.1.bias in parameter order
    for (std::size_t i = bias1; i < bias1 + 6; ++i) EXPECT_EQ(a[i], c[i]) << i;
  }
  EXPECT_THROW(tensor_parallel_shard(ModelSpec::mlp(widths), 3), ddplab::InputError);  // 8 outputs in 3
}

// Two stages, M microbatches, GPipe's order by hand: every forward, then every backward; sends are copies.
struct Pipeline2 {
  double loss = 0;
  std::vector<float> grads;
};
Pipeline2 run_two_stages(Ops& ops, const ModelConfig& config, int M, const Batch& b) {
  const int rows = static_cast<int>(b.y.size());
  std::vector<std::unique_ptr<SplitModel>> st;
  for (int s = 0; s < 2; ++s) {
    const StageModel p = piece(config, 1, {2, M, 1}, s);
    st.push_back(std::make_unique<SplitModel>(ops, config, p.model, p.stage, 1, 0, rows));
    st.back()->init(kSeed);
    st.back()->begin_step(b.x.data(), b.y.data(), rows, M);
  }
  auto copy = [&](const StagePasses::Span& from, const StagePasses::Span& to) {
    EXPECT_EQ(from.count, to.count);
    const std::vector<float> h = host_of(ops, from);
    ops.to_device(to.data, h.data(), h.size());
  };
  const int last0 = st[0]->num_layers() - 1, last1 = st[1]->num_layers() - 1;
  for (int m = 0; m < M; ++m) {
    st[0]->forward(m, 0, last0);
    copy(st[0]->boundary(m, 0, false, true), st[1]->boundary(m, 0, false, false));
    st[1]->forward(m, 0, last1);
  }
  for (int m = 0; m < M; ++m) {
    for (int l = last1; l >= 0; --l) st[1]->backward(m, l, m > 0);
    copy(st[1]->boundary(m, 0, true, true), st[0]->boundary(m, 0, true, false));
    for (int l = last0; l >= 0; --l) st[0]->backward(m, l, m > 0);
  }
  EXPECT_TRUE(std::isnan(st[0]->step_loss())) << "the first stage has no loss";
  Pipeline2 out{st[1]->step_loss(), std::vector<float>(st[0]->whole_params(), 0.0f)};
  for (auto& s : st) {
    const std::vector<float> part = s->whole_contribution(true, true);
    for (std::size_t i = 0; i < part.size(); ++i) out.grads[i] += part[i];
  }
  return out;
}

TEST(SplitModel, TwoStagesOfOneMicrobatchAreTheWholeModelBitForBit) {
  auto ops = make_ops("cpu");
  const ModelConfig model = mlp({12, 8, 6, 4, 5});
  const Batch b = batch_of(6, 12, 5);
  const Whole want = unsplit(*ops, model, b);
  const Pipeline2 got = run_two_stages(*ops, model, 1, b);
  EXPECT_EQ(got.loss, want.loss);
  EXPECT_EQ(got.grads, want.grads);
}

TEST(SplitModel, MicrobatchesAddUpToTheBatchGradientEvenWhenTheyDoNotDivideIt) {
  auto ops = make_ops("cpu");
  const ModelConfig model = mlp({12, 8, 6, 4, 5});
  const Batch b = batch_of(7, 12, 5);  // 3 + 2 + 2 rows
  const Whole want = unsplit(*ops, model, b);
  const Pipeline2 got = run_two_stages(*ops, model, 3, b);
  EXPECT_NEAR(got.loss, want.loss, 1e-6 * std::abs(want.loss));
  expect_near_all(got.grads, want.grads, 1e-5, "3 microbatches");
}

TEST(SplitModel, RefusesAStageThatIsNotItsModelsShare) {
  auto ops = make_ops("cpu");
  const StageModel p = piece(mlp({12, 8, 6, 4, 5}), 2, {1, 1, 1}, 0);
  EXPECT_THROW(SplitModel(*ops, mlp({12, 8, 6, 4, 5}), p.model, p.stage, 1, 0, 4),
               ddplab::InternalError);  // tp 2's share at tp 1
  EXPECT_THROW(SplitModel(*ops, mlp({12, 10, 6, 4, 5}), p.model, p.stage, 2, 0, 4),
               ddplab::InternalError);  // another MLP
  EXPECT_THROW(SplitModel(*ops, mlp({12, 8, 6, 4, 5}), p.model, p.stage, 2, 2, 4),
               ddplab::InternalError);  // TP rank 2 of 2
  ModelConfig norm = cnn();
  norm.bn = "local";
  const StageModel q = piece(norm, 1, {2, 1, 1}, 0);
  EXPECT_THROW(SplitModel(*ops, norm, q.model, q.stage, 1, 0, 4), ddplab::InputError);  // batch norm
}

// The CNN's stages: convolutions (one pooling) on the first, the Linear layers on the second; its layers are
// marked for no TP split, so a TP rank holds all of them.
TEST(SplitModel, TwoStagesOfACnnAreTheWholeCnnBitForBitAtOneMicrobatch) {
  auto ops = make_ops("cpu");
  const ModelConfig model = cnn();
  const Batch b = batch_of(6, model.input_features(), 5);
  const Whole want = unsplit(*ops, model, b);
  const Pipeline2 got = run_two_stages(*ops, model, 1, b);
  EXPECT_EQ(got.loss, want.loss);
  EXPECT_EQ(got.grads, want.grads);
  const Pipeline2 micro = run_two_stages(*ops, model, 4, batch_of(7, model.input_features(), 5));  // 2 + 2 + 2 + 1 rows
  const Whole want7 = unsplit(*ops, model, batch_of(7, model.input_features(), 5));
  EXPECT_NEAR(micro.loss, want7.loss, 1e-6 * std::abs(want7.loss));
  expect_near_all(micro.grads, want7.grads, 1e-5, "a CNN in 4 microbatches");
}

TEST(SplitModel, TheCnnsSharesStartAsTheWholeCnn) {
  auto ops = make_ops("cpu");
  const ModelConfig model = cnn();
  std::vector<std::unique_ptr<SplitModel>> shares;
  for (int s = 0; s < 2; ++s) {
    const StageModel p = piece(model, 1, {2, 1, 1}, s);
    shares.push_back(std::make_unique<SplitModel>(*ops, model, p.model, p.stage, 1, 0, 4));
    shares.back()->init(kSeed);
  }
  std::vector<float> whole(shares.front()->whole_params(), 0.0f);
  for (auto& s : shares) {
    const std::vector<float> part = s->whole_contribution(true);
    for (std::size_t i = 0; i < whole.size(); ++i) whole[i] += part[i];
  }
  EXPECT_EQ(whole, cnn_initial_params(cnn_layout(model), kSeed));
}

}  // namespace
}  // namespace ddplab
