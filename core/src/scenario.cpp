// Scenario loading: TOML -> validated Scenario. Every error names file:line:col, the field,
// the problem and the offending value, so a user can fix the file without reading code.
#include "ddplab/core/scenario.hpp"

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <initializer_list>
#include <optional>
#include <sstream>
#include <string_view>
#include <vector>

#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <toml++/toml.h>

#include "ddplab/core/units.hpp"
#include "scenario_reader.hpp"

namespace ddplab {

double ClusterConfig::compute_factor(int rank) const {
  double factor = 1;
  for (const auto& s : stragglers)
    if (s.rank == rank || (s.node >= 0 && s.node == rank / devices_per_node)) factor *= s.factor;
  return factor;
}

std::size_t ModelConfig::parameter_count() const {
  std::size_t n = 0;
  for (std::size_t i = 0; i + 1 < layers.size(); ++i)
    n += static_cast<std::size_t>(layers[i]) * static_cast<std::size_t>(layers[i + 1]) +
         static_cast<std::size_t>(layers[i + 1]);
  return n;
}

int GptConfig::mlp_units() const {
  if (ffn > 0) return ffn;
  return activation == GptActivation::SwiGlu ? (8 * dim / 3 + 7) / 8 * 8 : 4 * dim;
}

nlohmann::json ModelConfig::to_json() const {
  using nlohmann::json;
  if (type == ModelType::Table) return {{"type", to_string(type)}, {"table", table}};
  if (type == ModelType::Gpt)
    return {{"type", to_string(type)},
            {"blocks", gpt.blocks},
            {"dim", gpt.dim},
            {"heads", gpt.heads},
            {"kv_heads", gpt.kv()},
            {"ffn", gpt.mlp_units()},
            {"seq", gpt.seq},
            {"vocab", gpt.vocab},
            {"norm", to_string(gpt.norm)},
            {"activation", to_string(gpt.activation)},
            {"position", to_string(gpt.position)},
            {"tied", gpt.tied},
            {"bias", gpt.bias}};
  if (type == ModelType::Cnn)
    return {{"type", to_string(type)}, {"image", image},     {"conv", conv}, {"kernel", kernel},
            {"hidden", hidden},        {"classes", classes}, {"bn", bn}};
  return {{"type", to_string(type)}, {"layers", layers}, {"parameter_count", parameter_count()}};
}

ModelConfig ModelConfig::from_json(const nlohmann::json& j) {
  ModelConfig m;
  m.type = stored_choice<ModelType>(j.at("type").get<std::string>(), "stored model");
  if (m.type == ModelType::Table) {
    m.table = j.at("table").get<std::string>();
  } else if (m.type == ModelType::Gpt) {
    GptConfig& g = m.gpt;
    g.blocks = j.at("blocks").get<int>();
    g.dim = j.at("dim").get<int>();
    g.heads = j.at("heads").get<int>();
    g.kv_heads = j.at("kv_heads").get<int>();
    g.ffn = j.at("ffn").get<int>();
    g.seq = j.at("seq").get<int>();
    g.vocab = j.at("vocab").get<int>();
    g.norm = stored_choice<GptNorm>(j.at("norm").get<std::string>(), "stored model");
    g.activation = stored_choice<GptActivation>(j.at("activation").get<std::string>(), "stored model");
    g.position = stored_choice<GptPosition>(j.at("position").get<std::string>(), "stored model");
    g.tied = j.at("tied").get<bool>();
    g.bias = j.at("bias").get<bool>();
  } else if (m.type == ModelType::Cnn) {
    m.image = j.at("image").get<std::vector<int>>();
    m.conv = j.at("conv").get<std::vector<int>>();
    m.kernel = j.at("kernel").get<int>();
    m.hidden = j.at("hidden").get<std::vector<int>>();
    m.classes = j.at("classes").get<int>();
    m.bn = j.at("bn").get<std::string>();
  } else {
    m.layers = j.at("layers").get<std::vector<int>>();
  }
  return m;
}

int ModelConfig::input_features() const {
  if (type == ModelType::Gpt) return gpt.seq;
  return type == ModelType::Cnn ? image.at(0) * image.at(1) * image.at(2) : layers.front();
}

int ModelConfig::output_classes() const {
  if (type == ModelType::Gpt) return gpt.vocab;
  return type == ModelType::Cnn ? classes : layers.back();
}

namespace {

using namespace scenario_detail;

// ---- sections ----

std::string builtin_table_list() {
  std::string out;
  for (std::string_view n : kBuiltinModelTables) out += (out.empty() ? "" : ", ") + quote(n);
  return out;
}

void read_cnn(const Reader& r, const toml::table& t, ModelConfig& m) {
  const std::string p = "model.";
  r.read_int_array(t, p, "image", m.image, 3, "must be [height, width, channels], three positive integers");
  if (const toml::node* n = t.get("image"); n && m.image.size() != 3)
    r.fail(*n, "model.image", "must be [height, width, channels], three positive integers");
  r.read_int_array(t, p, "conv", m.conv, 1,
                   "must be an array of at least 1 positive integer (channels per conv block)");
  r.read_int(t, p, "kernel", m.kernel, 1, "must be a positive integer");
  if (m.kernel % 2 == 0) r.fail(*t.get("kernel"), "model.kernel", "must be odd (the convolutions keep the image size)");
  if (const toml::node* n = t.get("hidden")) {
    // An empty array is allowed: the classifier then follows the conv blocks directly.
    if (n->as_array() && n->as_array()->empty())
      m.hidden.clear();
    else
      r.read_int_array(t, p, "hidden", m.hidden, 1, "must be an array of positive integers (fully connected widths)");
  }
  r.read_int(t, p, "classes", m.classes, 2, "must be an integer of 2 or more");
  r.read_choice(t, p, "bn", m.bn, {"none", "local", "sync"});
  // Each block halves the image (2 x 2 max-pool, stride 2): it must stay even until the last one.
  int h = m.image[0], w = m.image[1];
  for (std::size_t b = 0; b < m.conv.size(); ++b) {
    if (h % 2 || w % 2) {
      const toml::node* n = t.get("conv") ? t.get("conv") : t.get("image");
      r.fail(n ? n->source() : t.source(),
             fmt::format("model.conv: block {} of {} would max-pool a {} x {} image (odd): use fewer conv blocks or an "
                         "image size divisible by 2^{}",
                         b + 1, m.conv.size(), h, w, m.conv.size()));
    }
    h /= 2, w /= 2;
  }
}

// A GPT's keys, besides the ones every type has (check_keys in read_model lists them too).
constexpr std::array kGptKeys{"blocks", "dim",        "heads",    "kv_heads", "ffn",  "seq",
                              "vocab",  "activation", "position", "norm",     "tied", "bias"};

void read_gpt(const Reader& r, const toml::table& t, GptConfig& g) {
  const std::string p = "model.";
  r.read_int(t, p, "blocks", g.blocks, 1, "must be a positive integer (transformer blocks)");
  r.read_int(t, p, "dim", g.dim, 1, "must be a positive integer (the model's width)");
  r.read_int(t, p, "heads", g.heads, 1, "must be a positive integer");
  r.read_int(t, p, "kv_heads", g.kv_heads, 0, "must be 0 (as many as heads) or a positive integer");
  r.read_int(t, p, "ffn", g.ffn, 0, "must be 0 (the activation's default) or a positive integer");
  r.read_int(t, p, "seq", g.seq, 1, "must be a positive integer (tokens per sequence)");
  r.read_int(t, p, "vocab", g.vocab, 2, "must be an integer of 2 or more");
  r.read_choice(t, p, "norm", g.norm);
  r.read_choice(t, p, "activation", g.activation);
  r.read_choice(t, p, "position", g.position);
  r.read_bool(t, p, "tied", g.tied);
  r.read_bool(t, p, "bias", g.bias);
  const auto at = [&](const char* key) { return t.get(key) ? t.get(key)->source() : t.source(); };
  if (g.dim % g.heads)
    r.fail(at("heads"), fmt::format("model.heads: {} heads do not divide model.dim = {}", g.heads, g.dim));
  if (g.heads % g.kv())
    r.fail(at("kv_heads"),
           fmt::format("model.kv_heads: {} key/value heads do not divide the {} query heads (grouped-query "
                       "attention shares each among an equal number)",
                       g.kv(), g.heads));
  if (g.position == GptPosition::Rotary && g.head_dim() % 2)
    r.fail(at("position"), fmt::format("model.position = \"rope\" rotates pairs of a head's features: the head "
                                       "width model.dim / model.heads = {} must be even",
                                       g.head_dim()));
}

void read_model(const Reader& r, const toml::table& t, ModelConfig& m, const std::string& scenario_path) {
  const std::string p = "model.";
  r.check_keys(t, p, {"type",    "layers", "table",  "image",      "conv",     "kernel",   "hidden",
                      "classes", "bn",     "blocks", "dim",        "heads",    "kv_heads", "ffn",
                      "seq",     "vocab",  "norm",   "activation", "position", "tied",     "bias"});
  r.read_choice(t, p, "type", m.type);
  r.read_int_array(t, p, "layers", m.layers, 2,
                   "must be an array of at least 2 positive integers (input, hidden..., classes)");
  r.read_string(t, p, "table", m.table);
  for (auto&& [key, value] : t) m.where[std::string(key.str())] = r.position(value.source());
  for (const char* key : {"image", "conv", "kernel", "hidden", "classes", "bn"})
    if (m.type != ModelType::Cnn && t.get(key))
      r.fail(*t.get(key), p + key, "applies to model.type \"cnn\" only (set type = \"cnn\")");
  for (const char* key : kGptKeys)
    if (m.type != ModelType::Gpt && t.get(key))
      r.fail(*t.get(key), p + key, "applies to model.type \"gpt\" only (set type = \"gpt\")");
  if (m.type == ModelType::Cnn) {
    read_cnn(r, t, m);
    if (const toml::node* layers = t.get("layers"))
      r.fail(*layers, "model.layers", "applies to model.type \"mlp\" only (a CNN's layers come from conv and hidden)");
  }
  if (m.type == ModelType::Gpt) {
    read_gpt(r, t, m.gpt);
    if (const toml::node* layers = t.get("layers"))
      r.fail(*layers, "model.layers", "applies to model.type \"mlp\" only (a GPT's depth is model.blocks)");
  }
  const toml::node* table = t.get("table");
  if (m.type != ModelType::Table) {
    if (table) r.fail(*table, "model.table", "applies to model.type \"table\" only (set type = \"table\")");
    return;
  }
  if (const toml::node* layers = t.get("layers"))
    r.fail(*layers, "model.layers", "applies to model.type \"mlp\" only (a table model's layers come from its table)");
  if (!table)
    r.fail(t.get("type")->source(),
           fmt::format("model.table is required when model.type is \"table\": a built-in table "
                       "({}) or the path of a table file",
                       builtin_table_list()));
  if (std::find(kBuiltinModelTables.begin(), kBuiltinModelTables.end(), m.table) != kBuiltinModelTables.end()) return;
  // Any other value is a path, relative to the scenario file's directory.
  namespace fs = std::filesystem;
  fs::path file(m.table);
  if (file.is_relative()) file = (fs::path(scenario_path).parent_path() / file).lexically_normal();
  std::error_code ec;
  if (!fs::is_regular_file(file, ec))
    r.fail(*table, "model.table",
           fmt::format("must be a built-in table ({}) or the path of a table file (no file {})", builtin_table_list(),
                       quote(file.string())));
  m.table = file.string();
}

void read_data(const Reader& r, const toml::table& t, DataConfig& d) {
  const std::string p = "data.";
  r.check_keys(
      t, p,
      {"dataset", "path", "synthetic_train", "synthetic_test", "partition", "alpha", "classes_per_rank", "skew",
       "uneven", "join_divide_by_initial", "balance", "augment_rotate", "augment_scale", "augment_shift"});
  r.read_choice(t, p, "dataset", d.dataset, {"fashion-mnist", "synthetic", "fortunes"});
  if (d.dataset == "fortunes") d.path = kFortunesPath;
  r.read_string(t, p, "path", d.path);
  r.read_int(t, p, "synthetic_train", d.synthetic_train, 1, "must be a positive integer");
  r.read_int(t, p, "synthetic_test", d.synthetic_test, 1, "must be a positive integer");
  r.read_choice(t, p, "partition", d.partition, {"iid", "dirichlet", "shards", "quantity"});
  r.read_number(
      t, p, "alpha", d.alpha, [](double v) { return v > 0; }, "must be greater than 0");
  r.read_int(t, p, "classes_per_rank", d.classes_per_rank, 1, "must be a positive integer");
  r.read_number(
      t, p, "skew", d.skew, [](double v) { return v >= 0; }, "must be 0 or more");
  r.read_choice(t, p, "uneven", d.uneven, {"drop_last", "pad", "join"});
  if (d.uneven == "join" && d.partition == "iid")
    r.fail(t.get("uneven")->source(),
           "data.uneven = \"join\" needs a fixed split (data.partition \"dirichlet\", \"shards\" "
           "or \"quantity\"): under iid every rank holds the same amount");
  r.read_number(
      t, p, "augment_rotate", d.augment_rotate, [](double v) { return v >= 0 && v <= 180; },
      "must be an angle in degrees from 0 to 180");
  r.read_number(
      t, p, "augment_scale", d.augment_scale, [](double v) { return v >= 0 && v < 1; }, "must be a number in [0, 1)");
  r.read_number(
      t, p, "augment_shift", d.augment_shift, [](double v) { return v >= 0 && v <= 14; },
      "must be a number of pixels from 0 to 14");
  for (const char* key : {"augment_rotate", "augment_scale", "augment_shift"})
    if (const toml::node* n = t.get(key); n && d.dataset != "fashion-mnist")
      r.fail(n->source(), fmt::format("data.{} transforms images: it applies to data.dataset = \"fashion-mnist\" only "
                                      "(data.dataset is \"{}\")",
                                      key, d.dataset));
  r.read_choice(t, p, "balance", d.balance, {"none", "class_weighted", "resample"});
  if (d.balance != "none" && d.partition == "iid")
    r.fail(t.get("balance")->source(),
           "data.balance needs a fixed split (data.partition \"dirichlet\", \"shards\" or "
           "\"quantity\"): under iid every rank's classes are already even");
  if (const toml::node* n = t.get("join_divide_by_initial")) {
    r.read_bool(t, p, "join_divide_by_initial", d.join_divide_by_initial);
    if (d.uneven != "join") r.fail(*n, p + "join_divide_by_initial", "applies to data.uneven = \"join\" only");
  }
  // A parameter of another partition would be ignored: say so instead.
  const std::pair<const char*, const char*> owner[] = {
      {"alpha", "dirichlet"}, {"classes_per_rank", "shards"}, {"skew", "quantity"}};
  for (const auto& [key, partition] : owner)
    if (const toml::node* n = t.get(key); n && d.partition != partition)
      r.fail(n->source(), fmt::format("data.{} applies to data.partition = \"{}\" only (data.partition is \"{}\")", key,
                                      partition, d.partition));
}

// A GPT reads token sequences and nothing else does: [model] type "gpt" and [data] dataset "fortunes" go
// together, with its byte vocabulary and a shuffle over every sequence (the label-based splits need classes).
void check_model_data(const Reader& r, const toml::table& root, const Scenario& sc) {
  const toml::node* type = root.at_path("model.type").node();
  const toml::node* dataset = root.at_path("data.dataset").node();
  const bool gpt = sc.model.type == ModelType::Gpt, text = sc.data.dataset == "fortunes";
  if (gpt && !text)
    r.fail(dataset ? dataset->source() : type->source(),
           fmt::format("model.type = \"gpt\" trains on text: set data.dataset = \"fortunes\" (data.dataset is \"{}\")",
                       sc.data.dataset));
  if (text && !gpt)
    r.fail(*dataset, "data.dataset",
           fmt::format("\"fortunes\" is byte-level text for model.type = \"gpt\" (model.type is \"{}\")",
                       to_string(sc.model.type)));
  if (!gpt) return;
  if (sc.model.gpt.vocab != 256)
    r.fail(root.at_path("model.vocab").node()->source(),
           fmt::format("model.vocab: data.dataset = \"fortunes\" is byte-level text, a vocabulary of 256 (not {})",
                       sc.model.gpt.vocab));
  if (sc.data.partition != "iid")
    r.fail(root.at_path("data.partition").node()->source(),
           fmt::format("data.partition = \"{}\" splits by class labels: a GPT's samples are text sequences, "
                       "split with \"iid\" only",
                       sc.data.partition));
}

void read_train(const Reader& r, const toml::table& t, TrainConfig& tr) {
  const std::string p = "train.";
  // Settings of one optimizer moved into its options table; say where rather than "unknown key".
  const std::pair<const char*, const char*> moved[] = {{"momentum", "optimizer_options = { momentum = 0.9 }"},
                                                       {"adam_beta1", "optimizer_options = { beta1 = 0.9 }"},
                                                       {"adam_beta2", "optimizer_options = { beta2 = 0.999 }"},
                                                       {"adam_eps", "optimizer_options = { eps = 1e-8 }"}};
  for (const auto& [key, now] : moved)
    if (const toml::node* n = t.get(key))
      r.fail(n->source(), fmt::format("train.{} is an option of the optimizer now: write {}", key, now));
  r.check_keys(t, p,
               {"backend",
                "batch_size",
                "epochs",
                "max_steps",
                "lr",
                "weight_decay",
                "seed",
                "eval_every",
                "optimizer",
                "optimizer_options",
                "lr_schedule",
                "lr_schedule_options",
                "warmup_steps",
                "lr_scale",
                "lr_base_batch",
                "clip_grad_norm",
                "comm_timeout_s",
                "consistency_every",
                "tf32",
                "checkpoint_every",
                "checkpoint_dir",
                "checkpoint_keep",
                "precision",
                "recompute"});
  // "cuda" is accepted here; whether this build and machine can run it is the runtime's call.
  r.read_choice(t, p, "backend", tr.backend);
  if (const toml::node* n = t.get("tf32")) {
    r.read_bool(t, p, "tf32", tr.tf32);
    if (tr.backend == Backend::Cpu) r.fail(*n, p + "tf32", "applies to backend \"cuda\" or \"cuda+mpi\" only");
  }
  r.read_choice(t, p, "precision", tr.precision, {"fp32", "bf16", "fp16"});
  r.read_choice(t, p, "recompute", tr.recompute, {"none", "full"});
  // The names and the options are the registries' (strategies/optimizer.hpp, validate_train).
  r.read_string(t, p, "optimizer", tr.optimizer);
  r.read_string(t, p, "lr_schedule", tr.lr_schedule);
  for (auto&& [key, value] : t) tr.where[std::string(key.str())] = r.position(value.source());
  r.read_option_table(t, p, "optimizer_options", tr.optimizer_options, tr.where, "{ momentum = 0.9 }");
  r.read_option_table(t, p, "lr_schedule_options", tr.lr_schedule_options, tr.where, "{ gamma = 0.1 }");
  r.read_int(t, p, "warmup_steps", tr.warmup_steps, 0, "must be a non-negative integer (0 = no warm-up)");
  r.read_choice(t, p, "lr_scale", tr.lr_scale, {"none", "linear", "sqrt"});
  r.read_int(t, p, "lr_base_batch", tr.lr_base_batch, 0, "must be a non-negative integer (0 = batch_size)");
  r.read_number(
      t, p, "clip_grad_norm", tr.clip_grad_norm, [](double v) { return v >= 0; },
      "must be a non-negative number (0 = no clipping)");
  r.read_number(
      t, p, "comm_timeout_s", tr.comm_timeout_s, [](double v) { return v > 0; },
      "must be a number of seconds greater than 0");
  r.read_int(t, p, "batch_size", tr.batch_size, 1, "must be a positive integer");
  r.read_int(t, p, "epochs", tr.epochs, 1, "must be a positive integer");
  r.read_int(t, p, "max_steps", tr.max_steps, 0, "must be a non-negative integer (0 = no limit)");
  r.read_number(
      t, p, "lr", tr.lr, [](double v) { return v > 0; }, "must be a number greater than 0");
  r.read_number(
      t, p, "weight_decay", tr.weight_decay, [](double v) { return v >= 0; }, "must be a non-negative number");
  if (const toml::node* n = t.get("seed")) {
    const auto v = n->as_integer();
    if (!v || v->get() < 0) r.fail(*n, "train.seed", "must be a non-negative integer");
    tr.seed = static_cast<std::uint64_t>(v->get());
  }
  r.read_int(t, p, "eval_every", tr.eval_every, 0, "must be a non-negative integer (0 = only at the end)");
  r.read_int(t, p, "consistency_every", tr.consistency_every, 0,
             "must be a non-negative integer (0 = only at the end)");
  r.read_int(t, p, "checkpoint_every", tr.checkpoint_every, 0, "must be a non-negative integer (0 = no checkpoints)");
  r.read_int(t, p, "checkpoint_keep", tr.checkpoint_keep, 1, "must be a positive integer");
  r.read_string(t, p, "checkpoint_dir", tr.checkpoint_dir);
}

// A SimGrid topology string: groups separated by ';' of sizes given by `group_sizes` (0 = any non-empty);
// fat_tree's group sizes follow its first number (the levels).
void read_topology_spec(const Reader& r, const toml::table& t, std::string_view key, std::string& out,
                        std::string_view syntax) {
  const toml::node* n = t.get(key);
  if (!n) return;
  const std::string field = "cluster." + std::string(key);
  const auto text = n->as_string();
  if (!text) r.fail(*n, field, fmt::format("must be a string {}", syntax));
  std::vector<std::vector<unsigned>> g;
  try {
    g = parse_topology_spec(text->get());
  } catch (const InputError& e) {
    r.fail(*n, field, fmt::format("must be {} ({})", syntax, e.what()));
  }
  bool ok = true;
  if (key == "fat_tree") {
    ok = g.size() == 4 && g[0].size() == 1;
    for (std::size_t i = 1; ok && i < 4; ++i) ok = g[i].size() == g[0][0];
  } else if (key == "dragonfly") {
    ok = g.size() == 4 && g[0].size() == 2 && g[1].size() == 2 && g[2].size() == 2 && g[3].size() == 1;
  } else {
    ok = g.size() == 1;
  }
  if (!ok) r.fail(*n, field, fmt::format("must be {}", syntax));
  out = text->get();
}

// Node model, fabrics, topology parameters, stragglers and per-node overrides (docs/simulation.md, Clusters).
void read_cluster_shape(const Reader& r, const toml::table& t, ClusterConfig& c) {
  const std::string p = "cluster.";
  if (const toml::node* n = t.get("preset")) {
    const auto name = n->as_string();
    if (!name || std::find(kClusterPresets.begin(), kClusterPresets.end(), name->get()) == kClusterPresets.end())
      r.fail(*n, "cluster.preset",
             fmt::format("must be one of {}", choice_list({kClusterPresets[0], kClusterPresets[1], kClusterPresets[2],
                                                           kClusterPresets[3]})));
    apply_cluster_preset(c, name->get());
  }
  r.read_choice(t, p, "topology", c.topology, {"star", "full", "fat_tree", "dragonfly", "torus"});
  r.read_int(t, p, "devices_per_node", c.devices_per_node, 1, "must be a positive integer");
  r.read_unit(t, p, "device_memory", c.device_memory, Reader::parse_bytes_as_double, true);
  r.read_choice(t, p, "intra", c.intra, {"nvswitch", "pcie"});
  r.read_unit(t, p, "intra_bandwidth", c.intra_bandwidth, parse_bandwidth, true);
  r.read_unit(t, p, "intra_latency", c.intra_latency, parse_duration, false);
  r.read_unit(t, p, "pcie_bandwidth", c.pcie_bandwidth, parse_bandwidth, true);
  r.read_choice(t, p, "nics", c.nics, {"per_device", "per_node"});
  r.read_number(
      t, p, "intra_efficiency", c.intra_efficiency, [](double v) { return v > 0 && v <= 1; },
      "must be a number in (0, 1]");
  r.read_number(
      t, p, "link_efficiency", c.link_efficiency, [](double v) { return v > 0 && v <= 1; },
      "must be a number in (0, 1]");
  r.read_choice(t, p, "device_arch", c.device_arch, {"", "ampere", "hopper"});
  r.read_bool(t, p, "nvls", c.nvls);
  r.read_choice(t, p, "network_model", c.network_model, {"LV08", "CM02"});
  r.read_unit(t, p, "fabric_bandwidth", c.fabric_bandwidth, parse_bandwidth, true);
  r.read_unit(t, p, "fabric_latency", c.fabric_latency, parse_duration, false);
  read_topology_spec(r, t, "fat_tree", c.fat_tree,
                     "SimGrid's \"levels;down,...;up,...;count,...\" (e.g. \"2;8,4;1,2;1,1\")");
  read_topology_spec(r, t, "dragonfly", c.dragonfly,
                     "SimGrid's \"groups,links;chassis,links;routers,links;nodes\" (e.g. \"4,2;2,1;4,1;2\")");
  read_topology_spec(r, t, "torus", c.torus, "SimGrid's \"X,Y,...\" dimensions (e.g. \"4,4,4\")");
  // A shape is refused with another topology rather than silently ignored (the topology may come from a preset).
  for (const char* key : {"fat_tree", "dragonfly", "torus"})
    if (const toml::node* n = t.get(key); n && c.topology != key)
      r.fail(*n, p + key,
             fmt::format("applies to topology = \"{}\" only (topology is \"{}\"{})", key, c.topology,
                         c.topology == "full" ? ", which has no shape: every pair of nodes gets its own link" : ""));
  // Arrays of tables: inline (`stragglers = [{rank = 3, factor = 2.0}]`) or [[cluster.stragglers]].
  auto entries = [&](std::string_view key, std::string_view example, auto&& read_one) {
    const toml::node* n = t.get(key);
    if (!n) return;
    const toml::array* a = n->as_array();
    if (!a) r.fail(*n, p + std::string(key), fmt::format("must be an array of tables such as {}", example));
    for (std::size_t i = 0; i < a->size(); ++i) {
      const toml::node& e = *a->get(i);
      const std::string field = fmt::format("cluster.{}[{}]", key, i);
      const toml::table* et = e.as_table();
      if (!et) r.fail(e, field, fmt::format("must be a table such as {}", example));
      read_one(*et, field + ".", e);
    }
  };
  c.stragglers.clear();
  entries("stragglers", "{rank = 3, factor = 2.0}",
          [&](const toml::table& et, const std::string& f, const toml::node& e) {
            ClusterConfig::Straggler s;
            r.check_keys(et, f, {"rank", "node", "factor"});
            r.read_int(et, f, "rank", s.rank, 0, "must be a non-negative integer");
            r.read_int(et, f, "node", s.node, 0, "must be a non-negative integer");
            if ((s.rank >= 0) == (s.node >= 0))
              r.fail(e.source(), f + "rank or " + f + "node is required (exactly one of them)");
            if (!et.get("factor")) r.fail(e.source(), f + "factor is required (compute takes factor times longer)");
            r.read_number(
                et, f, "factor", s.factor, [](double v) { return v > 0; }, "must be a number greater than 0");
            c.stragglers.push_back(s);
          });
  c.nodes.clear();
  entries("nodes", "{node = 1, link_bandwidth = \"5Gbit/s\"}",
          [&](const toml::table& et, const std::string& f, const toml::node& e) {
            ClusterConfig::NodeOverride o;
            r.check_keys(et, f, {"node", "link_bandwidth", "intra_bandwidth"});
            if (!et.get("node")) r.fail(e.source(), f + "node is required");
            r.read_int(et, f, "node", o.node, 0, "must be a non-negative integer");
            r.read_unit(et, f, "link_bandwidth", o.link_bandwidth, parse_bandwidth, true);
            r.read_unit(et, f, "intra_bandwidth", o.intra_bandwidth, parse_bandwidth, true);
            c.nodes.push_back(o);
          });
}

void read_cluster(const Reader& r, const toml::table& t, ClusterConfig& c) {
  const std::string p = "cluster.";
  r.check_keys(t, p, {"world_size",       "topology",
                      "link_bandwidth",   "link_latency",
                      "compute_s",        "optimizer_s",
                      "device_flops",     "compute_efficiency",
                      "compute_model",    "device_mem_bw",
                      "simulate_world",   "calibration",
                      "preset",           "devices_per_node",
                      "device_memory",    "intra",
                      "intra_bandwidth",  "intra_latency",
                      "pcie_bandwidth",   "nics",
                      "intra_efficiency", "link_efficiency",
                      "device_arch",      "nvls",
                      "network_model",    "fabric_bandwidth",
                      "fabric_latency",   "fat_tree",
                      "dragonfly",        "torus",
                      "stragglers",       "nodes"});
  r.read_int(t, p, "world_size", c.world_size, 1, "must be a positive integer");
  read_cluster_shape(r, t, c);  // applies the preset first: every field read after it overrides the preset
  r.read_unit(t, p, "link_bandwidth", c.link_bandwidth, parse_bandwidth, true);
  r.read_unit(t, p, "link_latency", c.link_latency, parse_duration, false);
  r.read_unit(t, p, "compute_s", c.compute_s, parse_duration, true);
  r.read_unit(t, p, "optimizer_s", c.optimizer_s, parse_duration, false);
  double flops = 0;
  r.read_number(
      t, p, "device_flops", flops, [](double v) { return v > 0; }, "must be a number greater than 0 (FLOP/s)");
  if (t.get("device_flops")) c.device_flops = flops;
  r.read_number(
      t, p, "compute_efficiency", c.compute_efficiency, [](double v) { return v > 0 && v <= 1; },
      "must be a number in (0, 1]");
  r.read_unit(t, p, "device_mem_bw", c.device_mem_bw, parse_bandwidth, true);
  r.read_choice(t, p, "compute_model", c.compute_model, {"flops", "roofline"});
  if (const toml::node* n = t.get("compute_model");
      n && c.compute_model == "roofline" && !(c.device_flops && c.device_mem_bw))
    r.fail(n->source(),
           "cluster.compute_model = \"roofline\" needs cluster.device_flops and cluster.device_mem_bw "
           "(or a preset's)");
  r.read_int_array(t, p, "simulate_world", c.simulate_world, 1, "must be a non-empty array of positive integers");
  r.read_string(t, p, "calibration", c.calibration);
}

void read_strategies(const Reader& r, const toml::node& n, std::vector<StrategyConfig>& out) {
  const toml::array* a = n.as_array();
  if (!a || a->empty()) r.fail(n, "strategy", "must be a non-empty array of tables ([[strategy]])");
  out.clear();
  for (std::size_t i = 0; i < a->size(); ++i) {
    const toml::node& e = *a->get(i);
    const std::string field = fmt::format("strategy[{}]", i);
    const toml::table* t = e.as_table();
    if (!t) r.fail(e, field, "must be a table");
    const std::string p = field + ".";
    StrategyConfig s;
    // Keys beyond core's own are the policy's options, checked against its registry entry by strategies/;
    // one a letter or two away from a field is that field mistyped.
    for (auto&& [key, value] : *t) {
      const std::string k(key.str());
      if (std::find(kStrategyFields.begin(), kStrategyFields.end(), k) != kStrategyFields.end()) continue;
      if (auto guess = closest(k, kStrategyFields))
        r.fail(key.source(), fmt::format("unknown key {}{} (did you mean {}{}?)", p, k, p, *guess));
      if (!(value.is_string() || value.is_integer() || value.is_floating_point() || value.is_boolean()))
        r.fail(value, p + k,
               "must be a string, number or boolean (a policy option), or one of the [[strategy]] fields");
      s.policy_options[k] = value.is_string() ? value.as_string()->get() : show(value);
    }
    r.read_string(*t, p, "name", s.name);
    r.read_string(*t, p, "policy", s.policy);
    r.read_string(*t, p, "schedule", s.schedule);
    r.read_string(*t, p, "codec", s.codec);
    r.read_size(*t, p, "bucket_cap", s.bucket_cap);
    r.read_size(*t, p, "first_bucket_cap", s.first_bucket_cap);
    r.read_int(*t, p, "accumulate_steps", s.accumulate_steps, 1, "must be a positive integer");
    r.read_option_table(*t, p, "codec_options", s.codec_options, s.where, "{ ratio = 0.01 }");
    for (auto&& [key, value] : *t) s.where[std::string(key.str())] = r.position(value.source());
    for (std::size_t j = 0; j < out.size(); ++j) {
      if (out[j].name != s.name) continue;
      const toml::node* where = t->get("name");
      r.fail(where ? where->source() : e.source(),
             fmt::format("{}.name must be unique (strategy[{}] has the same name), got {}", field, j, quote(s.name)));
    }
    out.push_back(std::move(s));
  }
}

nlohmann::json cluster_stragglers_json(const ClusterConfig& c) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& s : c.stragglers)
    a.push_back(s.rank >= 0 ? nlohmann::json{{"rank", s.rank}, {"factor", s.factor}}
                            : nlohmann::json{{"node", s.node}, {"factor", s.factor}});
  return a;
}

nlohmann::json cluster_nodes_json(const ClusterConfig& c) {
  nlohmann::json a = nlohmann::json::array();
  for (const auto& o : c.nodes) {
    nlohmann::json j{{"node", o.node}};
    if (o.link_bandwidth) j["link_bandwidth"] = *o.link_bandwidth;
    if (o.intra_bandwidth) j["intra_bandwidth"] = *o.intra_bandwidth;
    a.push_back(j);
  }
  return a;
}

}  // namespace

nlohmann::json StrategyConfig::to_json() const {
  return {{"name", name},
          {"policy", policy},
          {"schedule", schedule},
          {"bucket_cap", bucket_cap},
          {"first_bucket_cap", first_bucket_cap},
          {"codec", codec},
          {"codec_options", codec_options},
          {"accumulate_steps", accumulate_steps},
          {"policy_options", policy_options}};
}

Scenario parse_scenario(const std::string& text, const std::string& path) {
  const Reader r(path);
  Scenario sc;
  sc.path = path;
  sc.text = text;
  sc.name = std::filesystem::path(path).stem().string();

  toml::table root;
  try {
    root = toml::parse(text, std::string_view(path));
  } catch (const toml::parse_error& e) {
    // toml++ says "Error while parsing <what>: <why>"; keep the detail, drop the capital "Error".
    std::string_view d = e.description();
    std::string message = d.starts_with("Error while ") ? fmt::format("TOML syntax error {}", d.substr(6))
                                                        : fmt::format("TOML syntax error: {}", d);
    r.fail(e.source(), message);
  }

  const Choices sections = {"name", "model", "data", "train", "cluster", "parallel", "strategy"};
  // Unknown top-level names: tables read as "[section]", the rest as keys.
  const toml::key* first = nullptr;
  for (auto&& [key, value] : root)
    if (std::find(sections.begin(), sections.end(), key.str()) == sections.end() &&
        (!first || key.source().begin < first->source().begin))
      first = &key;
  if (first) {
    const toml::node& v = *root.get(first->str());
    auto render = [&](std::string_view name, const toml::node* as) {
      if (name == "strategy") return std::string("[[strategy]]");
      if (name == "name" || !as || !(as->is_table() || as->is_array_of_tables())) return std::string(name);
      return fmt::format(fmt::runtime(as->is_table() ? "[{}]" : "[[{}]]"), name);
    };
    const bool is_section = v.is_table() || v.is_array_of_tables();
    std::string message = fmt::format("unknown {} {}", is_section ? "section" : "key", render(first->str(), &v));
    if (auto guess = closest(first->str(), sections))
      message += fmt::format(" (did you mean {}?)", render(*guess, is_section ? &v : nullptr));
    r.fail(first->source(), message);
  }

  if (const toml::node* n = root.get("name")) {
    const auto s = n->as_string();
    if (!s || s->get().empty()) r.fail(*n, "name", "must be a non-empty string");
    sc.name = s->get();
  }
  if (auto t = r.section(root, "model")) read_model(r, *t, sc.model, path);
  if (auto t = r.section(root, "data")) read_data(r, *t, sc.data);
  check_model_data(r, root, sc);
  if (auto t = r.section(root, "train")) read_train(r, *t, sc.train);
  if (auto t = r.section(root, "cluster")) read_cluster(r, *t, sc.cluster);
  if (auto t = r.section(root, "parallel")) read_parallel(r, *t, sc.parallel);
  // [[strategy]] is the one required section: a scenario exists to compare strategies, and a file that names
  // none (an empty one, a typo in a path) must not train a default job and exit 0.
  if (const toml::node* n = root.get("strategy"))
    read_strategies(r, *n, sc.strategies);
  else
    r.fail(toml::source_region{{1, 1}, {1, 1}, nullptr},
           std::string(root.empty() ? "the scenario is empty" : "the scenario has no [[strategy]]") +
               ": name at least one strategy to run, e.g.\n[[strategy]]\nname = \"ddp\"\npolicy = \"overlap\"\n"
               "([model], [data], [train] and [cluster] have defaults; see scenarios/default.toml)");
  return sc;
}

Scenario load_scenario(const std::string& path) {
  auto cannot_open = [&](int err) {
    return ScenarioError(InputLocation{.file = path},
                         fmt::format("cannot open scenario file ({})", std::strerror(err)));
  };
  std::FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) throw cannot_open(errno);
  std::string text;
  char buf[1 << 14];
  std::size_t got = 0;
  while ((got = std::fread(buf, 1, sizeof buf, f)) > 0) text.append(buf, got);
  const bool failed = std::ferror(f) != 0;
  const int err = errno;  // e.g. EISDIR when the path is a directory
  std::fclose(f);
  if (failed) throw cannot_open(err);
  return parse_scenario(text, path);
}

nlohmann::json Scenario::to_json() const {
  using nlohmann::json;
  auto optional = [](const std::optional<double>& v) { return v ? json(*v) : json(nullptr); };
  json strategies_json = json::array();
  for (const StrategyConfig& s : strategies) strategies_json.push_back(s.to_json());
  nlohmann::json out = {
      {"name", name},
      {"model", model.to_json()},
      {"data",
       {{"dataset", data.dataset},
        {"path", data.path},
        {"synthetic_train", data.synthetic_train},
        {"synthetic_test", data.synthetic_test},
        {"partition", data.partition},
        {"alpha", data.alpha},
        {"classes_per_rank", data.classes_per_rank},
        {"skew", data.skew},
        {"uneven", data.uneven},
        {"join_divide_by_initial", data.join_divide_by_initial},
        {"balance", data.balance},
        {"augment_rotate", data.augment_rotate},
        {"augment_scale", data.augment_scale},
        {"augment_shift", data.augment_shift}}},
      {"train",
       {{"backend", train.backend},
        {"batch_size", train.batch_size},
        {"epochs", train.epochs},
        {"max_steps", train.max_steps},
        {"lr", train.lr},
        {"weight_decay", train.weight_decay},
        {"optimizer", train.optimizer},
        {"optimizer_options", train.optimizer_options},
        {"lr_schedule", train.lr_schedule},
        {"lr_schedule_options", train.lr_schedule_options},
        {"warmup_steps", train.warmup_steps},
        {"lr_scale", train.lr_scale},
        {"lr_base_batch", train.lr_base_batch},
        {"clip_grad_norm", train.clip_grad_norm},
        {"comm_timeout_s", train.comm_timeout_s},
        {"tf32", train.tf32},
        {"precision", train.precision},
        {"recompute", train.recompute},
        {"seed", train.seed},
        {"eval_every", train.eval_every},
        {"consistency_every", train.consistency_every},
        {"checkpoint_every", train.checkpoint_every},
        {"checkpoint_dir", train.checkpoint_dir},
        {"checkpoint_keep", train.checkpoint_keep}}},
      {"cluster",
       {{"world_size", cluster.world_size},
        {"topology", cluster.topology},
        {"preset", cluster.preset},
        {"devices_per_node", cluster.devices_per_node},
        {"device_memory", optional(cluster.device_memory)},
        {"intra", cluster.intra},
        {"intra_bandwidth", cluster.intra_bandwidth},
        {"intra_latency", cluster.intra_latency},
        {"pcie_bandwidth", cluster.pcie_bandwidth},
        {"nics", cluster.nics},
        {"intra_efficiency", cluster.intra_efficiency},
        {"link_efficiency", cluster.link_efficiency},
        {"device_arch", cluster.device_arch},
        {"nvls", cluster.nvls},
        {"network_model", cluster.network_model},
        {"fabric_bandwidth", optional(cluster.fabric_bandwidth)},
        {"fabric_latency", optional(cluster.fabric_latency)},
        {"fat_tree", cluster.fat_tree},
        {"dragonfly", cluster.dragonfly},
        {"torus", cluster.torus},
        {"stragglers", cluster_stragglers_json(cluster)},
        {"nodes", cluster_nodes_json(cluster)},
        {"link_bandwidth", cluster.link_bandwidth},
        {"link_latency", cluster.link_latency},
        {"compute_s", optional(cluster.compute_s)},
        {"optimizer_s", optional(cluster.optimizer_s)},
        {"device_flops", optional(cluster.device_flops)},
        {"compute_efficiency", cluster.compute_efficiency},
        {"compute_model", cluster.compute_model},
        {"device_mem_bw", optional(cluster.device_mem_bw)},
        {"simulate_world", cluster.simulate_world},
        {"calibration", cluster.calibration.empty() ? nlohmann::json(nullptr) : nlohmann::json(cluster.calibration)}}},
      {"strategies", strategies_json},
  };
  // Only when set: a pure data-parallel scenario keeps the configuration (and checkpoint identity) it had.
  if (!parallel.is_default()) out["parallel"] = parallel.to_json();
  return out;
}

}  // namespace ddplab
