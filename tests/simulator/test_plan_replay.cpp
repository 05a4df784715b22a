// Step plans on the simulator: bytes equal to the plan's schedules, overlap, accumulation, codec work,
// sharded optimizer, the trace, and the step a sweep picks.
#include <gtest/gtest.h>

#include <set>

#include <map>

#include "ddplab/core/error.hpp"
#include "ddplab/simulator/calibration.hpp"
#include "ddplab/simulator/simulator.hpp"
#include "ddplab/strategies/strategy.hpp"
#include "sim_test_util.hpp"

namespace ddplab {
namespace {

using PairBytes = std::map<std::pair<int, int>, std::uint64_t>;

Scenario small() { return test::small_mlp_scenario("plantest"); }

using test::alpha_beta;

StrategyConfig strategy(std::string policy, std::string schedule, std::string codec = "none",
                        CodecOptions options = {}) {
  StrategyConfig c;
  c.name = policy + "+" + schedule + "+" + codec;
  c.policy = std::move(policy);
  c.schedule = std::move(schedule);
  c.codec = std::move(codec);
  c.codec_options = std::move(options);
  return c;
}

// What the plan says goes on the wire, computed without the simulator: every call's schedule, summed.
PairBytes plan_bytes(const Scenario& sc, const StrategyConfig& c, int n, int rpn, std::int64_t step) {
  const ModelSpec m = ModelSpec::mlp(sc.model.layers);
  Strategy s(c, m, {n, rpn, sc.train.batch_size, sc.train.seed});
  if (step >= c.accumulate_steps) s.observe_ready_order(m.expected_ready_order());
  PairBytes out;
  for (const PlanOp& op : s.plan(step).ops)
    for (const CollectiveCall& call : op.calls) {
      const Schedule sch = schedule_for_call(call, op.schedule, n, rpn);
      for (int r = 0; r < n; ++r)
        for (const auto& st : sch.ranks[static_cast<std::size_t>(r)])
          for (const auto& snd : st.sends) out[{r, snd.peer}] += snd.chunk.count * elem_bytes(call.type);
    }
  std::erase_if(out, [](const auto& e) { return e.second == 0; });
  return out;
}

PairBytes nonzero(PairBytes b) {
  std::erase_if(b, [](const auto& e) { return e.second == 0; });
  return b;
}

TEST(SimulatorPlan, BytesAreThoseOfThePlansSchedules) {
  const Scenario sc = small();
  std::vector<std::pair<StrategyConfig, int>> cases;  // strategy, ranks per node
  cases.push_back({strategy("overlap", "ring"), 1});
  StrategyConfig hd = strategy("bucketed", "halving_doubling");
  hd.bucket_cap = 100000;
  hd.first_bucket_cap = 20000;
  cases.push_back({hd, 1});
  cases.push_back({strategy("overlap", "double_binary_tree"), 1});
  cases.push_back({strategy("overlap", "hierarchical"), 2});
  cases.push_back({strategy("overlap", "ring", "fp16"), 1});
  cases.push_back({strategy("overlap", "ring", "topk", {{"ratio", "0.1"}}), 1});
  cases.push_back({strategy("overlap", "ring", "powersgd", {{"rank", "2"}, {"start_iter", "0"}}), 1});
  cases.push_back({strategy("zero1", "ring"), 1});
  cases.push_back({strategy("zero3", "ring"), 1});
  cases.push_back({strategy("local_sgd", "direct"), 1});
  for (const auto& [c, rpn] : cases)
    for (int n : {3, 4}) {
      const auto r = simulate_step(sc, c, n, 0.01, 0.001, alpha_beta(), {1, rpn});
      const PairBytes expected = plan_bytes(sc, c, n, rpn, 1);
      EXPECT_FALSE(expected.empty()) << c.name;
      EXPECT_EQ(nonzero(r.bytes_between), expected) << c.name << " n=" << n;
      for (int rank = 0; rank < n; ++rank) {
        std::uint64_t sum = 0;
        for (const auto& [pair, bytes] : expected)
          if (pair.first == rank) sum += bytes;
        EXPECT_EQ(r.bytes_sent[static_cast<std::size_t>(rank)], sum) << c.name << " rank " << rank;
      }
    }
}

TEST(SimulatorPlan, OverlapHidesCommBehindBackward) {
  Scenario sc = small();
  sc.model.layers = {784, 1024, 1024, 1024, 10};
  const int n = 4;
  StrategyConfig c = strategy("overlap", "ring");
  c.bucket_cap = 1 << 20;  // several buckets, most of them ready before backward ends
  const auto over = simulate_step(sc, c, n, 0.05, 0.005, alpha_beta(), {1, 1});
  c.policy = "bucketed";
  const auto after = simulate_step(sc, c, n, 0.05, 0.005, alpha_beta(), {1, 1});
  EXPECT_LT(over.exposed_comm_s, 0.5 * over.comm_s);
  // After backward only the optimizer updates of earlier buckets can hide the later buckets' comm.
  EXPECT_GE(after.exposed_comm_s, after.comm_s - after.optimizer_s - 1e-9);
  EXPECT_LT(over.step_s, after.step_s);
  for (const auto* r : {&over, &after})
    for (const SimRankTimes& t : r->ranks) {
      // The compute stream is always working or waiting, so its times add up to the step.
      EXPECT_NEAR(t.step_s, t.compute_s + t.optimizer_s + t.exposed_comm_s, 1e-9);
      // The codec's average (a divide of each bucket, 8 bytes per element at 10 GB/s) shares the core.
      const double divides = 8.0 * static_cast<double>(ModelSpec::mlp(sc.model.layers).parameter_count()) / 10e9;
      EXPECT_GE(t.compute_s, 0.05 - 1e-9);
      EXPECT_LE(t.compute_s + t.optimizer_s, 0.055 + divides + 1e-9);
      EXPECT_GE(t.optimizer_s, 0.005 - 1e-9);
    }
}

TEST(SimulatorPlan, AccumulationMicroStepsOnlyCompute) {
  const Scenario sc = small();
  StrategyConfig c = strategy("overlap", "ring");
  c.accumulate_steps = 2;
  const auto quiet = simulate_step(sc, c, 3, 0.01, 0.002, alpha_beta(), {2, 1});
  EXPECT_TRUE(nonzero(quiet.bytes_between).empty());
  EXPECT_EQ(quiet.comms, 0u);
  EXPECT_NEAR(quiet.step_s, 0.01, 1e-7);
  EXPECT_EQ(quiet.optimizer_s, 0.0);
  const auto sync = simulate_step(sc, c, 3, 0.01, 0.002, alpha_beta(), {3, 1});
  EXPECT_EQ(nonzero(sync.bytes_between), plan_bytes(sc, c, 3, 1, 3));
  EXPECT_GT(sync.step_s, 0.012);
}

TEST(SimulatorPlan, TraceFollowsThePlan) {
  Scenario sc = small();
  StrategyConfig c = strategy("overlap", "ring");
  c.bucket_cap = 200000;
  c.first_bucket_cap = 50000;
  const auto r = simulate_step(sc, c, 3, 0.02, 0.002, alpha_beta(), {1, 1});
  const ModelSpec m = ModelSpec::mlp(sc.model.layers);
  Strategy s(c, m, {3, 1, sc.train.batch_size, sc.train.seed});
  s.observe_ready_order(m.expected_ready_order());
  const StepPlan plan = s.plan(1);
  for (const SimRankTimes& t : r.ranks) {
    ASSERT_EQ(t.trace.size(), plan.ops.size());
    EXPECT_EQ(t.trace[0].name, "forward");
    EXPECT_EQ(t.trace[1].name, "backward 2");
    double compute_end = 0;
    std::uint64_t bytes = 0;
    for (const PlanOp& op : plan.ops) {
      const SimOpRecord& rec = t.trace[static_cast<std::size_t>(op.id)];
      EXPECT_EQ(rec.stream, is_comm(op.kind) ? "comm" : "compute");
      EXPECT_LE(rec.start_s, rec.end_s);
      for (int d : op.deps) EXPECT_GE(rec.start_s, t.trace[static_cast<std::size_t>(d)].end_s - 1e-12) << rec.name;
      if (!is_comm(op.kind)) {
        EXPECT_GE(rec.start_s, compute_end - 1e-12);  // one op at a time on the compute stream
        compute_end = rec.end_s;
      }
      if (is_comm(op.kind)) {
        EXPECT_GT(rec.bytes, 0u) << rec.name;
      }
      bytes += rec.bytes;
    }
    EXPECT_NEAR(t.step_s, compute_end, 1e-12);
    EXPECT_EQ(bytes, r.bytes_sent[static_cast<std::size_t>(&t - r.ranks.data())]);
  }
  const auto events = trace_events(r);
  EXPECT_EQ(events.size(), 3 * plan.ops.size());
}

// Without a calibration of codec work: each announced call takes the larger of its bytes over a core's
// memory bandwidth (10 GB/s; no [cluster].device_mem_bw here) and its FLOPs at the rate compute_s implies.
// With one, each kind takes its fitted time. Flat: the codec works after backward, alone on the CPU.
TEST(SimulatorPlan, CodecWorkIsChargedByKind) {
  const Scenario sc = small();
  const int n = 2;
  const double compute_s = 0.1;
  const StrategyConfig c = strategy("flat", "ring", "fp16");
  const ModelSpec m = ModelSpec::mlp(sc.model.layers);
  Strategy s(c, m, {n, 1, sc.train.batch_size, sc.train.seed});
  const StepPlan plan = s.plan(1);
  double fb = 0;
  for (const PlanOp& op : plan.ops)
    if (op.kind == OpKind::Forward || op.kind == OpKind::Backward) fb += op.flops;
  const PlanOp& sync = plan.ops.at(plan.ops.size() - 2);
  ASSERT_EQ(sync.kind, OpKind::SyncGrads);
  const CollectiveCall& call = sync.calls.at(0);
  ASSERT_EQ(call.before.size() + call.after.size(), 3u);  // divide, cast; cast back
  double model_s = 0;
  for (const auto* ws : {&call.before, &call.after})
    for (const LocalWork& w : *ws) model_s += std::max(work_bytes(w) / 10e9, work_flops(w) * compute_s / fb);
  const auto wire = simulate_schedule(sc.cluster, schedule_for_call(call, "ring", n, 1), 2, alpha_beta());
  const auto r = simulate_step(sc, c, n, compute_s, 0.0, alpha_beta(), {1, 1});
  EXPECT_NEAR(r.compute_s, compute_s, 1e-7);
  EXPECT_NEAR(r.comm_s, model_s + wire.step_s, 1e-6 * r.comm_s);

  // A calibration's fits replace the model for the kinds they cover (here all three).
  auto cal = std::make_shared<Calibration>();
  cal->name = "codec";
  cal->link_class = "mpi";
  cal->latency_s = 2 * sc.cluster.link_latency;  // the star's two links, as the scenario has them
  cal->bandwidth = sc.cluster.link_bandwidth;
  cal->segments = {{0, 1, 1}};
  cal->codec_work = {{"divide", {1e-4, 1e-9}}, {"to_half.f16", {2e-4, 2e-9}}, {"from_half.f16", {3e-4, 3e-9}}};
  const double count = static_cast<double>(call.count);
  const double fitted_s = 6e-4 + 6e-9 * count;
  SimOptions o = alpha_beta();
  o.calibration = cal;
  const auto rc = simulate_step(sc, c, n, compute_s, 0.0, o, {1, 1});
  EXPECT_NEAR(rc.comm_s - fitted_s, r.comm_s - model_s, 1e-3 * r.comm_s);
}

TEST(SimulatorPlan, CodecWorkContendsWithBackwardForTheCpu) {
  Scenario sc = small();
  sc.model.layers = {784, 1024, 1024, 1024, 10};
  StrategyConfig c = strategy("overlap", "ring", "topk", {{"ratio", "0.01"}});
  c.bucket_cap = 1 << 20;
  const auto r = simulate_step(sc, c, 2, 0.05, 0.0, alpha_beta(), {1, 1});
  // Top-k of a bucket runs on the comm stream while backward goes on: both slow down on the shared core.
  EXPECT_GT(r.compute_s, 0.05 * 1.001);
}

TEST(SimulatorPlan, MergedComputeOpsKeepEveryTime) {
  // Compute ops between two points a comm op waits for run as one Exec (plan_replay.cpp compute_groups).
  // Without a trace they merge even when codec work on the comm stream shares the core; with a trace
  // and codec work they run one Exec per op. Both must give the same times, rank by rank.
  Scenario sc = small();
  sc.model.layers = {784, 1024, 1024, 1024, 10};
  for (const StrategyConfig& base : {strategy("overlap", "ring", "topk", {{"ratio", "0.01"}}),
                                     strategy("zero1", "ring"), strategy("overlap", "halving_doubling", "fp16")}) {
    StrategyConfig c = base;
    c.bucket_cap = 1 << 20;
    c.first_bucket_cap = 1 << 18;
    SimOptions per_op = alpha_beta(), merged = alpha_beta();
    per_op.keep_trace = true;
    merged.keep_trace = false;
    const auto a = simulate_step(sc, c, 4, 0.05, 0.004, per_op, {1, 1});
    const auto b = simulate_step(sc, c, 4, 0.05, 0.004, merged, {1, 1});
    ASSERT_EQ(a.ranks.size(), b.ranks.size());
    EXPECT_TRUE(b.ranks[0].trace.empty());
    for (std::size_t r = 0; r < a.ranks.size(); ++r) {
      const SimRankTimes &x = a.ranks[r], &y = b.ranks[r];
      EXPECT_NEAR(x.step_s, y.step_s, 1e-9 * x.step_s) << c.name << " rank " << r;
      EXPECT_NEAR(x.compute_s, y.compute_s, 1e-9 * x.step_s) << c.name << " rank " << r;
      EXPECT_NEAR(x.comm_s, y.comm_s, 1e-9 * x.step_s) << c.name << " rank " << r;
      EXPECT_NEAR(x.exposed_comm_s, y.exposed_comm_s, 1e-9 * x.step_s) << c.name << " rank " << r;
      EXPECT_NEAR(x.optimizer_s, y.optimizer_s, 1e-9 * x.step_s) << c.name << " rank " << r;
    }
    EXPECT_EQ(a.bytes_between, b.bytes_between) << c.name;
  }
}

TEST(SimulatorPlan, ShardOptimizerGetsItsShare) {
  const Scenario sc = small();
  const int n = 3;
  const StrategyConfig c = strategy("zero1", "ring");
  const auto r = simulate_step(sc, c, n, 0.01, 0.03, alpha_beta(), {1, 1});
  const ModelSpec m = ModelSpec::mlp(sc.model.layers);
  Strategy s(c, m, {n, 1, sc.train.batch_size, sc.train.seed});
  s.observe_ready_order(m.expected_ready_order());
  double sum = 0;
  for (int rank = 0; rank < n; ++rank) {
    std::size_t mine = 0;
    for (const Bucket& b : s.bucketing().buckets) mine += chunk_of(b.count, n, rank).count;
    const double expected = 0.03 * static_cast<double>(mine) / static_cast<double>(m.parameter_count());
    EXPECT_NEAR(r.ranks[static_cast<std::size_t>(rank)].optimizer_s, expected, 1e-9) << rank;
    sum += r.ranks[static_cast<std::size_t>(rank)].optimizer_s;
  }
  EXPECT_NEAR(sum, 0.03, 1e-8);
}

// A whole pattern: PowerSGD's 1000 plain steps (default start_iter) are the warm-up, counted 1000 times,
// and the steady block compresses: far fewer bytes than the plain allreduce.
TEST(SimulatorPlan, PatternSeparatesWarmupAndSteadyState) {
  const Scenario sc = small();
  const StrategyConfig p = strategy("overlap", "ring", "powersgd", {{"rank", "2"}});
  const SimPatternResult r = simulate_pattern(sc, p, 3, 0.01, 0.0, alpha_beta());
  ASSERT_EQ(r.steps.size(), 2u);  // one warm-up step (the rebuild changes nothing on this MLP), one steady
  EXPECT_EQ(r.steps[0].step, 0);
  EXPECT_EQ(r.steps[1].step, 1000);
  EXPECT_LT(r.steps[1].bytes_sent[0] * 10, r.steps[0].bytes_sent[0]);
  EXPECT_EQ(r.warmup_steps, 1000);
  EXPECT_NEAR(r.warmup_s, 1000 * r.steps[0].step_s, 1e-9);
  EXPECT_NEAR(r.step_s, r.steps[1].step_s, 1e-12);
  EXPECT_NEAR(r.samples_per_s, 3 * sc.train.batch_size / r.steps[1].step_s, 1e-6);
  // The chain runs the steady step after the warm-up one: every rank starts it when it ended the first.
  for (std::size_t rank = 0; rank < 3; ++rank)
    EXPECT_NEAR(r.steps[1].ranks[rank].start_s, r.steps[0].ranks[rank].step_s, 1e-9) << rank;
}

// Local SGD with period 4: the steady block is 4 steps, of which one averages the parameters; its mean
// step is far below a flat allreduce's when comm dominates (the strategy's whole point), and above the
// compute alone.
TEST(SimulatorPlan, LocalSgdBlockAmortisesItsAverage) {
  Scenario sc = small();
  sc.cluster.link_bandwidth = 1e8;  // slow links: comm dominates
  StrategyConfig local = strategy("local_sgd", "ring");
  local.policy_options["local_sgd_period"] = "4";
  const SimPatternResult l = simulate_pattern(sc, local, 4, 0.01, 0.001, alpha_beta());
  const SimPatternResult flat = simulate_pattern(sc, strategy("flat", "ring"), 4, 0.01, 0.001, alpha_beta());
  ASSERT_EQ(l.pattern.period(), 4);
  ASSERT_EQ(l.steps.size(), 4u);
  int averaging = 0;
  for (const SimStepResult& s : l.steps) averaging += s.comm_s > 0;
  EXPECT_EQ(averaging, 1);
  const double comm = flat.comm_s;
  EXPECT_GT(comm, 0.011);  // comm dominates the flat step
  // The block: 4 x (compute + optimizer) + one parameter average as long as flat's allreduce (same bytes).
  EXPECT_NEAR(l.step_s, (4 * 0.011 + comm) / 4, 0.05 * l.step_s);
  EXPECT_LT(l.step_s, 0.7 * flat.step_s);
  EXPECT_GT(l.samples_per_s, 1.4 * flat.samples_per_s);
}

// Accumulation: K micro-steps per optimizer step, one of which communicates.
TEST(SimulatorPlan, AccumulationBlockIsItsWindow) {
  Scenario sc = small();
  sc.cluster.link_bandwidth = 1e8;
  StrategyConfig acc = strategy("overlap", "ring");
  acc.accumulate_steps = 4;
  const SimPatternResult a = simulate_pattern(sc, acc, 4, 0.01, 0.002, alpha_beta());
  const SimPatternResult o = simulate_pattern(sc, strategy("overlap", "ring"), 4, 0.01, 0.002, alpha_beta());
  ASSERT_EQ(a.pattern.period(), 4);
  EXPECT_EQ(a.pattern.warmup_steps(), 0);
  // Per micro-step: compute, a quarter of the optimizer and of the exposed sync.
  EXPECT_NEAR(a.optimizer_s, 0.002 / 4, 1e-9);
  EXPECT_NEAR(a.step_s, 0.01 + (o.step_s - 0.01) / 4, 0.02 * a.step_s);
  EXPECT_GT(a.samples_per_s, 1.5 * o.samples_per_s);
}

// data.uneven = "join": the steady block is an epoch of the longest share's steps, each rank taking its own
// share's samples and none once out of data; every step costs the full step (the ranks out of data still
// sync), so samples/s is the shares over the epoch's time.
TEST(SimulatorPlan, JoinReplaysAnEpochFromTheRanksShares) {
  Scenario sc = small();
  sc.data.partition = "quantity";
  sc.data.uneven = "join";
  const int batch = sc.train.batch_size;
  SimOptions opt = alpha_beta();
  JoinSchedule j;
  j.batch = batch;
  j.samples = {5 * batch, 4 * batch + 3, 3 * batch};  // 5, 5 and 3 steps: an epoch of 5
  EXPECT_THROW(simulate_pattern(sc, strategy("overlap", "ring"), 3, 0.01, 0.0, opt), ddplab::InputError);  // no shares
  opt.join[3] = j;
  const SimPatternResult r = simulate_pattern(sc, strategy("overlap", "ring"), 3, 0.01, 0.0, opt);
  ASSERT_EQ(r.pattern.period(), 5);
  ASSERT_EQ(r.steps.size(), 5u);
  const std::vector<StepMetrics> rows = step_rows(r);
  std::vector<std::int64_t> taken(3, 0);
  for (const StepMetrics& m : rows) taken[static_cast<std::size_t>(m.rank)] += m.samples;
  EXPECT_EQ(taken, j.samples);
  for (const StepMetrics& m : rows)
    if (m.rank == 2 && m.step >= 3) {
      EXPECT_EQ(m.samples, 0) << "step " << m.step;
    }
  const double step = r.steps.back().step_s;
  EXPECT_NEAR(r.step_s, step, 1e-12);
  EXPECT_NEAR(r.samples_per_s, static_cast<double>(12 * batch + 3) / (5 * step), 1e-6);
  // A straggler that runs out of data would stop slowing the others: not replayed, and said so.
  sc.cluster.stragglers.push_back({2, -1, 2.0});
  EXPECT_THROW(simulate_pattern(sc, strategy("overlap", "ring"), 3, 0.01, 0.0, opt), ddplab::InputError);
}

}  // namespace
}  // namespace ddplab

namespace ddplab {
namespace {

// `native` on a CPU scenario replays Open MPI 4.1's choice: on 4 ranks, Rabenseifner (halving-doubling)
// for the MLP's megabytes, recursive doubling for a 8 KiB-or-smaller buffer; on NCCL (backend cuda), the ring.
TEST(SimulatorPlan, NativeReplaysTheBackendsOwnChoice) {
  Scenario sc = small();
  StrategyConfig c = strategy("flat", "native");
  auto peers_of_rank0 = [](const SimStepResult& r) {
    std::set<int> peers;
    for (const auto& [pair, bytes] : r.bytes_between)
      if (pair.first == 0 && bytes > 0) peers.insert(pair.second);
    return peers;
  };
  const auto big = simulate_step(sc, c, 4, 0.01, 0.0, alpha_beta(), {1, 1});
  EXPECT_EQ(peers_of_rank0(big), (std::set<int>{1, 2}));  // halving-doubling's partners 1 and 2; a ring's is 1
  const std::size_t params = ModelSpec::mlp(sc.model.layers).parameter_count();
  EXPECT_EQ(big.bytes_sent[0], halving_doubling_allreduce(4, params).bytes_sent(0, 4));
  sc.model.layers = {64, 16, 10};  // 1210 parameters: 4840 bytes, below Open MPI's 8 KiB
  const auto tiny = simulate_step(sc, c, 4, 0.01, 0.0, alpha_beta(), {1, 1});
  EXPECT_EQ(tiny.bytes_sent[0], recursive_doubling_allreduce(4, 1210).bytes_sent(0, 4));
  sc.train.backend = Backend::Cuda;
  const auto nccl = simulate_step(sc, c, 4, 0.01, 0.0, alpha_beta(), {1, 1});
  EXPECT_EQ(peers_of_rank0(nccl), (std::set<int>{1}));
}

}  // namespace
}  // namespace ddplab
