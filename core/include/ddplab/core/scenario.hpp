// Scenarios: TOML files describing model, data, training, cluster and the strategies to compare.
// Every field is validated; errors carry "file:line:col: field message". Unknown keys are errors.
#pragma once
#include <array>
#include <cstddef>
#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include <nlohmann/json_fwd.hpp>
#include "ddplab/core/choices.hpp"
#include "ddplab/core/error.hpp"

namespace ddplab {

// A scenario that cannot be run as written: input (exit 2), with the file, line, column and field where known.
struct ScenarioError : InputError {
  using InputError::InputError;
};

// The model tables shipped in strategies/models/<name>.csv, named by [model] table (type "table").
inline constexpr std::array<std::string_view, 5> kBuiltinModelTables{"resnet50", "bert_large", "gpt2_xl", "llama2_7b",
                                                                     "gpt3_175b"};

// type "gpt": a decoder-only transformer over byte tokens (strategies/gpt.hpp). `blocks` transformer blocks
// of width `dim`, `heads` query heads sharing `kv_heads` key/value heads (grouped-query attention; 0 = heads),
// an MLP of `ffn` units (0: 4 dim for GELU, 8 dim / 3 rounded up to a multiple of 8 for SwiGLU), a context of
// `seq` tokens, and the output layer tied to the token embedding unless tied = false.
struct GptConfig {
  int blocks = 4, dim = 128, heads = 4, kv_heads = 0, ffn = 0, seq = 128, vocab = 256;
  GptNorm norm = GptNorm::LayerNorm;
  GptActivation activation = GptActivation::Gelu;
  GptPosition position = GptPosition::Learned;
  bool tied = true, bias = true;
  int kv() const { return kv_heads > 0 ? kv_heads : heads; }
  int head_dim() const { return dim / heads; }
  int mlp_units() const;  // ffn, or its default
  bool operator==(const GptConfig&) const = default;
};

struct ModelConfig {
  ModelType type = ModelType::Mlp;  // mlp, cnn and gpt are trained by the runtime; table is simulation only
  std::vector<int> layers{784, 1024, 1024, 1024, 10};  // type "mlp": input, hidden..., classes
  // type "cnn" (strategies/cnn_layout.hpp): per entry of `conv` a block of k x k convolution ("same"
  // padding, stride 1), batch normalisation unless bn = "none", ReLU and 2 x 2 max-pool; then fully connected
  // layers of widths `hidden` with ReLU, and the classifier. Images are image = [height, width, channels].
  std::vector<int> image{28, 28, 1};
  std::vector<int> conv{32, 64};
  int kernel = 5;
  std::vector<int> hidden{128};
  int classes = 10;
  // Batch normalisation: "none", "local" (each replica normalises by its own batch's statistics, DDP's
  // default) or "sync" (SyncBatchNorm: the statistics are summed over the ranks, a comm op in the plan).
  std::string bn = "none";
  // type "table": a built-in name (kBuiltinModelTables) or the path of a table file, resolved against the
  // scenario file's directory; strategies/ loads it (model_library.hpp).
  std::string table;
  GptConfig gpt;                             // type "gpt"
  std::map<std::string, std::string> where;  // field -> "path:line:col" of its value, for later errors
  std::size_t parameter_count() const;       // type "mlp": sum of in*out + out over layers (default: 2,913,290)
  // The floats of one sample: 784 for a Fashion-MNIST image; a GPT's sequence of seq token ids.
  int input_features() const;
  int output_classes() const;  // the classes; a GPT's vocabulary
  // Labels of one sample: 1, or a GPT's seq (each position's next token).
  int labels_per_sample() const { return type == ModelType::Gpt ? gpt.seq : 1; }
  bool trainable() const { return type != ModelType::Table; }  // the runtime can train it
  // As stored with a run (its type's fields only), and back: what a stored run trained.
  nlohmann::json to_json() const;
  static ModelConfig from_json(const nlohmann::json& j);  // throws nlohmann::json::exception when incomplete
};

inline constexpr const char* kFortunesPath = "/usr/share/games/fortunes";

struct DataConfig {
  // "fashion-mnist" | "synthetic" | "fortunes" (byte-level English text, Debian's fortunes package, for a GPT;
  // its path defaults to kFortunesPath)
  std::string dataset = "fashion-mnist";
  std::string path = "/usr/share/datasets/fashion-mnist";
  int synthetic_train = 4096;  // sample counts for "synthetic"
  int synthetic_test = 1024;
  // How the training set is split across the ranks that train (docs/scenarios.md, Data partitions):
  // "iid" (a fresh global shuffle each epoch, as torch's DistributedSampler), or a fixed split each rank
  // keeps: "dirichlet" (label skew: each class's samples split by proportions drawn from Dir(alpha)),
  // "shards" (each rank holds classes_per_rank classes) or "quantity" (unequal amounts, the largest rank
  // holding 1 + skew times the smallest's).
  std::string partition = "iid";
  double alpha = 0.5;
  int classes_per_rank = 2;
  double skew = 0.5;
  // Ranks of a fixed split hold different amounts. Each epoch every rank takes the same number of steps,
  // "drop_last" (the smallest rank's amount) or "pad" (the largest's, a rank short of it repeating samples);
  // or "join" (PyTorch's Join): each rank takes what it holds, and a rank that has run out shadows the
  // others' collectives with zero gradients until the epoch ends. The sum is divided by the ranks still
  // training, or by every rank with join_divide_by_initial.
  std::string uneven = "pad";
  bool join_divide_by_initial = false;
  // Each rank's own classes made even (a fixed split): "none", "class_weighted" (the training loss weights
  // class c by n / (K n_c) over the rank's n samples of K classes, as scikit-learn's "balanced") or
  // "resample" (each epoch the rank draws its samples with replacement, every class it holds equally
  // likely, as torch's WeightedRandomSampler with weights 1 / n_c).
  std::string balance = "none";
  // Training images randomly rotated by up to augment_rotate degrees, zoomed by up to +-augment_scale and
  // shifted by up to augment_shift pixels (torchvision's RandomAffine), on the loader thread; 0 = off.
  double augment_rotate = 0, augment_scale = 0, augment_shift = 0;
};

struct TrainConfig {
  // cpu (OpenBLAS + MPI), cuda (cuBLAS + NCCL, one process per GPU) or cuda+mpi (GPU compute,
  // communication staged through host memory over MPI, so several ranks may share a GPU).
  Backend backend = Backend::Cpu;
  int batch_size = 64;  // per rank
  int epochs = 1;
  int max_steps = 0;  // 0 = no limit (run the epochs)
  double lr = 0.05;   // at lr_base_batch; lr_scale scales it to the global batch
  double weight_decay = 0.0;
  // The optimizer and the learning-rate schedule are registry entries (strategies/optimizer.hpp), whose
  // typed options travel as text, as a codec's do; validate_train checks them, citing `where`.
  std::string optimizer = "sgd";                         // sgd, adam, adamw, rmsprop, lars, lamb
  std::map<std::string, std::string> optimizer_options;  // optimizer_options = { momentum = 0.9 }
  std::string lr_schedule = "constant";                  // constant, cosine, step: the decay after warm-up
  std::map<std::string, std::string> lr_schedule_options;
  int warmup_steps = 0;                      // optimizer steps of linear warm-up from lr / warmup_steps
  std::string lr_scale = "none";             // "none" | "linear" | "sqrt": by global batch / lr_base_batch
  int lr_base_batch = 0;                     // the global batch `lr` is meant for; 0 = batch_size
  double clip_grad_norm = 0;                 // > 0: clip the global gradient norm to it (0 = off)
  std::map<std::string, std::string> where;  // "optimizer_options.momentum" -> "file:line:col"
  double comm_timeout_s = 300;               // watchdog (MPI, NCCL): a stuck collective aborts after this
  bool tf32 = false;                         // GPU GEMMs on TF32 tensor cores (cuda backends only)
  // Simulated only for now (`ddplab run` refuses them): "bf16" / "fp16" is mixed precision as torch.autocast
  // and Megatron-LM train, activations (held, sent between stages, allreduced over TP) in 16 bits, while
  // parameters, gradients and optimizer state stay fp32 (what the gradient sync sends is the codec's);
  // recompute = "full" keeps only each numbered block's input (a transformer layer's) and runs the block's
  // forward again right before its backward (Megatron-LM's full activation recomputation).
  std::string precision = "fp32";  // "fp32" | "bf16" | "fp16"
  std::string recompute = "none";  // "none" | "full"
  std::uint64_t seed = 1;
  int eval_every = 0;  // steps between evaluations; 0 = only at the end
  // Steps between checks that the replicas' parameters agree (a checksum compared across ranks, at the first
  // step from then on after which the strategy keeps them equal); 0 = only at the end.
  int consistency_every = 0;
  // Steps between checkpoints (each rank's state, from which `ddplab run --resume` continues bit for bit),
  // and one at the end of the run; 0 = none. A multiple of every strategy's accumulate_steps.
  int checkpoint_every = 0;
  std::string checkpoint_dir;  // where they go (run-ID/step-S/rank-R.ckpt); empty = STEM-checkpoints beside STEM.db
  int checkpoint_keep = 2;     // the newest this many checkpoints of a run are kept (the final one too)
};

// Named clusters for [cluster].preset (fields filled by apply_cluster_preset).
inline constexpr std::array<std::string_view, 4> kClusterPresets{"dgx-h100", "dgx-a100", "eth-25g", "cpu-testbed"};

struct ClusterConfig {
  int world_size = 4;                // ranks that `ddplab run` starts by default
  std::string preset;                // "" or a kClusterPresets name; explicit fields override it
  std::string topology = "star";     // inter-node: "star" | "full" | "fat_tree" | "dragonfly" | "torus"
  double link_bandwidth = 10e9 / 8;  // bytes/s of one NIC, per direction
  double link_latency = 2e-6;        // seconds, per NIC link
  // Nodes: rank r is device r % devices_per_node of node r / devices_per_node (docs/simulation.md, Clusters).
  int devices_per_node = 1;
  std::optional<double> device_memory;  // bytes per device (informational)
  std::string intra = "nvswitch";       // devices_per_node > 1: "nvswitch" | "pcie"
  double intra_bandwidth = 300e9;       // bytes/s per direction, device <-> node switch (or PCIe switch)
  double intra_latency = 1e-6;          // seconds, per intra-node link
  double pcie_bandwidth = 32e9;         // bytes/s per direction, PCIe switch <-> root complex
  std::string nics = "per_device";      // "per_device" | "per_node"
  // Effective share of the line rate that traffic gets (protocol overhead): NVLink moves 128-byte payloads
  // at about 80% of its line rate; an NDR InfiniBand NIC delivers about 47 of its 50 GB/s.
  double intra_efficiency = 1.0;  // intra-node links
  double link_efficiency = 1.0;   // NICs
  std::string device_arch;        // "ampere" | "hopper" | "": NCCL's constants (nccl_model.hpp)
  bool nvls = false;              // NVLink SHARP in the NVSwitch (H100 and later): NCCL's NVLS
  // SimGrid network model the fabric is simulated with (docs/simulation.md, Network models): "LV08" (TCP's measured
  // latency and bandwidth factors: Ethernet with TCP) or "CM02" (plain latency + size / bandwidth: RDMA fabrics).
  std::string network_model = "LV08";
  std::optional<double> fabric_bandwidth;  // full/fat_tree/dragonfly/torus links; default: a node's NIC total
  std::optional<double> fabric_latency;    // their latency; default link_latency
  std::string fat_tree;                    // SimGrid "levels;down;up;count", "" = sized to the world
  std::string dragonfly;                   // SimGrid "groups,links;chassis,links;routers,links;nodes", "" = sized
  std::string torus;                       // SimGrid "X,Y,Z", "" = a ring of the nodes
  struct Straggler {                       // slows a rank's (or every rank of a node's) compute by factor
    int rank = -1, node = -1;
    double factor = 1;
  };
  std::vector<Straggler> stragglers;
  // How many times longer rank `rank`'s compute and codec work take: the product of the stragglers that
  // name it or its node (rank / devices_per_node). The simulator and the runtime both slow a rank by it.
  double compute_factor(int rank) const;
  struct NodeOverride {  // per-node NIC / intra bandwidth (heterogeneous nodes)
    int node = 0;
    std::optional<double> link_bandwidth, intra_bandwidth;
  };
  std::vector<NodeOverride> nodes;
  std::optional<double> compute_s;    // per-step compute for simulation; else from the store
  std::optional<double> optimizer_s;  // per-step optimizer time for simulation; else from the store
  // Without compute_s or a measured run, compute_s = batch x model FLOPs per sample / (device_flops x
  // compute_efficiency).
  std::optional<double> device_flops;  // peak FLOP/s of one device (e.g. 312e12: A100 fp16 tensor cores)
  double compute_efficiency = 0.5;     // fraction of device_flops forward + backward achieve
  // How the simulator times a layer from the table: "flops" (its FLOPs at device_flops x compute_efficiency)
  // or "roofline" (the longer of that and its activations' memory traffic at device_mem_bw: element-wise
  // layers, softmax over materialised scores; compute_source.hpp's simulated_model).
  std::string compute_model = "flops";
  std::optional<double> device_mem_bw;  // bytes/s of device memory: optimizer_s = 20 B per parameter / it
  std::vector<int> simulate_world{2, 4, 8, 16, 32, 64, 128, 256, 512, 1024};
  std::string calibration;  // name of a stored `ddplab calibrate` fit; empty = none
};

// The [[strategy]] keys core reads itself; any other key is a policy option (StrategyConfig::policy_options).
inline constexpr std::array<std::string_view, 8> kStrategyFields{
    "name", "policy", "schedule", "bucket_cap", "first_bucket_cap", "codec", "codec_options", "accumulate_steps"};

// A gradient-sync strategy. core checks types and ranges; the names (policy, schedule, codec) and the codec's
// options are checked against the registries in strategies/ (validate_strategies), which cite `where`.
struct StrategyConfig {
  std::string name = "baseline";                // label in the results store
  std::string policy = "flat";                  // when gradients are synced: flat, bucketed, overlap, ...
  std::string schedule = "native";              // allreduce schedule: "native" (the backend's own) or a registered one
  std::uint64_t bucket_cap = 25ull << 20;       // bytes per bucket (bucketed / overlap), as PyTorch DDP
  std::uint64_t first_bucket_cap = 1ull << 20;  // the first bucket is smaller so comm starts early
  std::string codec = "none";                   // wire encoding: none, fp16, bf16, topk, powersgd
  std::map<std::string, std::string> codec_options;  // codec_options = { ratio = 0.01 }, values as text
  int accumulate_steps = 1;                          // K: sync every K micro-steps (no comm in between)
  // The policy's own options: every [[strategy]] key not among kStrategyFields (local_sgd_period = 4), as
  // text. Their meaning, type and range belong to the policy's registry entry (strategies/ PolicyInfo::options).
  std::map<std::string, std::string> policy_options;
  std::map<std::string, std::string> where;  // field -> "path:line:col" of its value, for later errors

  nlohmann::json to_json() const;  // every field but `where`
};

// [parallel]: how each model replica is split over ranks before data parallelism (docs/model-parallel.md).
// dp = world / (tp x pp). Ranks are numbered by `placement`, innermost first: "tp-dp-pp" (Megatron-LM's:
// a TP group is adjacent ranks, so inside a node; pipeline stages outermost) or "tp-pp-dp" (stages of one
// replica adjacent). The schedule's name and the checks needing the rest of the scenario are strategies/'s
// (validate_parallel, layout.hpp).
struct ParallelConfig {
  int tp = 1, pp = 1;
  std::optional<int> dp;                   // when given, tp x pp x dp must be every world the scenario runs at
  int microbatches = 1;                    // the per-rank batch is cut into this many for the pipeline
  std::string pipeline_schedule = "1f1b";  // "gpipe" | "1f1b" | "interleaved"
  int virtual_stages = 1;                  // model chunks per rank (interleaved only: Megatron's virtual pipeline size)
  std::string placement = "tp-dp-pp";
  std::map<std::string, std::string> where;  // field -> "path:line:col" of its value, for later errors
  bool model_parallel() const { return tp > 1 || pp > 1; }
  bool is_default() const;  // nothing set: pure data parallelism, as before [parallel] existed
  nlohmann::json to_json() const;
};

struct Scenario {
  std::string path;  // as given ("<string>" when parsed from text)
  std::string name;  // file stem, or [scenario].name? -> file stem
  std::string text;  // the TOML source, stored with each run
  ModelConfig model;
  DataConfig data;
  TrainConfig train;
  ClusterConfig cluster;
  ParallelConfig parallel;
  std::vector<StrategyConfig> strategies;  // at least one: [[strategy]] is the one required section

  nlohmann::json to_json() const;  // the full resolved config
};

// Splits a SimGrid topology string ("2;8,4;1,2;1,1", "4,4,4") into groups (';') of positive integers (',').
// Throws InputError naming what is wrong.
std::vector<std::vector<unsigned>> parse_topology_spec(std::string_view text);

// Fills c's fields from a kClusterPresets entry; throws InputError for an unknown name.
void apply_cluster_preset(ClusterConfig& c, std::string_view preset);

// One line for humans: preset, topology, devices per node and fabric, NICs ("dgx-h100: fat_tree, 8 devices ...").
std::string describe_cluster(const ClusterConfig& c);

Scenario load_scenario(const std::string& path);                            // throws ScenarioError
Scenario parse_scenario(const std::string& text, const std::string& path);  // throws ScenarioError

}  // namespace ddplab
