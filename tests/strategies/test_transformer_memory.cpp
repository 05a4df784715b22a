// The layout memory model (transformer_memory.hpp) against hand computations (docs/model-parallel.md) and
// the papers' own figures. The small GPT: L = 2, h = 64, a = 4, s = 32, b = 2, V = 100: psi = 2 (12h^2 + 13h)
// + Vh + sh + 2h = 108,544; one layer's activations per microbatch: sbh = 4,096 and 5as/h = 10.
#include <gtest/gtest.h>

#include "ddplab/core/error.hpp"
#include "ddplab/strategies/transformer_memory.hpp"

namespace ddplab {
namespace {

const TransformerDims kSmall{2, 64, 4, 32, 100};

TransformerLayout layout(int tp = 1, int pp = 1, int dp = 1, int zero = 0) {
  TransformerLayout l;
  l.tp = tp, l.pp = pp, l.dp = dp, l.zero = zero, l.microbatch = 2;
  return l;
}

TEST(TransformerMemory, ParametersOfTheSmallGptAndOfGpt3) {
  EXPECT_EQ(transformer_parameters(kSmall), 108'544);
  EXPECT_EQ(device_parameters(kSmall, layout(), 0), 108'544);
  // GPT-3 as Megatron-LM trains it (the gpt3_175b table): 174,615,846,912.
  EXPECT_EQ(transformer_parameters({96, 12288, 96, 2048, 51200}), 174'615'846'912.0);
  // TP 2: each layer's 12h^2 + 7h split, 6h whole: 24,800 + 384; embeddings 3,200 + 2,048; final LN 128.
  EXPECT_EQ(device_parameters(kSmall, layout(2), 0), 2 * (24'800 + 384) + 3'200 + 2'048 + 128);
  // PP 2: a layer each; the first stage has the embeddings, the last the final LN and the tied output copy.
  EXPECT_EQ(device_parameters(kSmall, layout(1, 2), 0), 49'984 + 6'400 + 2'048);
  EXPECT_EQ(device_parameters(kSmall, layout(1, 2), 1), 49'984 + 128 + 6'400);
}

TEST(TransformerMemory, ModelStatesByZeroStage) {
  // 16 psi = 1,736,704; at N_d = 4: ZeRO-1 7 psi, ZeRO-2 5.5 psi, ZeRO-3 4 psi.
  EXPECT_EQ(model_state_bytes(108'544, 4, 0), 1'736'704);
  EXPECT_EQ(model_state_bytes(108'544, 4, 1), 759'808);
  EXPECT_EQ(model_state_bytes(108'544, 4, 2), 596'992);
  EXPECT_EQ(model_state_bytes(108'544, 4, 3), 434'176);
  // Rajbhandari et al. 2020, Figure 1: 7.5B parameters on 64 devices: 120, 31.4, 16.6 and 1.9 GB.
  EXPECT_NEAR(model_state_bytes(7.5e9, 64, 0) / 1e9, 120.0, 0.05);
  EXPECT_NEAR(model_state_bytes(7.5e9, 64, 1) / 1e9, 31.4, 0.05);
  EXPECT_NEAR(model_state_bytes(7.5e9, 64, 2) / 1e9, 16.6, 0.05);
  EXPECT_NEAR(model_state_bytes(7.5e9, 64, 3) / 1e9, 1.9, 0.05);
}

TEST(TransformerMemory, LayerActivationsAsKorthikantiCounts) {
  TransformerLayout l = layout();
  EXPECT_EQ(layer_activation_bytes(kSmall, l), 180'224);  // 4,096 x (34 + 10)
  l.tp = 2;
  EXPECT_EQ(layer_activation_bytes(kSmall, l), 110'592);  // 4,096 x (10 + 12 + 5)
  l.sequence_parallel = true;
  EXPECT_EQ(layer_activation_bytes(kSmall, l), 90'112);  // 2,048 x 44
  l.tp = 4;
  EXPECT_EQ(layer_activation_bytes(kSmall, l), 45'056);  // 1,024 x 44
  l.sequence_parallel = false;
  EXPECT_EQ(layer_activation_bytes(kSmall, l), 75'776);  // 4,096 x (10 + 6 + 2.5)
  l.recompute = "selective";
  EXPECT_EQ(layer_activation_bytes(kSmall, l), 4'096 * 16);
  l.recompute = "full";
  EXPECT_EQ(layer_activation_bytes(kSmall, l), 2 * 4'096);
  l.recompute = "some";
  EXPECT_THROW(layer_activation_bytes(kSmall, l), ddplab::InputError);
}

TEST(TransformerMemory, APipelineStageHoldsItsScheduleInFlightMicrobatches) {
  // 8 layers over 4 stages, 8 microbatches, TP 1: a layer's activations are 180,224 bytes.
  TransformerDims d = kSmall;
  d.layers = 8;
  TransformerLayout l = layout(1, 4);
  l.microbatches = 8;
  // 1F1B: stage s holds min(4 - s, 8) microbatches of its 2 layers.
  for (int s = 0; s < 4; ++s) EXPECT_EQ(transformer_device_memory(d, l, s).activations, (4 - s) * 2 * 180'224.0) << s;
  l.pipeline_schedule = "gpipe";  // all 8
  EXPECT_EQ(transformer_device_memory(d, l, 3).activations, 8 * 2 * 180'224.0);
  // Interleaved, 2 chunks of 1 layer: stage 0 holds 2 (P - 1) + (v - 1) P + 1 = 11 chunk-microbatches, the
  // 1 + (P - 1)/(P v) = 1.375 whole stages' worth (8 layers' x 1.375 = 11 layers).
  l.pipeline_schedule = "interleaved";
  l.chunks = 2;
  EXPECT_EQ(transformer_device_memory(d, l, 0).activations, 11 * 180'224.0);
  l.chunks = 3;  // 8 layers do not split into 4 x 3 chunks
  EXPECT_THROW(transformer_device_memory(d, l, 0), ddplab::InputError);
}

TEST(TransformerMemory, ALayoutAddsModelStatesAndActivations) {
  TransformerLayout l = layout(2, 1, 4, 1);
  const LayoutMemory m = transformer_device_memory(kSmall, l, 0);
  EXPECT_EQ(m.parameters, 55'744);  // as above: 2 x (24,800 + 384) + 3,200 + 2,048 + 128
  EXPECT_EQ(m.model_states, 4 * 55'744 + 12 * 55'744 / 4.0);
  EXPECT_EQ(m.activations, 2 * 110'592.0);  // both layers, one microbatch in flight
  EXPECT_EQ(m.total(), m.model_states + m.activations);
  EXPECT_THROW(transformer_device_memory(kSmall, layout(3), 0), ddplab::InputError);  // 3 does not divide h
}

}  // namespace
}  // namespace ddplab
