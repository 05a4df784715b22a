// Run under mpirun. The contract of "one plan, two executors": for a strategy and world size, over a window
// of micro-steps that covers its step pattern (its warm-up, then two steady blocks), the runtime
// (PlanExecutor over MPI, real tensors) and the simulator (SimGrid replay of the same plans, back to back in
// one simulation) send exactly the same bytes from each rank to each peer, and the same bytes in each op of
// each plan.
#include <gtest/gtest.h>

#include "mpi_test_main.hpp"

#include <algorithm>
#include <map>
#include <random>
#include <string>
#include <vector>

#include "ddplab/runtime/communicator.hpp"
#include "ddplab/runtime/model.hpp"
#include "ddplab/strategies/model_library.hpp"
#include "ddplab/runtime/plan_executor.hpp"
#include "ddplab/simulator/simulator.hpp"

namespace ddplab {
namespace {

constexpr int kMinSteps = 3;  // at least the first sync step, the bucket rebuild after it, and one more
constexpr int kMaxSteps = 24;
constexpr int kBatch = 16;

struct Case {
  std::string label;
  StrategyConfig config;
  int ranks_per_node = 1;
  bool clip = false;  // global-norm clipping: the plan's GradNorm, and NormSync's allreduce where sharded
  bool cnn = false;   // a small CNN with SyncBatchNorm (its sync_bn ops) instead of the MLP
};

void PrintTo(const Case& c, std::ostream* os) { *os << c.label; }  // gtest names the case in failures

Case make_case(std::string label, std::string policy, std::string schedule, std::string codec = "none",
               CodecOptions options = {}) {
  Case c;
  c.label = std::move(label);
  c.config.name = c.label;
  c.config.policy = std::move(policy);
  c.config.schedule = std::move(schedule);
  c.config.codec = std::move(codec);
  c.config.codec_options = std::move(options);
  // Caps small enough for several buckets on the small MLP, so the rebuild after step 0 changes them.
  c.config.bucket_cap = 100000;
  c.config.first_bucket_cap = 20000;
  return c;
}

std::vector<Case> cases() {
  std::vector<Case> v;
  v.push_back(make_case("overlap_ring", "overlap", "ring"));
  Case hd = make_case("bucketed_halving_doubling", "bucketed", "halving_doubling");
  hd.config.bucket_cap = 30000;
  hd.config.first_bucket_cap = 5000;
  v.push_back(hd);
  v.push_back(make_case("overlap_double_binary_tree", "overlap", "double_binary_tree"));
  Case hier = make_case("overlap_hierarchical_2_per_node", "overlap", "hierarchical");
  hier.ranks_per_node = 2;
  v.push_back(hier);
  v.push_back(make_case("overlap_fp16", "overlap", "ring", "fp16"));
  v.push_back(make_case("overlap_topk", "overlap", "ring", "topk", {{"ratio", "0.1"}}));
  v.push_back(make_case("overlap_powersgd", "overlap", "ring", "powersgd", {{"rank", "2"}, {"start_iter", "0"}}));
  // Plain allreduce for two steps, then compressed: the window crosses the change.
  v.push_back(
      make_case("overlap_powersgd_start_iter_2", "overlap", "ring", "powersgd", {{"rank", "2"}, {"start_iter", "2"}}));
  v.push_back(make_case("zero1_ring", "zero1", "ring"));
  Case local = make_case("local_sgd_direct", "local_sgd", "direct");
  local.config.policy_options["local_sgd_period"] = "1";  // averages at every step
  v.push_back(local);
  Case period = make_case("local_sgd_period_3_warmup_1", "local_sgd", "ring");
  period.config.policy_options["local_sgd_period"] =
      "3";  // one step of gradient sync, then blocks of 2 local steps and an average
  period.config.policy_options["local_sgd_warmup"] = "1";
  v.push_back(period);
  Case acc = make_case("accumulate_2_ring", "overlap", "ring");
  acc.config.accumulate_steps = 2;
  v.push_back(acc);
  v.push_back(make_case("ps_colocated", "ps", "native"));
  // ZeRO-3 gathers on accumulating micro-steps too, and syncs their sum on the window's last.
  Case zero3_acc = make_case("zero3_accumulate_2_ring", "zero3", "ring");
  zero3_acc.config.accumulate_steps = 2;
  v.push_back(zero3_acc);
  for (const char* policy : {"overlap", "zero1", "zero3"}) {
    Case clipped = make_case(std::string(policy) + "_ring_clipped", policy, "ring");
    clipped.clip = true;
    v.push_back(clipped);
  }
  Case ps = make_case("ps_one_dedicated_server", "ps", "native");
  ps.config.policy_options["ps_servers"] = "1";
  v.push_back(ps);
  // SyncBatchNorm's statistics and gradient sums, on the critical path, beside the buckets; under gradient
  // accumulation at every micro-step. (Not under ps: its collectives are `native`, which has no per-peer
  // contract, see below.)
  Case cnn_acc = make_case("cnn_sync_bn_accumulate_2_ring", "overlap", "ring");
  cnn_acc.config.accumulate_steps = 2;
  for (Case c :
       {make_case("cnn_sync_bn_overlap_ring", "overlap", "ring"), make_case("cnn_sync_bn_zero1_ring", "zero1", "ring"),
        make_case("cnn_sync_bn_zero3_ring", "zero3", "ring"), cnn_acc}) {
    c.cnn = true;
    c.config.bucket_cap = 20000, c.config.first_bucket_cap = 4000;
    v.push_back(c);
  }
  // And everything the registries hold, so that a new schedule, codec or policy is covered without an edit
  // here: every allreduce schedule under overlap, every codec on the ring, every policy on the ring (the
  // parameter server on its own push and pull, as validate_strategies requires).
  auto known = [&](const std::string& label) {
    for (const Case& c : v)
      if (c.label == label) return true;
    return false;
  };
  // `native` is the backend's own collective: the runtime cannot see its messages (it counts the bus bytes
  // of an optimal allreduce), so there is no per-peer contract to check for it.
  for (const std::string& s : allreduce_schedule_names())
    if (s != "native" && !known("overlap_" + s)) v.push_back(make_case("overlap_" + s, "overlap", s));
  for (const CodecInfo& c : codecs())
    if (!known("overlap_" + c.name)) v.push_back(make_case("overlap_" + c.name, "overlap", "ring", c.name));
  for (const PolicyInfo& p : policies()) {
    const std::string schedule = p.shards == Shards::Servers ? "native" : "ring";
    if (!known(p.name + "_" + schedule)) v.push_back(make_case(p.name + "_" + schedule, p.name, schedule));
    // And with every option of the policy away from its default (the registry's example values).
    if (p.options.empty() || known(p.name + "_" + schedule + "_options")) continue;
    Case c = make_case(p.name + "_" + schedule + "_options", p.name, schedule);
    for (const OptionSpec& o : p.options) c.config.policy_options[o.name] = o.example;
    v.push_back(c);
  }
  return v;
}

Scenario scenario(const Case& c) {
  Scenario s;
  s.name = "contract";
  s.model.layers = {784, 64, 32, 10};
  if (c.cnn) {
    s.model.type = ModelType::Cnn;
    s.model.conv = {4, 8};
    s.model.kernel = 3;
    s.model.hidden = {16};
    s.model.bn = "sync";
  }
  s.train.batch_size = kBatch;
  s.train.seed = 7;
  s.train.clip_grad_norm = c.clip ? 1.0 : 0.0;
  return s;
}

// What one rank sent at one step: bytes per peer (world entries) then bytes per plan op.
using Sent = std::vector<std::uint64_t>;

// The window: the pattern's warm-up and two steady blocks.
int window(const Scenario& sc, const Case& c, int n) {
  const StepPattern p =
      Strategy(c.config, model_spec_for(sc.model), strategy_context(sc, n, c.ranks_per_node)).pattern();
  // At most kMaxSteps: a long warm-up (PowerSGD's default start_iter is 1000) is covered by its first steps;
  // the cases above that cross a change keep their warm-up short.
  return std::clamp<int>(static_cast<int>(p.warmup_steps() + 2 * p.period()), kMinSteps, kMaxSteps);
}

std::vector<Sent> run_runtime(const Scenario& sc, const Case& c, int steps) {
  Communicator& comm = *g_comm;
  const int n = comm.size(), features = sc.model.input_features(), classes = sc.model.output_classes();
  auto ops = make_ops("cpu");
  const std::unique_ptr<Model> owned = make_model(*ops, sc.model, kBatch);
  Model& model = *owned;
  model.init(sc.train.seed);
  Strategy strategy(c.config, model.spec(), strategy_context(sc, n, c.ranks_per_node));
  OptimizerConfig oc;
  oc.clip_grad_norm = sc.train.clip_grad_norm;
  DeviceBuffer x(*ops, static_cast<std::size_t>(kBatch * features));
  std::int32_t* y = ops->alloc_labels(kBatch);
  std::vector<Sent> out;
  {
    PlanExecutor exec(comm, *ops, model, strategy, oc);
    std::mt19937 rng(1000u * static_cast<unsigned>(comm.rank()) + 1);
    std::uniform_real_distribution<float> pixel(0.0f, 1.0f);
    std::vector<float> hx(static_cast<std::size_t>(kBatch * features));
    std::vector<std::int32_t> hy(kBatch);
    for (int step = 0; step < steps; ++step) {
      for (float& v : hx) v = pixel(rng);
      for (auto& v : hy) v = static_cast<std::int32_t>(rng() % static_cast<unsigned>(classes));
      ops->to_device(x.data(), hx.data(), hx.size());
      ops->labels_to_device(y, hy.data(), hy.size());
      const StepRecord rec = exec.run_step(step, x.data(), y, kBatch);
      Sent s(static_cast<std::size_t>(n), 0);
      for (const auto& [peer, bytes] : rec.bytes_to_peer) s.at(static_cast<std::size_t>(peer)) = bytes;
      for (const OpRecord& op : rec.ops) s.push_back(op.bytes);
      out.push_back(std::move(s));
    }
  }
  ops->free_labels(y);
  return out;
}

class Contract : public ::testing::TestWithParam<Case> {};

TEST_P(Contract, RuntimeAndSimulatorSendTheSameBytes) {
  Communicator& comm = *g_comm;
  const Case& c = GetParam();
  const Scenario sc = scenario(c);
  const int n = comm.size();
  const int steps = window(sc, c, n);
  const std::vector<Sent> mine = run_runtime(sc, c, steps);

  std::vector<SimStepResult> sim;
  if (comm.rank() == 0) {
    std::vector<std::int64_t> numbers(static_cast<std::size_t>(steps));
    for (int s = 0; s < steps; ++s) numbers[static_cast<std::size_t>(s)] = s;
    sim = simulate_steps(sc, c.config, n, 1e-3, 1e-4, numbers, {}, c.ranks_per_node);
    EXPECT_EQ(sim.size(), static_cast<std::size_t>(steps)) << c.label;
  }
  std::uint64_t nonzero_steps = 0;
  std::map<std::pair<int, int>, std::uint64_t> runtime_window, simulated_window;
  for (int step = 0; step < steps; ++step) {
    const Sent& s = mine[static_cast<std::size_t>(step)];
    std::vector<std::uint64_t> all(s.size() * static_cast<std::size_t>(n));  // every rank's Sent (same size)
    comm.gather(s.data(), s.size() * sizeof(std::uint64_t), all.data(), 0);
    if (comm.rank() != 0 || static_cast<std::size_t>(step) >= sim.size()) continue;

    const SimStepResult& simulated_step = sim[static_cast<std::size_t>(step)];
    EXPECT_EQ(simulated_step.step, step) << c.label;
    std::map<std::pair<int, int>, std::uint64_t> runtime, simulated;
    for (const auto& [pair, bytes] : simulated_step.bytes_between)
      if (bytes > 0) simulated[pair] = bytes, simulated_window[pair] += bytes;
    const std::size_t ops = s.size() - static_cast<std::size_t>(n);
    for (int r = 0; r < n; ++r) {
      const std::uint64_t* row = all.data() + static_cast<std::size_t>(r) * s.size();
      for (int peer = 0; peer < n; ++peer)
        if (row[peer] > 0) runtime[{r, peer}] = row[peer], runtime_window[{r, peer}] += row[peer];
      const auto& trace = simulated_step.ranks.at(static_cast<std::size_t>(r)).trace;
      // No ASSERT between collectives: a rank returning early would leave the others waiting.
      EXPECT_EQ(trace.size(), ops) << c.label << " step " << step;
      for (std::size_t i = 0; i < ops && i < trace.size(); ++i)
        EXPECT_EQ(trace[i].bytes, row[static_cast<std::size_t>(n) + i])
            << c.label << " step " << step << " rank " << r << " op " << trace[i].name;
    }
    EXPECT_EQ(runtime, simulated) << c.label << " step " << step;
    nonzero_steps += runtime.empty() ? 0 : 1;
  }
  if (comm.rank() == 0) {
    EXPECT_EQ(runtime_window, simulated_window) << c.label << " over micro-steps 0.." << steps - 1;
    EXPECT_GT(nonzero_steps, 0u) << c.label << ": nothing was sent, the comparison proves nothing";
  }
}

INSTANTIATE_TEST_SUITE_P(Strategies, Contract, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.label; });

}  // namespace
}  // namespace ddplab
