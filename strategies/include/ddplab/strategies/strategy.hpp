// A strategy: a scenario's [[strategy]] entry made concrete for one model and world size. It owns the
// bucketing and the codec state, and emits the step plan that the runtime and the simulator execute.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "ddplab/core/scenario.hpp"
#include "ddplab/core/step_pattern.hpp"
#include "ddplab/strategies/bucketing.hpp"
#include "ddplab/strategies/codec.hpp"
#include "ddplab/strategies/model_spec.hpp"
#include "ddplab/strategies/options.hpp"
#include "ddplab/strategies/pipeline.hpp"
#include "ddplab/strategies/plan.hpp"

namespace ddplab {

struct StrategyContext {
  int world_size = 1;
  int ranks_per_node = 1;
  int batch_size = 1;           // per rank per micro-step, for the compute estimates
  std::uint64_t seed = 1;       // codec randomness (PowerSGD's initial Q), identical on every rank
  bool clip_grad_norm = false;  // updates wait for the global gradient norm (GradNorm, NormSync ops)
  // [parallel] pp > 1: the model is this stage's (pipeline_stage), world_size and ranks_per_node are its DP
  // group's, and the compute pass runs the stage's microbatches in the schedule's order.
  PipelineStage pipeline{};
  // [parallel] tp > 1: the model is one rank's share (tensor_parallel.hpp), TpSync ops run over a TP group
  // of `tp` ranks, tp_ranks_per_node of them on a node. The pass is then always the pipeline's (one stage
  // when pp = 1).
  int tp = 1;
  int tp_ranks_per_node = 1;
  // [train] precision and recompute: the type of the activations (what a stage holds, sends and allreduces
  // over TP), and whether each numbered block's forward runs again before its backward (OpKind::Recompute).
  ElemType activations = ElemType::F32;
  bool recompute = false;
};
// The type [train] precision holds activations in (the tables' activation sizes are fp32's).
ElemType activation_type(const TrainConfig& train);
// The context of a scenario's run on world_size ranks, ranks_per_node to a node.
StrategyContext strategy_context(const Scenario& scenario, int world_size, int ranks_per_node);

class Strategy;

// Who runs the optimizer on which part of a bucket (ShardOptimizer).
enum class Shards {
  None,     // every rank updates whole buckets (Optimizer)
  Ranks,    // rank r updates chunk r of n (ZeRO-1: ReduceScatter / ShardOptimizer / AllGather)
  Servers,  // parameter servers update their shards (Push / ShardOptimizer / Pull), PsLayout
};

// How a policy's plans change with the optimizer step: the steps at which they start to differ from the
// step before (PlanChange: `what` names the plans that end there), and the period, in optimizer steps, of
// its plans after the last change (local SGD: H). The Strategy turns this into its StepPattern.
struct PolicyTiming {
  std::vector<PlanChange> changes;
  std::int64_t period = 1;
  std::string steady;  // what the steady block does, when period > 1 ("parameters averaged every 4 steps")
};

// A sync policy: one file under src/policies/, one line in policies.cpp.
struct PolicyInfo {
  std::string name;
  std::string summary;
  bool bucketed;  // buckets follow the caps (else one bucket holds every gradient)
  Shards shards;
  void (*build)(const Strategy& strategy, std::int64_t step, StepPlan& plan);  // the ops of one sync step
  PolicyTiming (*timing)(const StrategyConfig&) = nullptr;                     // nullptr: every optimizer step alike
  // Work at the end of a run, as plan ops that need no batch (comm and optimizer only); nullptr: none.
  // Local SGD ends on the average of the ranks' models.
  void (*finish)(const Strategy& strategy, StepPlan& plan) = nullptr;
  std::vector<OptionSpec> options = {};  // its [[strategy]] keys beyond kStrategyFields (integers)
  // Whether it runs data.uneven = "join": a rank out of data shadows the gradient syncs with zeros. Policies
  // that average parameters or serve shards from dedicated ranks do not.
  bool joins = true;
  // Its ZeRO stage (Rajbhandari et al. 2020): 1 shards the optimizer state (Shards::Ranks), 2 the
  // gradients too, a rank giving back those outside its shard once they are reduce-scattered (Ops::release
  // in the runtime; DeviceMemory counts only the shard), 3 the parameters too, each bucket whole only
  // between its AllGather and Reshard; 0 for the others.
  int zero = 0;
  // The ops of a micro-step that only accumulates (accumulate_steps > 1, sync = false); nullptr: the compute
  // pass alone (DDP's no_sync()). ZeRO-3 gathers its parameters there too.
  void (*accumulate)(const Strategy& strategy, std::int64_t step, StepPlan& plan) = nullptr;
  // What its simulated figures were found to miss against published runs, printed with them ("": nothing
  // beyond the figures docs/published-comparisons.md states).
  std::string caveat = "";
};
const std::vector<PolicyInfo>& policies();
// The registered policy of that name, or nullptr.
const PolicyInfo* find_policy(const std::string& name);
// The value of one of the strategy's policy options: the one set, else the option's fallback. Throws
// InputError when the policy has no such option or the text is not an integer in its range
// (validate_strategies reports the same with file:line:col).
long long policy_option(const StrategyConfig& config, const std::string& name);
// Throws InputError for a policy option the policy does not have, or one out of its range.
void check_policy_options(const StrategyConfig& config);
// The strategy, then the same strategy under each other registered ZeRO stage (PolicyInfo::zero), by stage,
// for a policy that syncs gradients every step (shards None or Ranks, no timing); else the strategy alone.
// What `simulate --search --zero-stages` tries for each layout.
std::vector<StrategyConfig> zero_stage_variants(const StrategyConfig& config);
// What a rank gives back under the policy's ZeRO stage, for the refusals of backends that cannot ("the
// gradients outside a rank's shard once they are reduce-scattered", and at stage 3 its parameters too); ""
// below stage 2.
std::string released_memory(const PolicyInfo& policy);
// Where a parameter-server strategy's servers are: "2 dedicated servers" or "co-located servers".
std::string describe_servers(const StrategyConfig& config);
// True when the strategy's policy syncs through parameter servers (Shards::Servers: push and pull on the
// "ps" schedules, whatever `schedule` says).
bool uses_parameter_servers(const StrategyConfig& config);

// Checks every [[strategy]] of the scenario against the registries (policy, schedule, codec and its
// options, combinations). Throws ScenarioError citing the file:line:col of the offending value.
void validate_strategies(const Scenario& scenario);
// load_scenario + validate_strategies.
Scenario load_validated_scenario(const std::string& path);

class Strategy {
 public:
  Strategy(const StrategyConfig& config, const ModelSpec& model, const StrategyContext& ctx);

  const StrategyConfig& config() const { return config_; }
  const ModelSpec& model() const { return model_; }
  const StrategyContext& context() const { return ctx_; }
  const PolicyInfo& policy() const { return *policy_; }
  const Bucketing& bucketing() const { return bucketing_; }
  Codec& codec() const { return *codec_; }

  // The plan of micro-step `step`. Micro-steps that only accumulate (accumulate_steps > 1) have sync = false.
  StepPlan plan(std::int64_t step) const;
  bool is_sync_step(std::int64_t step) const;
  // The plans of a whole run (step_pattern.hpp), from the policy's timing, the codec's plan changes, the
  // accumulation window and the bucket rebuild after the first step (assumed to observe the model's
  // expected ready order). Segments whose plans are identical are merged, and the steady state starts at
  // the earliest step from which the plans repeat, so a strategy whose every step is alike has no warm-up.
  StepPattern pattern() const;
  // The plan of the policy's end-of-run work (an empty plan when it has none), numbered `step`.
  StepPlan finish_plan(std::int64_t step) const;

  // DDP rebuilds its buckets once, from the gradient-ready order seen in the first step. Returns true when
  // the layout changed (the runtime must then move parameters and optimizer state to the new offsets).
  bool observe_ready_order(const std::vector<int>& order);
  bool rebuilt() const { return rebuilt_; }

  // Parameter server roles (Shards::Servers with ps_servers > 0): the last ps_servers ranks serve and run
  // no forward or backward. Otherwise every rank is a worker.
  PsLayout ps_layout() const;
  bool is_worker(int rank) const { return ps_layout().is_worker(rank); }
  int workers() const { return ps_layout().workers(); }
  // The part of bucket b whose optimizer update `rank` runs in a ShardOptimizer op: chunk r of n (ZeRO-1),
  // the shard it serves (ps), or an empty chunk.
  Chunk shard(int bucket, int rank) const;
  // The parameter ranges (offsets into the bucketed parameter buffer, ascending, disjoint) whose optimizer
  // state `rank` keeps: all of them when no one shards the update; its chunk of every bucket under ZeRO-1;
  // the shards it serves under a parameter server (none on a worker beside dedicated servers).
  std::vector<Chunk> optimizer_ranges(int rank) const;
  // The Schedule a collective call of this strategy's plan runs on, in both executors ("native" replays
  // as native_as).
  Schedule schedule_for(const CollectiveCall& call, const std::string& schedule, const NativeReplay& native_as = {},
                        const NcclFabric* nccl = nullptr, CommGroup group = CommGroup::Data) const;
  // Where that schedule runs: the group's size, ranks per node and servers (count left 0).
  ScheduleParams schedule_params(CommGroup group, const NcclFabric* nccl = nullptr) const;

  // Helpers for policies: the ops every step starts with, and a comm op for a bucket.
  // add_compute_pass adds Forward and one Backward per layer (last layer first); returns the Backward ids
  // indexed by layer.
  // Under a pipeline it adds the stage's passes of every microbatch instead (pipeline_plan.cpp), and the
  // ids are the last microbatch's backward of each layer, after which its gradients are complete.
  std::vector<int> add_compute_pass(StepPlan& plan, std::int64_t step) const;
  // Its two halves without a pipeline, for policies that put ops between the layers (ZeRO-3). The forward in
  // chunks through each layer of ModelSpec::forward_chunks(cuts) (one Forward, index -1, when that is the last
  // layer alone), each chunk before a SyncBatchNorm layer followed by its SyncBnStats: before(end) returns
  // what the chunk through layer `end` waits for besides the op before it, after(end, id) runs once the chunk
  // (op id) is added. Returns the last op's id. The backward from the last layer down after op `prev`:
  // before(l) and after(l, id) likewise for layer l's Backward; returns the Backward ids by layer.
  using PassBefore = std::function<std::vector<int>(int)>;
  using PassAfter = std::function<void(int, int)>;
  int add_forward_pass(StepPlan& plan, const std::vector<int>& cuts = {}, const PassBefore& before = {},
                       const PassAfter& after = {}) const;
  std::vector<int> add_backward_pass(StepPlan& plan, int prev, const PassBefore& before = {},
                                     const PassAfter& after = {}) const;
  int add_op(StepPlan& plan, OpKind kind, int index, std::vector<int> deps) const;
  // The Backward op after which every gradient of bucket b is ready.
  int ready_op(const std::vector<int>& backward_ids, int bucket) const;

 private:
  StrategyConfig config_;
  ModelSpec model_;
  StrategyContext ctx_;
  const PolicyInfo* policy_ = nullptr;
  int servers_ = 0;  // dedicated parameter servers (Shards::Servers), from the policy's ps_servers option
  Bucketing bucketing_;
  std::unique_ptr<Codec> codec_;
  bool rebuilt_ = false;
  void bucketize(const std::vector<int>& order);
  void add_grad_norm(StepPlan& plan) const;
  std::vector<int> add_pipeline_pass(StepPlan& plan) const;
  std::size_t largest_shard(const Bucket& b) const;  // of a sharding policy: chunk 0, which sets the pace
};

}  // namespace ddplab
