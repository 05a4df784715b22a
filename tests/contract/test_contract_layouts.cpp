// Run under mpirun -np 4. The byte contract of "one plan, two executors" for model-parallel layouts: the
// runtime (SplitModel shares through PlanExecutor over their DP, TP and pipeline groups) and the simulator
// (each rank's stage plan replayed) send the same bytes from each rank to each other rank, and the same
// bytes in each op, over the first steps (the first sync, the bucket rebuild after it, a steady step).
// Pairs inside a TP group are left out of the per-pair comparison: its allreduces are `native`, the MPI
// library's own, whose messages the runtime cannot see (their per-op bytes are compared).
#include <gtest/gtest.h>

#include "mpi_test_main.hpp"

#include <map>
#include <random>
#include <string>
#include <vector>

#include "ddplab/runtime/model_parallel.hpp"
#include "ddplab/runtime/plan_executor.hpp"
#include "ddplab/simulator/simulator.hpp"

namespace ddplab {
namespace {

constexpr int kSteps = 4, kBatch = 8;

struct Case {
  std::string label;
  int tp = 1, pp = 1, microbatches = 1, virtual_stages = 1;
  std::string schedule = "1f1b", policy = "overlap";
  bool cnn = false;  // a small CNN (conv blocks on the first stage) instead of the MLP
  std::string codec = "none";
  std::map<std::string, std::string> codec_options = {};
};
void PrintTo(const Case& c, std::ostream* os) { *os << c.label; }

Scenario scenario(const Case& c) {
  Scenario sc;
  sc.path = "<contract>";
  sc.name = "contract-layouts";
  sc.model.layers = {784, 64, 32, 16, 10};
  if (c.cnn) {
    sc.model.type = ModelType::Cnn;
    sc.model.conv = {4, 8};
    sc.model.kernel = 3;
    sc.model.hidden = {16};
  }
  sc.train.batch_size = kBatch;
  sc.train.seed = 7;
  sc.parallel.tp = c.tp, sc.parallel.pp = c.pp, sc.parallel.microbatches = c.microbatches;
  sc.parallel.pipeline_schedule = c.schedule, sc.parallel.virtual_stages = c.virtual_stages;
  return sc;
}

StrategyConfig strategy_config(const Case& c) {
  StrategyConfig s;
  s.name = c.label;
  s.policy = c.policy;
  s.schedule = "ring";
  s.bucket_cap = 40000, s.first_bucket_cap = 8000;  // several buckets per stage, changed by the rebuild
  s.codec = c.codec, s.codec_options = c.codec_options;
  return s;
}

// What one rank sent at one step: bytes to each world rank, then bytes per plan op.
using Sent = std::vector<std::uint64_t>;

std::vector<Sent> run_runtime(const Scenario& sc, const StrategyConfig& config) {
  Communicator& world = *g_comm;
  const int n = world.size();
  RankParallel rp(sc, world, 1);
  const ParallelLayout& layout = rp.layout();
  const RankCoord me = rp.coord();
  auto ops = make_ops("cpu");
  const std::unique_ptr<Model> model = rp.make_model(*ops, sc.model, kBatch);
  model->init(sc.train.seed);
  Strategy strategy(config, rp.stage().model, rp.stage().context);
  std::vector<Sent> out;
  PlanExecutor exec(rp.data(), *ops, *model, strategy, OptimizerConfig{});
  rp.attach(exec);
  std::mt19937 rng(100u + static_cast<unsigned>(me.dp));  // a replica's ranks share its batch
  std::uniform_real_distribution<float> pixel(0.0f, 1.0f);
  std::vector<float> x(static_cast<std::size_t>(kBatch * sc.model.input_features()));
  std::vector<std::int32_t> y(kBatch);
  for (int step = 0; step < kSteps; ++step) {
    for (float& v : x) v = pixel(rng);
    for (auto& v : y) v = static_cast<std::int32_t>(rng() % 10u);
    const StepRecord rec = exec.run_step(step, x.data(), y.data(), kBatch);
    Sent s(static_cast<std::size_t>(n), 0);
    for (const auto& [peer, bytes] : rec.bytes_to_peer)
      s.at(static_cast<std::size_t>(layout.rank({me.tp, me.pp, peer}))) += bytes;
    for (const auto& [stage, bytes] : rec.bytes_to_stage)
      s.at(static_cast<std::size_t>(layout.rank({me.tp, stage, me.dp}))) += bytes;
    for (const OpRecord& op : rec.ops) s.push_back(op.bytes);
    out.push_back(std::move(s));
  }
  exec.finish(kSteps);
  return out;
}

class ContractLayouts : public ::testing::TestWithParam<Case> {};

TEST_P(ContractLayouts, RuntimeAndSimulatorSendTheSameBytes) {
  Communicator& comm = *g_comm;
  if (comm.size() != 4) GTEST_SKIP() << "the layouts are of 4 ranks";
  const Case& c = GetParam();
  const Scenario sc = scenario(c);
  const StrategyConfig config = strategy_config(c);
  const ParallelLayout layout(sc.parallel, comm.size());
  const int n = comm.size();
  const std::vector<Sent> mine = run_runtime(sc, config);
  std::vector<SimStepResult> sim;
  if (comm.rank() == 0) sim = simulate_steps(sc, config, n, 1e-3, 1e-4, {0, 1, 2, 3}, {}, 1);
  std::uint64_t p2p = 0, dp = 0;  // bytes seen between stages and within DP groups: the check compared something
  for (int step = 0; step < kSteps; ++step) {
    const Sent& s = mine[static_cast<std::size_t>(step)];
    // Every rank's Sent, each padded to the longest plan's size (stages' plans differ in length).
    std::uint64_t len = s.size(), longest = 0;
    std::vector<std::uint64_t> lens(static_cast<std::size_t>(n));
    comm.gather(&len, sizeof len, lens.data(), 0);
    if (comm.rank() == 0)
      for (auto l : lens) longest = std::max(longest, l);
    comm.broadcast(&longest, sizeof longest, 0);
    Sent padded = s;
    padded.resize(longest, 0);
    std::vector<std::uint64_t> all(longest * static_cast<std::size_t>(n));
    comm.gather(padded.data(), longest * sizeof(std::uint64_t), all.data(), 0);
    if (comm.rank() != 0) continue;
    ASSERT_EQ(sim.size(), static_cast<std::size_t>(kSteps)) << c.label;
    const SimStepResult& simulated_step = sim[static_cast<std::size_t>(step)];
    std::map<std::pair<int, int>, std::uint64_t> runtime, simulated;
    auto same_tp_group = [&](int a, int b) {
      const RankCoord x = layout.coord(a), y = layout.coord(b);
      return x.pp == y.pp && x.dp == y.dp;
    };
    for (const auto& [pair, bytes] : simulated_step.bytes_between)
      if (bytes > 0 && !same_tp_group(pair.first, pair.second)) simulated[pair] = bytes;
    for (int r = 0; r < n; ++r) {
      const std::uint64_t* row = all.data() + static_cast<std::size_t>(r) * longest;
      for (int peer = 0; peer < n; ++peer)
        if (row[peer] > 0) {
          runtime[{r, peer}] = row[peer];
          (layout.coord(peer).pp != layout.coord(r).pp ? p2p : dp) += row[peer];
        }
      const auto& trace = simulated_step.ranks.at(static_cast<std::size_t>(r)).trace;
      const std::size_t ops = lens[static_cast<std::size_t>(r)] - static_cast<std::size_t>(n);
      EXPECT_EQ(trace.size(), ops) << c.label << " step " << step << " rank " << r;
      for (std::size_t i = 0; i < ops && i < trace.size(); ++i)
        EXPECT_EQ(trace[i].bytes, row[static_cast<std::size_t>(n) + i])
            << c.label << " step " << step << " rank " << r << " op " << i << " " << trace[i].name;
    }
    EXPECT_EQ(runtime, simulated) << c.label << " step " << step;
  }
  if (comm.rank() == 0) {
    if (layout.dp() > 1) {
      EXPECT_GT(dp, 0u) << c.label << ": no DP sync was compared";
    }
    if (layout.pp() > 1) {
      EXPECT_GT(p2p, 0u) << c.label << ": no pipeline send was compared";
    }
  }
}

std::vector<Case> cases() {
  std::vector<Case> v = {
      {"pp2_dp2_gpipe_1", 1, 2, 1, 1, "gpipe"},
      {"pp2_dp2_1f1b_4", 1, 2, 4, 1, "1f1b"},
      {"pp2_dp2_interleaved_2x2", 1, 2, 2, 2, "interleaved"},
      {"tp2_dp2", 2, 1, 1, 1, "1f1b"},
      {"tp2_pp2_1f1b_2", 2, 2, 2, 1, "1f1b"},
      {"cnn_pp2_dp2_1f1b_2", 1, 2, 2, 1, "1f1b", "overlap", true},
      {"cnn_tp2_dp2", 2, 1, 1, 1, "1f1b", "overlap", true},
  };
  // Every sync policy but the parameter server and ZeRO-3 (refused with a split model) and every codec (with
  // its options away from their defaults: PowerSGD compressing from the first step) on PP 2 x DP 2.
  for (const PolicyInfo& p : policies())
    if (p.shards != Shards::Servers && p.zero < 3 && p.name != "overlap")
      v.push_back({"pp2_dp2_1f1b_2_" + p.name, 1, 2, 2, 1, "1f1b", p.name});
  for (const CodecInfo& codec : codecs()) {
    if (codec.name == "none") continue;
    Case c{"pp2_dp2_1f1b_2_" + codec.name, 1, 2, 2, 1, "1f1b"};
    c.codec = codec.name;
    for (const OptionSpec& o : codec.options) c.codec_options[o.name] = o.example;
    v.push_back(c);
  }
  return v;
}

INSTANTIATE_TEST_SUITE_P(Layouts, ContractLayouts, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& info) { return info.param.label; });

}  // namespace
}  // namespace ddplab
