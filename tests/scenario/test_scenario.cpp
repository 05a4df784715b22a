// Scenario loading: the shipped scenarios, defaults, and the exact error message of each invalid file.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <ostream>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ddplab/core/scenario.hpp"

using namespace ddplab;

namespace {

const std::string kInvalid = std::string(DDPLAB_TEST_DATA) + "/invalid/";

// The ScenarioError message of loading `path`, or "" when it loaded.
std::string load_error(const std::string& path) {
  try {
    (void)load_scenario(path);
  } catch (const ScenarioError& e) {
    return e.what();
  }
  return "";
}

// The one required section, added to texts about the others.
std::string with_strategy(const std::string& text) {
  return text.find("[[strategy]]") == std::string::npos ? text + "\n[[strategy]]\nname = \"baseline\"\n" : text;
}
Scenario parse(const std::string& text, const std::string& path) { return parse_scenario(with_strategy(text), path); }

std::string parse_error(const std::string& text) {
  try {
    (void)parse_scenario(text, "fake/inline.toml");
  } catch (const ScenarioError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

// ---- shipped scenarios ----

TEST(Scenario, DefaultTomlIsTheDemo) {
  const Scenario s = load_scenario(std::string(DDPLAB_SOURCE_DIR) + "/scenarios/default.toml");
  EXPECT_EQ(s.name, "default");
  EXPECT_EQ(s.model.type, ModelType::Mlp);
  EXPECT_EQ(s.model.layers, (std::vector<int>{784, 1024, 1024, 1024, 10}));
  EXPECT_EQ(s.model.parameter_count(), 2913290u);
  EXPECT_EQ(s.data.dataset, "fashion-mnist");
  EXPECT_EQ(s.data.path, "/usr/share/datasets/fashion-mnist");
  EXPECT_EQ(s.train.backend, Backend::Cpu);
  EXPECT_EQ(s.train.batch_size, 64);
  EXPECT_EQ(s.train.epochs, 1);
  EXPECT_EQ(s.train.max_steps, 0);
  EXPECT_EQ(s.train.lr, 0.05);
  EXPECT_EQ(s.train.optimizer, "sgd");
  EXPECT_EQ(s.train.optimizer_options, (std::map<std::string, std::string>{{"momentum", "0.9"}}));
  EXPECT_EQ(s.train.weight_decay, 0.0);
  EXPECT_EQ(s.train.seed, 1u);
  EXPECT_EQ(s.train.eval_every, 100);
  EXPECT_EQ(s.cluster.world_size, 4);
  EXPECT_EQ(s.cluster.topology, "star");
  EXPECT_DOUBLE_EQ(s.cluster.link_bandwidth, 1.25e9);
  EXPECT_DOUBLE_EQ(s.cluster.link_latency, 2e-6);
  EXPECT_FALSE(s.cluster.compute_s.has_value());
  EXPECT_FALSE(s.cluster.optimizer_s.has_value());
  EXPECT_EQ(s.cluster.simulate_world, (std::vector<int>{2, 4, 8, 16, 32, 64, 128, 256, 512, 1024}));
  ASSERT_EQ(s.strategies.size(), 1u);
  EXPECT_EQ(s.strategies[0].name, "baseline");
  EXPECT_EQ(s.strategies[0].policy, "flat");
  EXPECT_EQ(s.strategies[0].schedule, "native");
  EXPECT_NE(s.text.find("[cluster]"), std::string::npos);  // the source travels with each run
}

TEST(Scenario, CiSmallTomlIsSmall) {
  const Scenario s = load_scenario(std::string(DDPLAB_SOURCE_DIR) + "/scenarios/ci-small.toml");
  EXPECT_EQ(s.name, "ci-small");
  EXPECT_EQ(s.data.dataset, "synthetic");
  EXPECT_EQ(s.model.layers, (std::vector<int>{784, 64, 10}));
  EXPECT_EQ(s.model.parameter_count(), 50890u);
  EXPECT_EQ(s.cluster.world_size, 2);
  EXPECT_EQ(s.train.max_steps, 20);
  EXPECT_EQ(s.train.batch_size, 64);
  EXPECT_EQ(s.cluster.simulate_world, (std::vector<int>{2, 4, 8}));
  ASSERT_EQ(s.strategies.size(), 1u);
  EXPECT_EQ(s.strategies[0].name, "baseline");
}

// ---- defaults and accepted forms ----

TEST(Scenario, AnEmptyFileOrOneWithoutAStrategyIsRefused) {
  EXPECT_EQ(parse_error("").substr(0, 80),
            "fake/inline.toml:1:1: the scenario is empty: name at least one strategy to run, ");
  const std::string none = parse_error("[train]\nlr = 0.1\n");
  EXPECT_NE(none.find("fake/inline.toml:1:1: the scenario has no [[strategy]]: name at least one strategy to run"),
            std::string::npos)
      << none;
  EXPECT_NE(none.find("[model], [data], [train] and [cluster] have defaults"), std::string::npos) << none;
  // A field's own error still comes first: it says more than the missing section.
  EXPECT_NE(parse_error("[train]\nlr = -1\n").find("fake/inline.toml:2:6: train.lr"), std::string::npos)
      << parse_error("[train]\nlr = -1\n");
}

TEST(Scenario, OnlyAStrategyGivesDefaults) {
  const Scenario s = parse_scenario("[[strategy]]\nname = \"baseline\"\n", "dir/only.toml");
  const Scenario d{};
  EXPECT_EQ(s.path, "dir/only.toml");
  EXPECT_EQ(s.name, "only");
  EXPECT_EQ(s.model.layers, d.model.layers);
  EXPECT_EQ(s.data.dataset, d.data.dataset);
  EXPECT_EQ(s.train.batch_size, d.train.batch_size);
  EXPECT_EQ(s.train.lr, d.train.lr);
  EXPECT_EQ(s.cluster.world_size, d.cluster.world_size);
  EXPECT_EQ(s.cluster.link_bandwidth, d.cluster.link_bandwidth);
  EXPECT_EQ(s.cluster.simulate_world, d.cluster.simulate_world);
  ASSERT_EQ(s.strategies.size(), 1u);
  EXPECT_EQ(s.strategies[0].name, "baseline");
  EXPECT_EQ(s.strategies[0].policy, "flat");
  EXPECT_EQ(s.strategies[0].schedule, "native");
}

// Every scenario the project ships loads (they document the fields; a renamed field must not break them).
TEST(Scenario, EveryShippedScenarioLoads) {
  int n = 0;
  for (const auto& e : std::filesystem::recursive_directory_iterator(DDPLAB_SOURCE_DIR "/scenarios")) {
    if (e.path().extension() != ".toml") continue;
    EXPECT_NO_THROW((void)load_scenario(e.path().string())) << e.path();
    ++n;
  }
  EXPECT_GE(n, 10) << "scenarios found";
}

TEST(Scenario, ReadsEachDataPartitionWithItsParameter) {
  const Scenario d = parse("[data]\npartition = \"dirichlet\"\nalpha = 0.1\nuneven = \"drop_last\"\n", "p.toml");
  EXPECT_EQ(d.data.partition, "dirichlet");
  EXPECT_EQ(d.data.alpha, 0.1);
  EXPECT_EQ(d.data.uneven, "drop_last");
  EXPECT_EQ(parse("[data]\npartition = \"shards\"\nclasses_per_rank = 3\n", "p.toml").data.classes_per_rank, 3);
  EXPECT_EQ(parse("[data]\npartition = \"quantity\"\nskew = 0.3\n", "p.toml").data.skew, 0.3);
}

TEST(Scenario, AcceptsNameUnitsNumbersAndSeveralStrategies) {
  const Scenario s = parse(R"(
name = "sweep"
[train]
backend = "cuda"   # validated later by the runtime
lr = 1             # an integer is a number too
optimizer_options = { momentum = 0 }
seed = 42
[cluster]
link_bandwidth = 1e9      # plain number: bytes/s
link_latency = 0.000005   # plain number: seconds
compute_s = "13ms"
optimizer_s = "250 us"
[[strategy]]
name = "native"
[[strategy]]
name = "ring"
schedule = "ring"
)",
                           "x/y.toml");
  EXPECT_EQ(s.name, "sweep");
  EXPECT_EQ(s.train.backend, Backend::Cuda);
  EXPECT_EQ(s.train.lr, 1.0);
  EXPECT_EQ(s.train.optimizer_options.at("momentum"), "0");
  EXPECT_EQ(s.train.seed, 42u);
  EXPECT_EQ(s.cluster.link_bandwidth, 1e9);
  EXPECT_EQ(s.cluster.link_latency, 5e-6);
  ASSERT_TRUE(s.cluster.compute_s.has_value());
  EXPECT_EQ(*s.cluster.compute_s, 0.013);
  ASSERT_TRUE(s.cluster.optimizer_s.has_value());
  EXPECT_DOUBLE_EQ(*s.cluster.optimizer_s, 250e-6);
  ASSERT_EQ(s.strategies.size(), 2u);
  EXPECT_EQ(s.strategies[0].name, "native");
  EXPECT_EQ(s.strategies[0].schedule, "native");
  EXPECT_EQ(s.strategies[1].name, "ring");
  EXPECT_EQ(s.strategies[1].schedule, "ring");
}

TEST(Scenario, OptimizerScheduleAndGpuBackends) {
  const Scenario s = parse(
      "[train]\nbackend = \"cuda+mpi\"\noptimizer = \"adam\"\noptimizer_options = { beta1 = 0.8, eps = 1e-6 }\n"
      "lr_schedule = \"step\"\nlr_schedule_options = { gamma = 0.5 }\nwarmup_steps = 10\nlr_scale = \"sqrt\"\n"
      "lr_base_batch = 256\nclip_grad_norm = 1.5\ncomm_timeout_s = 30\ntf32 = true\nconsistency_every = 50\n",
      "<string>");
  EXPECT_EQ(s.train.backend, Backend::CudaMpi);
  EXPECT_EQ(s.train.optimizer, "adam");
  // Options stay text, as written, until the registry types them (validate_train).
  EXPECT_EQ(s.train.optimizer_options, (std::map<std::string, std::string>{{"beta1", "0.8"}, {"eps", "1e-06"}}));
  EXPECT_EQ(s.train.where.at("optimizer_options.beta1"), "<string>:4:31");
  EXPECT_EQ(s.train.lr_schedule, "step");
  EXPECT_EQ(s.train.lr_schedule_options.at("gamma"), "0.5");
  EXPECT_EQ(s.train.warmup_steps, 10);
  EXPECT_EQ(s.train.lr_scale, "sqrt");
  EXPECT_EQ(s.train.lr_base_batch, 256);
  EXPECT_EQ(s.train.clip_grad_norm, 1.5);
  EXPECT_EQ(s.train.comm_timeout_s, 30);
  EXPECT_EQ(s.train.consistency_every, 50);
  EXPECT_TRUE(s.train.tf32);
  const auto j = s.to_json().at("train");
  EXPECT_EQ(j.at("optimizer"), "adam");
  EXPECT_EQ(j.at("optimizer_options").at("beta1"), "0.8");
  EXPECT_EQ(j.at("lr_scale"), "sqrt");
  EXPECT_EQ(j.at("clip_grad_norm").get<double>(), 1.5);
  const Scenario d = parse("", "<string>");  // defaults: SGD at a constant lr, no clipping
  EXPECT_EQ(d.train.optimizer, "sgd");
  EXPECT_TRUE(d.train.optimizer_options.empty());
  EXPECT_EQ(d.train.lr_schedule, "constant");
  EXPECT_EQ(d.train.warmup_steps, 0);
  EXPECT_EQ(d.train.lr_scale, "none");
  EXPECT_EQ(d.train.lr_base_batch, 0);
  EXPECT_EQ(d.train.clip_grad_norm, 0);
  EXPECT_EQ(d.train.comm_timeout_s, 300);
  EXPECT_EQ(d.train.consistency_every, 0);
  EXPECT_FALSE(d.train.tf32);
}

TEST(Scenario, ParameterCount) {
  ModelConfig m;
  EXPECT_EQ(m.parameter_count(), 2913290u);  // 784-1024-1024-1024-10: 803,840 + 2 x 1,049,600 + 10,250
  m.layers = {784, 10};
  EXPECT_EQ(m.parameter_count(), 7850u);
  m.layers = {2, 3, 4};
  EXPECT_EQ(m.parameter_count(), 2u * 3 + 3 + 3 * 4 + 4);
}

TEST(Scenario, ToJsonHasTheResolvedConfig) {
  const Scenario s = parse(R"(
[cluster]
compute_s = "13ms"
[[strategy]]
name = "a"
[[strategy]]
name = "b"
schedule = "ring"
)",
                           "j.toml");
  // Through text and back, as the results store keeps it.
  const nlohmann::json j = nlohmann::json::parse(s.to_json().dump());
  EXPECT_EQ(j.at("name"), "j");
  EXPECT_EQ(j.at("model").at("type"), "mlp");
  EXPECT_EQ(j.at("model").at("layers").get<std::vector<int>>(), s.model.layers);
  EXPECT_EQ(j.at("model").at("parameter_count").get<std::size_t>(), 2913290u);
  EXPECT_EQ(j.at("data").at("dataset"), "fashion-mnist");
  EXPECT_EQ(j.at("data").at("path"), s.data.path);
  EXPECT_EQ(j.at("data").at("synthetic_train"), 4096);
  EXPECT_EQ(j.at("data").at("partition"), "iid");
  EXPECT_EQ(j.at("data").at("uneven"), "pad");
  EXPECT_EQ(j.at("train").at("backend"), "cpu");
  EXPECT_EQ(j.at("train").at("batch_size"), 64);
  EXPECT_EQ(j.at("train").at("epochs"), 1);
  EXPECT_EQ(j.at("train").at("max_steps"), 0);
  EXPECT_EQ(j.at("train").at("lr").get<double>(), 0.05);
  EXPECT_EQ(j.at("train").at("optimizer"), "sgd");
  EXPECT_EQ(j.at("train").at("weight_decay").get<double>(), 0.0);
  EXPECT_EQ(j.at("train").at("seed").get<std::uint64_t>(), 1u);
  EXPECT_EQ(j.at("train").at("eval_every"), 0);
  EXPECT_EQ(j.at("cluster").at("world_size"), 4);
  EXPECT_EQ(j.at("cluster").at("topology"), "star");
  EXPECT_EQ(j.at("cluster").at("link_bandwidth").get<double>(), 1.25e9);
  EXPECT_EQ(j.at("cluster").at("link_latency").get<double>(), 2e-6);
  EXPECT_EQ(j.at("cluster").at("compute_s").get<double>(), 0.013);
  EXPECT_TRUE(j.at("cluster").at("optimizer_s").is_null());
  EXPECT_EQ(j.at("cluster").at("simulate_world").get<std::vector<int>>(), s.cluster.simulate_world);
  ASSERT_EQ(j.at("strategies").size(), 2u);
  EXPECT_EQ(j.at("strategies")[0].at("name"), "a");
  EXPECT_EQ(j.at("strategies")[1].at("name"), "b");
  EXPECT_EQ(j.at("strategies")[1].at("policy"), "flat");
  EXPECT_EQ(j.at("strategies")[1].at("schedule"), "ring");
}

// ---- errors: each invalid file and its exact message ----

struct InvalidCase {
  const char* file;      // tests/scenario/data/invalid/<file>.toml
  const char* expected;  // the message after "<path>:"
};

// Names the case by its file in test listings instead of dumping bytes.
void PrintTo(const InvalidCase& c, std::ostream* os) { *os << c.file; }

class ScenarioInvalid : public ::testing::TestWithParam<InvalidCase> {};

TEST_P(ScenarioInvalid, ExactMessage) {
  const std::string path = kInvalid + GetParam().file + ".toml";
  EXPECT_EQ(load_error(path), path + ":" + GetParam().expected);
}

INSTANTIATE_TEST_SUITE_P(
    Files, ScenarioInvalid,
    ::testing::Values(
        InvalidCase{"syntax_error", "2:6: TOML syntax error while parsing key-value pair: expected value, saw '\\n'"},
        InvalidCase{"duplicate_key",
                    "3:6: TOML syntax error while parsing key-value pair: cannot redefine existing "
                    "floating-point 'lr'"},
        InvalidCase{"unknown_section", "1:2: unknown section [trian] (did you mean [train]?)"},
        InvalidCase{"unknown_section_far", "1:2: unknown section [optimizer]"},
        InvalidCase{"unknown_top_key", "1:1: unknown key nmae (did you mean name?)"},
        InvalidCase{"unknown_key_model", "2:1: unknown key model.layer (did you mean model.layers?)"},
        InvalidCase{"unknown_key_data", "3:1: unknown key data.synthetic_trian (did you mean data.synthetic_train?)"},
        InvalidCase{"unknown_key_train", "3:1: unknown key train.batchsize (did you mean train.batch_size?)"},
        InvalidCase{"unknown_key_cluster", "3:3: unknown key cluster.bandwidth (did you mean cluster.link_bandwidth?)"},
        InvalidCase{"unknown_key_strategy",
                    "3:1: unknown key strategy[0].shedule (did you mean strategy[0].schedule?)"},
        InvalidCase{"wrong_type_batch", "2:14: train.batch_size must be a positive integer, got \"abc\""},
        InvalidCase{"float_batch", "2:14: train.batch_size must be a positive integer, got 64.0"},
        InvalidCase{"negative_batch", "2:14: train.batch_size must be a positive integer, got -64"},
        InvalidCase{"huge_epochs", "2:10: train.epochs must be a positive integer, got 3000000000"},
        InvalidCase{"zero_lr", "2:6: train.lr must be a number greater than 0, got 0"},
        InvalidCase{
            "moved_momentum",
            "2:12: train.momentum is an option of the optimizer now: write optimizer_options = { momentum = 0.9 }"},
        InvalidCase{"optimizer_options_not_table",
                    "2:21: train.optimizer_options must be a table such as { momentum = 0.9 }, got 0.9"},
        InvalidCase{"optimizer_option_array",
                    "2:34: train.optimizer_options.momentum must be a string, number or boolean, got [0.9]"},
        InvalidCase{"negative_warmup",
                    "2:16: train.warmup_steps must be a non-negative integer (0 = no warm-up), got -5"},
        InvalidCase{"bad_lr_scale",
                    "2:12: train.lr_scale must be one of \"none\", \"linear\", \"sqrt\", got \"quadratic\""},
        InvalidCase{"negative_clip",
                    "2:18: train.clip_grad_norm must be a non-negative number (0 = no clipping), got -1"},
        InvalidCase{"negative_weight_decay", "2:16: train.weight_decay must be a non-negative number, got -0.5"},
        InvalidCase{"negative_seed", "2:8: train.seed must be a non-negative integer, got -1"},
        InvalidCase{"bad_backend", "2:11: train.backend must be one of \"cpu\", \"cuda\", \"cuda+mpi\", got \"gpu\""},
        InvalidCase{
            "bad_partition",
            "2:13: data.partition must be one of \"iid\", \"dirichlet\", \"shards\", \"quantity\", got \"label_skew\""},
        InvalidCase{"zero_alpha", "3:9: data.alpha must be greater than 0, got 0"},
        InvalidCase{"alpha_with_iid",
                    "2:9: data.alpha applies to data.partition = \"dirichlet\" only (data.partition is \"iid\")"},
        InvalidCase{"classes_per_rank_with_dirichlet",
                    "3:20: data.classes_per_rank applies to data.partition = \"shards\" only (data.partition is "
                    "\"dirichlet\")"},
        InvalidCase{"negative_skew", "3:8: data.skew must be 0 or more, got -0.5"},
        InvalidCase{"bad_uneven",
                    "2:10: data.uneven must be one of \"drop_last\", \"pad\", \"join\", got \"join_all\""},
        InvalidCase{"augment_synthetic",
                    "3:18: data.augment_rotate transforms images: it applies to data.dataset = \"fashion-mnist\" only "
                    "(data.dataset is \"synthetic\")"},
        InvalidCase{"augment_scale_one", "2:17: data.augment_scale must be a number in [0, 1), got 1"},
        InvalidCase{
            "balance_with_iid",
            "2:11: data.balance needs a fixed split (data.partition \"dirichlet\", \"shards\" or \"quantity\"): "
            "under iid every rank's classes are already even"},
        InvalidCase{"bad_balance",
                    "3:11: data.balance must be one of \"none\", \"class_weighted\", \"resample\", got \"oversample\""},
        InvalidCase{"join_with_iid",
                    "2:10: data.uneven = \"join\" needs a fixed split (data.partition \"dirichlet\", \"shards\" or "
                    "\"quantity\"): under iid every rank holds the same amount"},
        InvalidCase{"join_divisor_without_join",
                    "4:26: data.join_divide_by_initial applies to data.uneven = \"join\" only, got true"},
        InvalidCase{"tf32_on_cpu", "2:8: train.tf32 applies to backend \"cuda\" or \"cuda+mpi\" only, got true"},
        InvalidCase{"tf32_not_bool", "3:8: train.tf32 must be true or false, got 1"},
        InvalidCase{"zero_comm_timeout",
                    "2:18: train.comm_timeout_s must be a number of seconds greater than 0, got 0"},
        InvalidCase{"negative_consistency_every",
                    "2:21: train.consistency_every must be a non-negative integer (0 = only at the end), got -4"},
        InvalidCase{"negative_checkpoint_every",
                    "2:20: train.checkpoint_every must be a non-negative integer (0 = no checkpoints), got -10"},
        InvalidCase{"zero_checkpoint_keep", "2:19: train.checkpoint_keep must be a positive integer, got 0"},
        InvalidCase{"empty_checkpoint_dir", "2:18: train.checkpoint_dir must be a non-empty string, got \"\""},
        InvalidCase{"bad_duration_unit",
                    "2:16: cluster.link_latency must be a duration such as \"2us\", got \"2 sec\""},
        InvalidCase{"bad_bandwidth_unit",
                    "2:18: cluster.link_bandwidth must be a bandwidth such as \"10Gbit/s\", got \"10Gb\""},
        InvalidCase{"zero_bandwidth", "2:18: cluster.link_bandwidth must be greater than 0, got \"0Gbit/s\""},
        InvalidCase{"negative_latency", "2:16: cluster.link_latency must be a duration such as \"2us\", got -1"},
        InvalidCase{"bool_compute", "2:13: cluster.compute_s must be a duration such as \"2us\", got true"},
        InvalidCase{"layers_short",
                    "2:10: model.layers must be an array of at least 2 positive integers (input, hidden..., "
                    "classes), got [784]"},
        InvalidCase{"layers_zero", "2:16: model.layers[1] must be a positive integer, got 0"},
        InvalidCase{"layers_not_array",
                    "2:10: model.layers must be an array of at least 2 positive integers (input, hidden..., "
                    "classes), got \"784-10\""},
        InvalidCase{"bad_model_type",
                    "2:8: model.type must be one of \"mlp\", \"cnn\", \"gpt\", \"table\", got \"transformer\""},
        InvalidCase{"cnn_even_kernel", "3:10: model.kernel must be odd (the convolutions keep the image size), got 4"},
        InvalidCase{"cnn_odd_pool",
                    "3:8: model.conv: block 3 of 3 would max-pool a 7 x 7 image (odd): use fewer conv "
                    "blocks or an image size divisible by 2^3"},
        InvalidCase{"world_size_zero", "2:14: cluster.world_size must be a positive integer, got 0"},
        InvalidCase{"simulate_world_zero", "2:22: cluster.simulate_world[1] must be a positive integer, got 0"},
        InvalidCase{"simulate_world_empty",
                    "2:18: cluster.simulate_world must be a non-empty array of positive integers, got []"},
        InvalidCase{"bad_topology",
                    "2:12: cluster.topology must be one of \"star\", \"full\", \"fat_tree\", "
                    "\"dragonfly\", \"torus\", got \"fat-tree\""},
        InvalidCase{"bad_dataset",
                    "2:11: data.dataset must be one of \"fashion-mnist\", \"synthetic\", \"fortunes\", got \"mnist\""},
        InvalidCase{"empty_path", "2:8: data.path must be a non-empty string, got \"\""},
        InvalidCase{"duplicate_strategy",
                    "8:8: strategy[2].name must be unique (strategy[0] has the same name), got \"a\""},
        InvalidCase{"empty_strategy_name", "2:8: strategy[0].name must be a non-empty string, got \"\""},
        // Unknown schedule / policy / codec names are checked by strategies/ (test_strategy_config.cpp).
        InvalidCase{"strategy_table", "1:1: strategy must be a non-empty array of tables ([[strategy]]), got a table"},
        InvalidCase{"section_not_table", "1:9: train must be a table ([train]), got 5"},
        InvalidCase{"bad_name", "1:8: name must be a non-empty string, got 42"}),
    [](const ::testing::TestParamInfo<InvalidCase>& info) { return std::string(info.param.file); });

TEST(ScenarioErrors, MissingFile) {
  const std::string path = kInvalid + "does_not_exist.toml";
  EXPECT_EQ(load_error(path), path + ": cannot open scenario file (No such file or directory)");
}

TEST(ScenarioErrors, DirectoryIsNotAFile) {
  const std::string path = kInvalid;
  EXPECT_EQ(load_error(path), path + ": cannot open scenario file (Is a directory)");
}

TEST(ScenarioErrors, InlineTextUsesTheGivenPath) {
  EXPECT_EQ(parse_error("[train]\nlr = 0.1\n[train]\n"),
            "fake/inline.toml:3:1: TOML syntax error while parsing table header: cannot redefine existing table "
            "'train'");
  EXPECT_EQ(parse_error("\n\n[[strategies]]\nname = \"a\"\n"),
            "fake/inline.toml:3:3: unknown section [[strategies]] (did you mean [[strategy]]?)");
  EXPECT_EQ(parse_error("modle = 3\n"), "fake/inline.toml:1:1: unknown key modle (did you mean model?)");
  EXPECT_EQ(parse_error("[train]\nlr = nan\n"),
            "fake/inline.toml:2:6: train.lr must be a number greater than 0, got nan");
  EXPECT_EQ(parse_error("[train]\nwarmup_steps = \"10\"\n"),
            "fake/inline.toml:2:16: train.warmup_steps must be a non-negative integer (0 = no warm-up), got \"10\"");
  EXPECT_EQ(parse_error("[cluster]\ncompute_s = \"0ms\"\n"),
            "fake/inline.toml:2:13: cluster.compute_s must be greater than 0, got \"0ms\"");
  EXPECT_EQ(parse_error("strategy = [5]\n"), "fake/inline.toml:1:13: strategy[0] must be a table, got 5");
  EXPECT_EQ(parse_error("[[strategy]]\n[[strategy]]\n"),
            "fake/inline.toml:2:1: strategy[1].name must be unique (strategy[0] has the same name), got \"baseline\"");
}

// ---- model tables and compute from FLOPs ----
// (includes here keep this section's edit in one place)
#include <stdlib.h>

#include <filesystem>
#include <fstream>
#include <string_view>

namespace {

std::string table_model(const std::string& table) { return "[model]\ntype = \"table\"\ntable = \"" + table + "\"\n"; }

// A temporary directory holding a scenario and a table file next to it.
struct TableDir {
  std::filesystem::path dir;
  TableDir() {
    std::string tmpl = (std::filesystem::temp_directory_path() / "ddplab-scenario-XXXXXX").string();
    if (!mkdtemp(tmpl.data())) throw std::runtime_error("mkdtemp failed");
    dir = tmpl;
    std::filesystem::create_directories(dir / "models");
    std::ofstream(dir / "models" / "mine.csv") << "name,params,forward_flops,backward_flops,activation_bytes\n";
  }
  ~TableDir() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  std::string scenario(const std::string& text) const {
    const std::string path = (dir / "s.toml").string();
    std::ofstream(path) << text;
    return path;
  }
};

}  // namespace

TEST(ScenarioModelTable, Resnet50ScaleToml) {
  const Scenario s = load_scenario(std::string(DDPLAB_SOURCE_DIR) + "/scenarios/resnet50-scale.toml");
  EXPECT_EQ(s.model.type, ModelType::Table);
  EXPECT_EQ(s.model.table, "resnet50");  // built-in names stay names
  EXPECT_EQ(s.cluster.device_flops, 312e12);
  EXPECT_DOUBLE_EQ(s.cluster.compute_efficiency, 0.25);
  EXPECT_EQ(s.cluster.device_mem_bw, 1555e9);
  EXPECT_FALSE(s.cluster.compute_s.has_value());
  EXPECT_EQ(s.cluster.simulate_world.back(), 256);
  ASSERT_EQ(s.strategies.size(), 2u);
  EXPECT_EQ(s.strategies[0].policy, "overlap");
  EXPECT_EQ(s.strategies[0].schedule, "ring");
  EXPECT_EQ(s.strategies[0].bucket_cap, 25u << 20);
  const nlohmann::json j = s.to_json();
  EXPECT_EQ(j.at("model"), (nlohmann::json{{"type", "table"}, {"table", "resnet50"}}));
  EXPECT_EQ(j.at("cluster").at("device_flops").get<double>(), 312e12);
  EXPECT_EQ(j.at("cluster").at("compute_efficiency").get<double>(), 0.25);
  EXPECT_EQ(j.at("cluster").at("device_mem_bw").get<double>(), 1555e9);
}

TEST(ScenarioModelTable, DefaultsAndBuiltins) {
  const Scenario d = parse("", "d.toml");
  EXPECT_EQ(d.model.type, ModelType::Mlp);
  EXPECT_TRUE(d.model.table.empty());
  EXPECT_FALSE(d.cluster.device_flops.has_value());
  EXPECT_DOUBLE_EQ(d.cluster.compute_efficiency, 0.5);
  EXPECT_FALSE(d.cluster.device_mem_bw.has_value());
  EXPECT_TRUE(d.to_json().at("cluster").at("device_flops").is_null());
  for (std::string_view name : kBuiltinModelTables) {
    const Scenario s = parse(table_model(std::string(name)), "x/y.toml");
    EXPECT_EQ(s.model.table, name);
    EXPECT_EQ(s.model.where.at("table"), "x/y.toml:3:9");
  }
}

TEST(ScenarioModelTable, PathsResolveAgainstTheScenarioDirectory) {
  const TableDir t;
  const std::string expected = (t.dir / "models" / "mine.csv").string();
  EXPECT_EQ(load_scenario(t.scenario(with_strategy(table_model("models/mine.csv")))).model.table, expected);
  EXPECT_EQ(load_scenario(t.scenario(with_strategy(table_model("./models/../models/mine.csv")))).model.table, expected);
  EXPECT_EQ(load_scenario(t.scenario(with_strategy(table_model(expected)))).model.table, expected);  // absolute: as is
  const std::string path = t.scenario(with_strategy(table_model("mine.csv")));
  EXPECT_EQ(load_error(path), path +
                                  ":3:9: model.table must be a built-in table (\"resnet50\", \"bert_large\", "
                                  "\"gpt2_xl\", \"llama2_7b\", \"gpt3_175b\") or the path of a table file (no file \"" +
                                  (t.dir / "mine.csv").string() + "\"), got \"mine.csv\"");
}

TEST(ScenarioModelTable, Errors) {
  EXPECT_EQ(parse_error("[model]\ntype = \"table\"\n"),
            "fake/inline.toml:2:8: model.table is required when model.type is \"table\": a built-in table "
            "(\"resnet50\", \"bert_large\", \"gpt2_xl\", \"llama2_7b\", \"gpt3_175b\") or the path of a table file");
  EXPECT_EQ(parse_error("[model]\ntable = \"resnet50\"\n"),
            "fake/inline.toml:2:9: model.table applies to model.type \"table\" only (set type = \"table\"), got "
            "\"resnet50\"");
  EXPECT_EQ(parse_error(table_model("resnet50") + "layers = [1, 2]\n"),
            "fake/inline.toml:4:10: model.layers applies to model.type \"mlp\" only (a table model's layers come from "
            "its table), got [1, 2]");
  EXPECT_EQ(parse_error("[model]\nconv = [8]\n"),
            "fake/inline.toml:2:8: model.conv applies to model.type \"cnn\" only (set type = \"cnn\"), got [8]");
  EXPECT_EQ(parse_error("[model]\ntype = \"cnn\"\nlayers = [784, 10]\n"),
            "fake/inline.toml:3:10: model.layers applies to model.type \"mlp\" only (a CNN's layers come from conv and "
            "hidden), got [784, 10]");
  EXPECT_EQ(parse_error("[model]\ntype = \"cnn\"\nbn = \"batch\"\n"),
            "fake/inline.toml:3:6: model.bn must be one of \"none\", \"local\", \"sync\", got \"batch\"");
  EXPECT_EQ(
      parse_error("[model]\ntype = \"cnn\"\nimage = [28, 28]\n"),
      "fake/inline.toml:3:9: model.image must be [height, width, channels], three positive integers, got [28, 28]");
  EXPECT_EQ(parse_error(table_model("")), "fake/inline.toml:3:9: model.table must be a non-empty string, got \"\"");
  EXPECT_EQ(parse_error("[model]\ntabel = 1\n"),
            "fake/inline.toml:2:1: unknown key model.tabel (did you mean model.table?)");
  EXPECT_EQ(parse_error("[cluster]\ndevice_flops = 0\n"),
            "fake/inline.toml:2:16: cluster.device_flops must be a number greater than 0 (FLOP/s), got 0");
  EXPECT_EQ(parse_error("[cluster]\ndevice_flops = \"312T\"\n"),
            "fake/inline.toml:2:16: cluster.device_flops must be a number greater than 0 (FLOP/s), got \"312T\"");
  EXPECT_EQ(parse_error("[cluster]\ncompute_efficiency = 1.5\n"),
            "fake/inline.toml:2:22: cluster.compute_efficiency must be a number in (0, 1], got 1.5");
  EXPECT_EQ(parse_error("[cluster]\ndevice_mem_bw = \"2TB\"\n"),
            "fake/inline.toml:2:17: cluster.device_mem_bw must be a bandwidth such as \"10Gbit/s\", got \"2TB\"");
}

// ---- cluster topologies and presets ----

TEST(ScenarioCluster, PresetFillsFieldsAndExplicitFieldsOverride) {
  const Scenario s = parse("[cluster]\npreset = \"dgx-h100\"\nlink_bandwidth = \"100Gbit/s\"\n", "x.toml");
  EXPECT_EQ(s.cluster.preset, "dgx-h100");
  EXPECT_EQ(s.cluster.devices_per_node, 8);
  EXPECT_EQ(s.cluster.topology, "star");  // rail-optimised and non-blocking (cluster_presets.cpp)
  EXPECT_EQ(s.cluster.intra, "nvswitch");
  EXPECT_EQ(s.cluster.network_model, "CM02");
  EXPECT_EQ(s.cluster.device_arch, "hopper");
  EXPECT_TRUE(s.cluster.nvls);
  EXPECT_DOUBLE_EQ(s.cluster.intra_efficiency, 0.82);
  EXPECT_DOUBLE_EQ(s.cluster.intra_bandwidth, 450e9);
  EXPECT_DOUBLE_EQ(*s.cluster.device_flops, 989e12);
  EXPECT_DOUBLE_EQ(s.cluster.link_bandwidth, 100e9 / 8);  // explicit wins over the preset's 400 Gbit/s
  const Scenario e = parse("[cluster]\npreset = \"eth-25g\"\n", "x.toml");
  EXPECT_EQ(e.cluster.devices_per_node, 4);
  EXPECT_EQ(e.cluster.intra, "pcie");
  EXPECT_EQ(e.cluster.nics, "per_node");
  EXPECT_DOUBLE_EQ(e.cluster.link_bandwidth, 25e9 / 8);
  EXPECT_EQ(parse("[cluster]\npreset = \"cpu-testbed\"\n", "x.toml").cluster.link_bandwidth, 1e9 / 8);
}

TEST(ScenarioCluster, TopologyFieldsStragglersAndNodes) {
  const Scenario s = parse(
      "[cluster]\ntopology = \"fat_tree\"\nfat_tree = \"2;4,2;1,2;1,1\"\ndevices_per_node = 4\nintra = \"pcie\"\n"
      "nics = \"per_node\"\nintra_bandwidth = \"32GB/s\"\ndevice_memory = \"80GB\"\n"
      "stragglers = [{rank = 3, factor = 2.0}, {node = 1, factor = 1.5}]\n"
      "[[cluster.nodes]]\nnode = 2\nlink_bandwidth = \"5Gbit/s\"\n",
      "x.toml");
  EXPECT_EQ(s.cluster.fat_tree, "2;4,2;1,2;1,1");
  EXPECT_EQ(s.cluster.devices_per_node, 4);
  EXPECT_DOUBLE_EQ(*s.cluster.device_memory, 80e9);
  ASSERT_EQ(s.cluster.stragglers.size(), 2u);
  EXPECT_EQ(s.cluster.stragglers[0].rank, 3);
  EXPECT_EQ(s.cluster.stragglers[1].node, 1);
  EXPECT_DOUBLE_EQ(s.cluster.stragglers[1].factor, 1.5);
  ASSERT_EQ(s.cluster.nodes.size(), 1u);
  EXPECT_DOUBLE_EQ(*s.cluster.nodes[0].link_bandwidth, 5e9 / 8);
  EXPECT_EQ(s.to_json()["cluster"]["stragglers"][0]["rank"], 3);
  EXPECT_EQ(parse_topology_spec("4,4,4"), (std::vector<std::vector<unsigned>>{{4, 4, 4}}));
}

TEST(ScenarioCluster, FullMeshHasNoShape) {
  const Scenario s = parse("[cluster]\ntopology = \"full\"\nfabric_bandwidth = \"100Gbit/s\"\n", "x.toml");
  EXPECT_EQ(s.cluster.topology, "full");
  EXPECT_DOUBLE_EQ(*s.cluster.fabric_bandwidth, 100e9 / 8);
  EXPECT_EQ(s.to_json()["cluster"]["topology"], "full");
  EXPECT_NE(describe_cluster(s.cluster).find("full (a link per pair of nodes)"), std::string::npos);
  // A shape string is refused with full (and with any other topology than its own), naming where it is.
  EXPECT_EQ(parse_error("[cluster]\ntopology = \"full\"\ntorus = \"4,4\"\n"),
            "fake/inline.toml:3:9: cluster.torus applies to topology = \"torus\" only (topology is \"full\", which has "
            "no shape: every pair of nodes gets its own link), got \"4,4\"");
  EXPECT_EQ(parse_error("[cluster]\npreset = \"dgx-h100\"\ndragonfly = \"2,1;1,1;4,1;2\"\n"),
            "fake/inline.toml:3:13: cluster.dragonfly applies to topology = \"dragonfly\" only (topology is "
            "\"star\"), got \"2,1;1,1;4,1;2\"");
}

TEST(ScenarioCluster, ErrorsNameFileLineColumn) {
  EXPECT_EQ(parse_error("[cluster]\ntopology = \"ring\"\n"),
            "fake/inline.toml:2:12: cluster.topology must be one of \"star\", \"full\", \"fat_tree\", \"dragonfly\", "
            "\"torus\", got \"ring\"");
  EXPECT_EQ(parse_error("[cluster]\npreset = \"dgx-h200\"\n"),
            "fake/inline.toml:2:10: cluster.preset must be one of \"dgx-h100\", \"dgx-a100\", \"eth-25g\", "
            "\"cpu-testbed\", got \"dgx-h200\"");
  EXPECT_EQ(parse_error("[cluster]\nfat_tree = \"2;8;1,2;1,1\"\n"),
            "fake/inline.toml:2:12: cluster.fat_tree must be SimGrid's \"levels;down,...;up,...;count,...\" "
            "(e.g. \"2;8,4;1,2;1,1\"), got \"2;8;1,2;1,1\"");
  EXPECT_EQ(parse_error("[cluster]\ntorus = \"4,x\"\n"),
            "fake/inline.toml:2:9: cluster.torus must be SimGrid's \"X,Y,...\" dimensions (e.g. \"4,4,4\") "
            "(expected a positive integer at character 3), got \"4,x\"");
  EXPECT_EQ(
      parse_error("[cluster]\ndragonfly = \"2,1;1,1;4,1\"\n"),
      "fake/inline.toml:2:13: cluster.dragonfly must be SimGrid's \"groups,links;chassis,links;routers,links;nodes\" "
      "(e.g. \"4,2;2,1;4,1;2\"), got \"2,1;1,1;4,1\"");
  EXPECT_EQ(parse_error("[cluster]\ndevices_per_node = 0\n"),
            "fake/inline.toml:2:20: cluster.devices_per_node must be a positive integer, got 0");
  EXPECT_EQ(parse_error("[cluster]\nnics = \"shared\"\n"),
            "fake/inline.toml:2:8: cluster.nics must be one of \"per_device\", \"per_node\", got \"shared\"");
  EXPECT_EQ(parse_error("[cluster]\nstragglers = [{rank = 1}]\n"),
            "fake/inline.toml:2:15: cluster.stragglers[0].factor is required (compute takes factor times longer)");
  EXPECT_EQ(parse_error("[cluster]\nstragglers = [{rank = 1, factor = 0}]\n"),
            "fake/inline.toml:2:35: cluster.stragglers[0].factor must be a number greater than 0, got 0");
  EXPECT_EQ(parse_error("[cluster]\nstragglers = [{factor = 2}]\n"),
            "fake/inline.toml:2:15: cluster.stragglers[0].rank or cluster.stragglers[0].node is required (exactly one "
            "of them)");
  EXPECT_EQ(parse_error("[cluster]\n[[cluster.nodes]]\nnode = 1\nlink_bandwith = 3\n"),
            "fake/inline.toml:4:1: unknown key cluster.nodes[0].link_bandwith (did you mean "
            "cluster.nodes[0].link_bandwidth?)");
}

// ---- the GPT ----

TEST(ScenarioGpt, GptTinyTomlAndItsJson) {
  const Scenario s = load_scenario(std::string(DDPLAB_SOURCE_DIR) + "/scenarios/gpt-tiny.toml");
  EXPECT_EQ(s.model.type, ModelType::Gpt);
  EXPECT_EQ(s.model.gpt.blocks, 4);
  EXPECT_EQ(s.model.gpt.kv(), 4);
  EXPECT_EQ(s.model.gpt.mlp_units(), 512);
  EXPECT_EQ(s.model.input_features(), 128);
  EXPECT_EQ(s.model.output_classes(), 256);
  EXPECT_EQ(s.model.labels_per_sample(), 128);
  EXPECT_EQ(s.data.path, kFortunesPath);
  // Stored resolved (kv_heads and ffn as numbers), and read back to the same model.
  EXPECT_EQ(s.model.to_json().at("kv_heads"), 4);
  EXPECT_EQ(ModelConfig::from_json(s.model.to_json()).to_json(), s.model.to_json());
  GptConfig llama;
  llama.activation = GptActivation::SwiGlu;
  EXPECT_EQ(llama.mlp_units(), 344);  // 8 x 128 / 3 = 341.3, up to a multiple of 8
}

TEST(ScenarioGpt, ImpossibleShapesAndPairingsAreRefused) {
  const std::string gpt = "[model]\ntype = \"gpt\"\n";
  const std::string text = "[data]\ndataset = \"fortunes\"\n";
  EXPECT_EQ(parse_error(gpt + "heads = 3\n" + text),
            "fake/inline.toml:3:9: model.heads: 3 heads do not divide model.dim = 128");
  EXPECT_EQ(parse_error(gpt + "kv_heads = 3\n" + text),
            "fake/inline.toml:3:12: model.kv_heads: 3 key/value heads do not divide the 4 query heads (grouped-query "
            "attention shares each among an equal number)");
  EXPECT_EQ(parse_error(gpt + "dim = 12\nheads = 4\nposition = \"rope\"\n" + text),
            "fake/inline.toml:5:12: model.position = \"rope\" rotates pairs of a head's features: the head width "
            "model.dim / model.heads = 3 must be even");
  EXPECT_EQ(parse_error(gpt + "norm = \"batch\"\n" + text),
            "fake/inline.toml:3:8: model.norm must be one of \"layernorm\", \"rmsnorm\", got \"batch\"");
  EXPECT_EQ(parse_error(gpt),
            "fake/inline.toml:2:8: model.type = \"gpt\" trains on text: set data.dataset = \"fortunes\" (data.dataset "
            "is \"fashion-mnist\")");
  EXPECT_EQ(parse_error(text),
            "fake/inline.toml:2:11: data.dataset \"fortunes\" is byte-level text for model.type = "
            "\"gpt\" (model.type is \"mlp\"), got \"fortunes\"");
  EXPECT_EQ(parse_error(gpt + "vocab = 512\n" + text),
            "fake/inline.toml:3:9: model.vocab: data.dataset = \"fortunes\" is byte-level text, a vocabulary of 256 "
            "(not 512)");
  EXPECT_EQ(parse_error(gpt + text + "partition = \"dirichlet\"\n"),
            "fake/inline.toml:5:13: data.partition = \"dirichlet\" splits by class labels: a GPT's samples are text "
            "sequences, split with \"iid\" only");
  EXPECT_EQ(parse_error("[model]\nheads = 2\n"),
            "fake/inline.toml:2:9: model.heads applies to model.type \"gpt\" only (set type = \"gpt\"), got 2");
  EXPECT_EQ(parse_error(gpt + "layers = [1, 2]\n" + text),
            "fake/inline.toml:3:10: model.layers applies to model.type \"mlp\" only (a GPT's depth is model.blocks), "
            "got [1, 2]");
}
