// The GPT: every parameter's gradient against central finite differences (GPT-2's parts and Llama's), the
// running model against its one description (strategies/gpt.hpp: parameters, GEMM FLOPs, activations), and
// accumulation over micro-steps.
#include <gtest/gtest.h>

#include <cmath>
#include <map>

#include "ddplab/runtime/gpt.hpp"
#include "finite_differences.hpp"
#include "forwarding_ops.hpp"
#include "normal_floats.hpp"

namespace ddplab {
namespace {

GptConfig gpt2_like() {
  GptConfig g;
  g.blocks = 2, g.dim = 8, g.heads = 2, g.seq = 5, g.vocab = 13;
  return g;
}

GptConfig llama_like() {
  GptConfig g = gpt2_like();
  g.heads = 4, g.kv_heads = 2, g.ffn = 12;
  g.norm = GptNorm::RmsNorm, g.activation = GptActivation::SwiGlu, g.position = GptPosition::Rotary;
  g.tied = false, g.bias = false;
  return g;
}

// A GPT with parameters drawn wide enough that every gradient carries signal, and a fixed batch.
struct GptNet {
  GptNet(const GptConfig& g, const std::string& backend, int batch = 2)
      : ops(make_ops(backend)), model(*ops, g, batch), batch(batch) {
    const std::vector<float> noise = test::normal_floats(model.num_params(), 3);
    for (std::size_t i = 0; i < model.num_params(); ++i) model.params()[i] = 0.4f * noise[i];
    for (const ParamInfo& p : model.param_info())  // norms near 1, as trained ones are
      if (p.name.find("ln_") != std::string::npos && p.name.find(".weight") != std::string::npos)
        for (std::size_t k = 0; k < p.count; ++k) model.params()[p.offset + k] += 1.0f;
    for (int i = 0; i < batch * g.seq; ++i) {
      tokens.push_back(static_cast<float>((7 * i + 3) % g.vocab));
      labels.push_back((5 * i + 1) % g.vocab);
    }
  }
  double loss() {
    model.forward(tokens.data(), batch);
    return model.loss(labels.data());
  }
  std::unique_ptr<Ops> ops;
  Gpt model;
  int batch;
  std::vector<float> tokens;
  std::vector<std::int32_t> labels;
};

class GptGradients : public testing::TestWithParam<std::string> {
 protected:
  GptConfig config() const { return GetParam() == "gpt2" ? gpt2_like() : llama_like(); }
};

TEST_P(GptGradients, EveryParameterMatchesFiniteDifferences) {
  GptNet net(config(), "reference");
  net.model.forward(net.tokens.data(), net.batch);
  std::vector<int> order;
  net.model.backward(net.labels.data(), [&](int p) { order.push_back(p); });
  EXPECT_EQ(order, net.model.spec().expected_ready_order());
  const std::vector<float> analytic(net.model.grads(), net.model.grads() + net.model.num_params());
  for (const ParamInfo& p : net.model.param_info()) {
    const test::FdResult r = test::finite_differences(net.model, p, analytic, 2e-3f, [&] { return net.loss(); });
    EXPECT_GT(r.max_grad, 1e-4) << p.name << " has no gradient signal";
    EXPECT_LT(r.max_err, 2e-4 + 1e-2 * r.max_grad) << p.name << " (largest gradient " << r.max_grad << ")";
  }
}

TEST_P(GptGradients, CpuAgreesWithReferenceAndAccumulationAdds) {
  GptNet cpu(config(), "cpu"), ref(config(), "reference");
  test::expect_backends_agree_and_accumulation_adds(cpu.model, ref.model, cpu.tokens.data(), cpu.labels.data(),
                                                    cpu.batch, 1e-5, 1e-4, 1e-6, 1e-5);
}

INSTANTIATE_TEST_SUITE_P(Parts, GptGradients, testing::Values("gpt2", "llama"));

// Counts the FLOPs of the GEMMs and bias adds the model runs.
class CountingOps : public ForwardingOps {
 public:
  double flops = 0;
  void gemm(bool ta, bool tb, int m, int n, int k, float alpha, const float* a, int lda, const float* b, int ldb,
            float beta, float* c, int ldc) override {
    flops += 2.0 * m * n * k;
    ForwardingOps::gemm(ta, tb, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc);
  }
  void add_bias(float* y, const float* b, int r, int c) override {
    flops += static_cast<double>(r) * c;
    ForwardingOps::add_bias(y, b, r, c);
  }
};

TEST(Gpt, RunsWhatItsDescriptionSays) {
  for (const GptConfig& g : {gpt2_like(), llama_like()}) {
    const ModelSpec spec = gpt_model_spec(g);
    CountingOps ops;
    const int batch = 3;
    Gpt model(ops, g, batch);
    ASSERT_EQ(model.param_info().size(), spec.params.size());
    for (std::size_t i = 0; i < spec.params.size(); ++i) {
      EXPECT_EQ(model.param_info()[i].name, spec.params[i].name);
      EXPECT_EQ(model.param_info()[i].count, spec.params[i].count());
      EXPECT_EQ(model.param_info()[i].layer, spec.params[i].layer);
    }
    std::vector<float> tokens(static_cast<std::size_t>(batch * g.seq), 1.0f);
    model.begin_forward(tokens.data(), batch);
    for (int l = 0; l < model.num_layers(); ++l) {
      const LayerSpec& L = spec.layers[static_cast<std::size_t>(l)];
      ops.flops = 0;
      model.forward_through(l);
      // Linear layers are their GEMM and bias: exactly the described FLOPs, per sequence.
      if (L.name.find("c_attn") != std::string::npos || L.name.find("c_proj") != std::string::npos ||
          L.name.find("c_fc") != std::string::npos || L.name == "lm_head")
        EXPECT_DOUBLE_EQ(ops.flops / batch, L.forward_flops) << L.name;
      else
        EXPECT_EQ(ops.flops, 0) << L.name << " runs a GEMM its description does not count";
      // The output the layer writes is its described activation (the attention's log-sum-exp besides).
      const GptOp op = gpt_layers(g)[static_cast<std::size_t>(l)].op;
      const double lse = op == GptOp::Attention ? 4.0 * g.heads * g.seq : 0;
      EXPECT_DOUBLE_EQ(4.0 * g.seq * gpt_output_width(g, op) + lse, L.activation_bytes) << L.name;
    }
  }
}

TEST(Gpt, BackendsWithoutTransformerKernelsAreRefused) {
  class NoKernels : public ForwardingOps {
   public:
    std::string name() const override { return "kernel-less"; }
    TransformerKernels* transformer() override { return nullptr; }
  } ops;
  try {
    Gpt model(ops, gpt2_like(), 1);
    FAIL() << "made a GPT on a backend without transformer kernels";
  } catch (const InputError& e) {
    EXPECT_NE(std::string(e.what()).find("the kernel-less backend has no transformer kernels"), std::string::npos)
        << e.what();
  }
}

TEST(Gpt, InitialisationIsGpt2sAndDeterministic) {
  GptConfig g = gpt2_like();
  g.dim = 64, g.blocks = 8;
  const std::vector<float> a = gpt_initial_params(g, 5), b = gpt_initial_params(g, 5);
  EXPECT_EQ(a, b);
  const ModelSpec spec = gpt_model_spec(g);
  std::size_t at = 0;
  for (const ParamSpec& p : spec.params) {
    double sum = 0, sq = 0;
    for (std::size_t k = 0; k < p.count(); ++k) sum += a[at + k], sq += a[at + k] * a[at + k];
    const double n = static_cast<double>(p.count()), mean = sum / n, sd = std::sqrt(sq / n - mean * mean);
    if (p.name.find("ln_") != std::string::npos) {
      EXPECT_EQ(mean, p.name.find(".weight") != std::string::npos ? 1.0 : 0.0) << p.name;
    } else if (p.name.find(".bias") != std::string::npos) {
      EXPECT_EQ(sq, 0) << p.name;
    } else if (p.count() >= 4096) {
      const double want = p.name.find("c_proj.weight") != std::string::npos ? 0.02 / 4 : 0.02;
      EXPECT_NEAR(sd, want, 0.05 * want) << p.name;
    }
    at += p.count();
  }
}

}  // namespace
}  // namespace ddplab
