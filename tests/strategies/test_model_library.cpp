// Model tables: the built-in ones against published parameter counts and FLOPs, and each malformed-table
// error naming file, line, column and field.
#include <gtest/gtest.h>
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <set>
#include <string>

#include "ddplab/strategies/model_library.hpp"
#include "ddplab/strategies/strategy.hpp"
#include "temp_dir.hpp"

using namespace ddplab;

namespace {

const ParamSpec* find_param(const ModelSpec& m, const std::string& name) {
  for (const auto& p : m.params)
    if (p.name == name) return &p;
  return nullptr;
}

std::size_t count_layers_named(const ModelSpec& m, const std::string& suffix) {
  std::size_t n = 0;
  for (const auto& l : m.layers) n += l.name.ends_with(suffix);
  return n;
}

// Forward FLOPs of a transformer per sequence: 2 x (matmul weights) x tokens + the attention products
// QK^T and AV (4 x layers x seq^2 x hidden) + extras (lm_head, pooler).
double transformer_forward(double matmul_params, double layers, double seq, double hidden, double extra) {
  return 2 * matmul_params * seq + 4 * layers * seq * seq * hidden + extra;
}

// The message of loading `path`, or "" when it loaded.
std::string load_error(const std::string& path) {
  try {
    (void)load_model_table(path);
  } catch (const ModelTableError& e) {
    return e.what();
  }
  return "";
}

const std::string kHeader = std::string(kModelTableHeader) + "\n";

}  // namespace

// ---- built-in tables ----

TEST(ModelLibrary, BuiltinNamesResolveToShippedFiles) {
  for (std::string_view name : kBuiltinModelTables) {
    const std::string path = model_table_path(std::string(name));
    EXPECT_EQ(path, std::string(DDPLAB_SOURCE_DIR) + "/strategies/models/" + std::string(name) + ".csv");
    EXPECT_TRUE(std::filesystem::is_regular_file(path)) << path;
  }
  EXPECT_EQ(model_table_path("my/model.csv"), "my/model.csv");  // anything else is a path
}

TEST(ModelLibrary, ParameterCountsAreThePublishedOnes) {
  EXPECT_EQ(load_model_table("resnet50").parameter_count(), 25'557'032u);      // torchvision resnet50
  EXPECT_EQ(load_model_table("bert_large").parameter_count(), 335'141'888u);   // bert-large-uncased with pooler
  EXPECT_EQ(load_model_table("gpt2_xl").parameter_count(), 1'557'611'200u);    // lm_head tied to wte
  EXPECT_EQ(load_model_table("llama2_7b").parameter_count(), 6'738'415'616u);  // untied lm_head
  // GPT-3 175B as Megatron-LM trains it: published as 174.6B (Narayanan et al. 2021); exactly their Eq. 2,
  // 12Lh^2 + 13Lh + (V + s)h, plus the final LayerNorm's 2h.
  const std::size_t L = 96, h = 12288, V = 51200, s = 2048;
  const std::size_t gpt3 = load_model_table("gpt3_175b").parameter_count();
  EXPECT_EQ(gpt3, 12 * L * h * h + 13 * L * h + (V + s) * h + 2 * h);
  EXPECT_NEAR(static_cast<double>(gpt3), 174.6e9, 0.05e9);
}

// Model FLOPs of a GPT layer stack, forward and backward per sequence (Korthikanti et al. 2022, Eq. 7):
// 72 L s h^2 (1 + s/(6h) + V/(12hL)). The table adds its element-wise layers, which the formula leaves out.
TEST(ModelLibrary, Gpt3FlopsAreThePublishedFormulas) {
  const ModelSpec m = load_model_table("gpt3_175b");
  const double L = 96, h = 12288, V = 51200, s = 2048;
  const double model_flops = 72 * L * s * h * h * (1 + s / (6 * h) + V / (12 * h * L));
  const double table = m.forward_flops() + m.backward_flops();
  EXPECT_GT(table, model_flops);
  EXPECT_LT(table, model_flops * 1.001);
}

TEST(ModelLibrary, EveryTableIsWellFormed) {
  for (std::string_view name : kBuiltinModelTables) {
    const ModelSpec m = load_model_table(std::string(name));
    EXPECT_EQ(m.name, name);
    std::set<std::string> names;
    int last_layer = 0;
    for (const auto& p : m.params) {
      EXPECT_TRUE(names.insert(p.name).second) << p.name;
      EXPECT_GE(p.layer, last_layer) << p.name;  // parameters follow the layers
      last_layer = p.layer;
      std::size_t product = 1;
      for (std::size_t d : p.shape) product *= d;
      EXPECT_EQ(product, p.count()) << p.name;
      EXPECT_EQ(p.rows, p.shape.front()) << p.name;
    }
    for (const auto& l : m.layers) {
      EXPECT_DOUBLE_EQ(l.backward_flops, 2 * l.forward_flops) << l.name;
      EXPECT_GT(l.activation_bytes, 0) << l.name;
    }
    // A strategy plans it: DDP's buckets cover every gradient.
    StrategyConfig cfg;
    cfg.policy = "overlap";
    cfg.schedule = "ring";
    const Strategy s(cfg, m, {8, 1, 4, 1});
    EXPECT_EQ(s.bucketing().total, m.parameter_count());
  }
}

TEST(ModelLibrary, ResNet50Layers) {
  const ModelSpec m = load_model_table("resnet50");
  const ParamSpec* fc = find_param(m, "fc.weight");
  ASSERT_NE(fc, nullptr);
  EXPECT_EQ(fc->rows, 1000u);
  EXPECT_EQ(fc->cols, 2048u);
  const ParamSpec* conv1 = find_param(m, "conv1.weight");  // 4-D: rows = out channels, cols = the rest
  ASSERT_NE(conv1, nullptr);
  EXPECT_EQ(conv1->shape, (std::vector<std::size_t>{64, 3, 7, 7}));
  EXPECT_EQ(conv1->rows, 64u);
  EXPECT_EQ(conv1->cols, 147u);
  EXPECT_EQ(m.params.front().name, "conv1.weight");  // PyTorch's parameter order
  EXPECT_EQ(m.params.back().name, "fc.bias");
  EXPECT_NE(find_param(m, "layer4.0.downsample.0.weight"), nullptr);
  EXPECT_EQ(find_param(m, "bn1.running_mean"), nullptr);  // buffers are not parameters
  EXPECT_EQ(count_layers_named(m, ".conv3"), 16u);        // 3 + 4 + 6 + 3 bottlenecks
  EXPECT_EQ(m.params.size(), 161u);                       // len(list(resnet50().parameters()))
  // Published: 4.1 GMACs per 224x224 image (convolutions and fc) = 8.2e9 FLOPs; ours adds element-wise work.
  EXPECT_NEAR(m.forward_flops(), 8.18e9, 0.02 * 8.18e9);
  EXPECT_DOUBLE_EQ(m.backward_flops(), 2 * m.forward_flops());
  // Activations per image in fp32: tens of MB (sum of every layer's output).
  double act = 0;
  for (const auto& l : m.layers) act += l.activation_bytes;
  EXPECT_GT(act, 50e6);
  EXPECT_LT(act, 500e6);
}

TEST(ModelLibrary, BertLargeLayers) {
  const ModelSpec m = load_model_table("bert_large");
  EXPECT_EQ(count_layers_named(m, ".attention.self.query"), 24u);
  const ParamSpec* w = find_param(m, "encoder.layer.23.intermediate.dense.weight");
  ASSERT_NE(w, nullptr);
  EXPECT_EQ(w->rows, 4096u);  // nn.Linear: (out, in)
  EXPECT_EQ(w->cols, 1024u);
  EXPECT_NE(find_param(m, "pooler.dense.weight"), nullptr);
  EXPECT_EQ(m.params.size(), 391u);  // len(list(BertModel(bert-large).parameters()))
  // 512 tokens: linear weights 24 x (4 x 1024^2 + 2 x 1024 x 4096), the pooler on one token.
  const double d = 1024, ff = 4096, s = 512;
  const double expected = transformer_forward(24 * (4 * d * d + 2 * d * ff), 24, s, d, 2 * d * d);
  EXPECT_NEAR(m.forward_flops(), expected, 0.02 * expected);
}

TEST(ModelLibrary, Gpt2XlLayers) {
  const ModelSpec m = load_model_table("gpt2_xl");
  EXPECT_EQ(count_layers_named(m, ".attn.c_attn"), 48u);
  const ParamSpec* c_attn = find_param(m, "transformer.h.47.attn.c_attn.weight");
  ASSERT_NE(c_attn, nullptr);
  EXPECT_EQ(c_attn->rows, 1600u);  // Conv1D: (in, out)
  EXPECT_EQ(c_attn->cols, 4800u);
  EXPECT_EQ(find_param(m, "lm_head.weight"), nullptr);  // tied to transformer.wte.weight
  EXPECT_EQ(m.params.size(), 48u * 12 + 4);
  // 1024 tokens; the tied lm_head is a matmul with the embedding (50257 x 1600).
  const double d = 1600, s = 1024;
  const double expected = transformer_forward(48 * 12 * d * d, 48, s, d, 2 * s * d * 50257);
  EXPECT_NEAR(m.forward_flops(), expected, 0.02 * expected);
}

TEST(ModelLibrary, Llama27bLayers) {
  const ModelSpec m = load_model_table("llama2_7b");
  EXPECT_EQ(count_layers_named(m, ".mlp.gate_proj"), 32u);
  const ParamSpec* down = find_param(m, "model.layers.0.mlp.down_proj.weight");
  ASSERT_NE(down, nullptr);
  EXPECT_EQ(down->rows, 4096u);
  EXPECT_EQ(down->cols, 11008u);
  const ParamSpec* head = find_param(m, "lm_head.weight");
  ASSERT_NE(head, nullptr);
  EXPECT_EQ(head->count(), 32000u * 4096);
  EXPECT_EQ(m.params.size(), 32u * 9 + 3);
  const double d = 4096, ff = 11008, s = 4096;
  const double expected = transformer_forward(32 * (4 * d * d + 3 * d * ff), 32, s, d, 2 * s * d * 32000);
  EXPECT_NEAR(m.forward_flops(), expected, 0.02 * expected);
}

TEST(ModelLibrary, ModelSpecForScenarioModel) {
  ModelConfig mlp;
  const ModelSpec m = model_spec_for(mlp);
  EXPECT_EQ(m.parameter_count(), mlp.parameter_count());
  EXPECT_EQ(m.name, "mlp");
  EXPECT_EQ(m.layers.at(0).name, "layers.0");
  EXPECT_DOUBLE_EQ(m.layers.at(0).activation_bytes, 4.0 * 1024);
  EXPECT_EQ(m.params.at(0).shape, (std::vector<std::size_t>{1024, 784}));
  ModelConfig table;
  table.type = ModelType::Table;
  table.table = "resnet50";
  EXPECT_EQ(model_spec_for(table).parameter_count(), 25'557'032u);
}

// ---- your own table ----

TEST(ModelLibrary, OwnTableLoads) {
  const test::TempDir dir("ddplab-models");
  const std::string path = dir.write("tiny.csv", "# a comment\n\n" + kHeader +
                                                     "conv, weight:8x3x3x3 ;bias:8 ,1.5e3,3000,2048\n"
                                                     "relu,,10,20,2048\r\n"
                                                     "fc,weight:10x512;bias:10,10240,20480,40\n");
  const ModelSpec m = load_model_table(path);
  EXPECT_EQ(m.name, "tiny");
  ASSERT_EQ(m.layers.size(), 3u);
  EXPECT_EQ(m.layers[0].name, "conv");
  EXPECT_DOUBLE_EQ(m.layers[0].forward_flops, 1500);
  EXPECT_DOUBLE_EQ(m.layers[0].backward_flops, 3000);
  EXPECT_DOUBLE_EQ(m.layers[1].activation_bytes, 2048);
  ASSERT_EQ(m.params.size(), 4u);
  EXPECT_EQ(m.params[0].name, "conv.weight");
  EXPECT_EQ(m.params[0].count(), 216u);
  EXPECT_EQ(m.params[1].name, "conv.bias");
  EXPECT_EQ(m.params[1].cols, 1u);
  EXPECT_EQ(m.params[3].layer, 2);
  EXPECT_EQ(m.parameter_count(), 216u + 8 + 5120 + 10);
  EXPECT_EQ(m.expected_ready_order(), (std::vector<int>{2, 3, 0, 1}));
}

// ---- malformed tables: each message names file, line, column and field ----

struct BadTable {
  const char* body;      // after "# comment\n" + header (so the first row is line 3)
  const char* expected;  // message after "<path>:"
};

TEST(ModelLibrary, MalformedTablesNameFileLineAndField) {
  const BadTable cases[] = {
      {"a,w:2,1,2,abc\n", "3:11: activation_bytes must be a non-negative number (per sample), got \"abc\""},
      {"a,w:2,1,2,3\nb,,x1,2,3\n", "4:4: forward_flops must be a non-negative number (per sample), got \"x1\""},
      {"a,w:2,1,-2,3\n", "3:9: backward_flops must be a non-negative number (per sample), got \"-2\""},
      {"a,w:2,inf,2,3\n", "3:7: forward_flops must be a non-negative number (per sample), got \"inf\""},
      {"a,w:2,1,2\n",
       "3:1: a row has 5 fields (name,params,forward_flops,backward_flops,activation_bytes), this one has 4"},
      {"a,w:2x0,1,2,3\n",
       "3:7: params: tensor \"w\" has a bad dimension \"0\" (dimensions are positive integers joined by "
       "'x', such as 64x3x7x7)"},
      {"a,w:2x,1,2,3\n",
       "3:7: params: tensor \"w\" has a bad dimension \"\" (dimensions are positive integers joined by "
       "'x', such as 64x3x7x7)"},
      {"a,w:2;bias,1,2,3\n",
       "3:7: params must be \";\"-separated tensor:shape entries such as \"weight:64x3x7x7\", got \"bias\""},
      {"a,w:2;w:3,1,2,3\n", "3:7: params: parameter \"a.w\" is already defined on line 3"},
      {"a,w:2,1,2,3\na,b:1,1,2,3\n", "4:1: name must be unique (line 3 has the same), got \"a\""},
      {"my layer,w:2,1,2,3\n",
       "3:1: name must be a non-empty layer name of letters, digits, '_', '.' and '-', got \"my layer\""},
      {",w:2,1,2,3\n", "3:1: name must be a non-empty layer name of letters, digits, '_', '.' and '-', got \"\""},
      {"a,,1,2,3\n", "3:1: the table has no parameters (every row's params field is empty)"},
      {"", "2:1: the table has no layers (one row per layer after the header)"},
  };
  const test::TempDir dir("ddplab-models");
  int i = 0;
  for (const BadTable& c : cases) {
    const std::string path = dir.write("bad" + std::to_string(i++) + ".csv", "# comment\n" + kHeader + c.body);
    EXPECT_EQ(load_error(path), path + ":" + c.expected);
  }
  const std::string no_header = dir.write("noheader.csv", "# only a comment\nname,params,flops\n");
  EXPECT_EQ(load_error(no_header),
            no_header +
                ":2:1: the header must be \"name,params,forward_flops,backward_flops,activation_bytes\" or "
                "\"name,params,forward_flops,backward_flops,activation_bytes,tp\", got \"name,params,flops\"");
  // With the tp column: each row has six fields, and tp is one of the splits.
  const std::string tp_header = std::string(kModelTableHeaderTp) + "\n";
  const std::string tp_bad = dir.write("tpbad.csv", tp_header + "fc1,weight:4x4,32,64,16,diagonal\n");
  EXPECT_EQ(load_error(tp_bad), tp_bad +
                                    ":2:25: tp must be \"column\", \"row\", \"split\" or empty (replicated), got "
                                    "\"diagonal\"");
  const std::string tp_short = dir.write("tpshort.csv", tp_header + "fc1,weight:4x4,32,64,16\n");
  EXPECT_EQ(load_error(tp_short),
            tp_short + ":2:1: a row has 6 fields (" + std::string(kModelTableHeaderTp) + "), this one has 5");
  const std::string tp_ok = dir.write("tpok.csv", tp_header +
                                                      "fc1,weight:4x4,32,64,16,column\nact,,4,8,16,split\n"
                                                      "fc2,weight:4x4,32,64,16,row\nnorm,weight:4,4,8,16,\n");
  const ModelSpec m = load_model_table(tp_ok);
  EXPECT_EQ(m.layers[0].tp, TpSplit::Column);
  EXPECT_EQ(m.layers[1].tp, TpSplit::Split);
  EXPECT_EQ(m.layers[2].tp, TpSplit::Row);
  EXPECT_EQ(m.layers[3].tp, TpSplit::None);
  const std::string empty = dir.write("empty.csv", "");
  EXPECT_EQ(load_error(empty),
            empty + ":1:1: no header row \"name,params,forward_flops,backward_flops,activation_bytes\"");
  const std::string missing = (std::filesystem::temp_directory_path() / "ddplab-no-such-table.csv").string();
  EXPECT_EQ(load_error(missing), missing + ": cannot open model table (No such file or directory)");
}
