// The GPT against PyTorch: the same weights, tokens and labels through tests/python/gpt_torch.py (an
// independent float64 implementation), and the logits, the loss and every parameter's gradient compared.
// Error measure: ||ours - torch|| / ||torch|| per tensor (the loss: relative), at most 1e-5. Sequences of 70
// tokens cross the fused attention's 64-token tiles.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>

#include <nlohmann/json.hpp>

#include "ddplab/core/choice.hpp"
#include "ddplab/runtime/gpt.hpp"
#include "normal_floats.hpp"
#include "temp_dir.hpp"

namespace ddplab {
namespace {

// Debian's python3-torch installs for /usr/bin/python3, which need not be the python3 on PATH.
#define DDPLAB_PYTHON "/usr/bin/python3"

bool torch_present() { return std::system(DDPLAB_PYTHON " -c 'import torch' >/dev/null 2>&1") == 0; }

double relative_error(const std::vector<float>& ours, const std::vector<double>& torch) {
  double diff = 0, ref = 0;
  for (std::size_t i = 0; i < torch.size(); ++i)
    diff += (ours[i] - torch[i]) * (ours[i] - torch[i]), ref += torch[i] * torch[i];
  return std::sqrt(diff / ref);
}

void compare_with_torch(const GptConfig& g) {
  const int batch = 2;
  auto ops = make_ops("cpu");
  Gpt model(*ops, g, batch);
  const std::vector<float> noise = test::normal_floats(model.num_params(), 9);
  for (std::size_t i = 0; i < model.num_params(); ++i) model.params()[i] = 0.3f * noise[i];
  std::vector<float> tokens;
  std::vector<std::int32_t> labels;
  for (int i = 0; i < batch * g.seq; ++i) {
    tokens.push_back(static_cast<float>((31 * i + 7) % g.vocab));
    labels.push_back((17 * i + 5) % g.vocab);
  }
  const float* out = model.forward(tokens.data(), batch);
  const std::vector<float> logits(out, out + static_cast<std::size_t>(batch) * g.seq * g.vocab);
  const double loss = model.backward(labels.data());

  nlohmann::json in{{"config", ModelConfig{.type = ModelType::Gpt, .gpt = g}.to_json()},
                    {"batch", batch},
                    {"tokens", tokens},
                    {"labels", labels},
                    {"params", nlohmann::json::array()}};
  for (const ParamInfo& p : model.param_info()) {
    const ParamSpec& s = model.spec().params[&p - model.param_info().data()];
    in["params"].push_back(
        {{"name", p.name},
         {"shape", s.shape},
         {"values", std::vector<float>(model.params() + p.offset, model.params() + p.offset + p.count)}});
  }
  test::TempDir dir("ddplab-gpt-torch");
  std::ofstream(dir.file("in.json")) << in.dump();
  const std::string cmd = DDPLAB_PYTHON " " DDPLAB_SOURCE_DIR "/tests/python/gpt_torch.py " + dir.file("in.json") +
                          " " + dir.file("out.json");
  ASSERT_EQ(std::system(cmd.c_str()), 0) << cmd;
  const nlohmann::json torch = nlohmann::json::parse(std::ifstream(dir.file("out.json")));

  EXPECT_LT(std::abs(loss - torch["loss"].get<double>()) / torch["loss"].get<double>(), 1e-5)
      << loss << " against " << torch["loss"];
  EXPECT_LT(relative_error(logits, torch["logits"].get<std::vector<double>>()), 1e-5) << "logits";
  double worst = 0;
  for (const ParamInfo& p : model.param_info()) {
    const std::vector<float> ours(model.grads() + p.offset, model.grads() + p.offset + p.count);
    const double err = relative_error(ours, torch["grads"][p.name].get<std::vector<double>>());
    EXPECT_LT(err, 1e-5) << p.name;
    worst = std::max(worst, err);
  }
  std::printf("largest gradient error: %.2g (logits %.2g)\n", worst,
              relative_error(logits, torch["logits"].get<std::vector<double>>()));
}

GptConfig torch_config() {
  GptConfig g;
  g.blocks = 2, g.dim = 16, g.heads = 4, g.seq = 70, g.vocab = 256;
  return g;
}

TEST(GptTorch, Gpt2PartsMatchPyTorch) {
  if (!torch_present()) GTEST_SKIP() << "python3 cannot import torch (apt-get install python3-torch)";
  compare_with_torch(torch_config());
}

TEST(GptTorch, LlamaPartsWithGroupedQueriesMatchPyTorch) {
  if (!torch_present()) GTEST_SKIP() << "python3 cannot import torch (apt-get install python3-torch)";
  GptConfig g = torch_config();
  g.kv_heads = 2;
  g.norm = GptNorm::RmsNorm, g.activation = GptActivation::SwiGlu, g.position = GptPosition::Rotary;
  g.tied = false, g.bias = false;
  compare_with_torch(g);
}

}  // namespace
}  // namespace ddplab
