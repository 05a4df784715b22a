// Parameter server (policy ps): the push and pull schedules against reference sums, their exact traffic,
// the roles and shards of co-located and dedicated servers, the plan, and the validation of its options.
#include <gtest/gtest.h>

#include "ddplab/core/error.hpp"
#include "ddplab/strategies/schedule.hpp"
#include "ddplab/strategies/strategy.hpp"
#include "schedule_checks.hpp"

namespace ddplab {
namespace {

double value(std::size_t r, std::size_t i) { return static_cast<double>((r + 1) * 1000 + i % 251); }

TEST(ParameterServer, LayoutPutsDedicatedServersLast) {
  const PsLayout colocated{4, 0};
  EXPECT_EQ(colocated.number(), 4);
  EXPECT_EQ(colocated.workers(), 4);
  EXPECT_EQ(colocated.server_rank(3), 3);
  EXPECT_EQ(colocated.server_index(2), 2);
  EXPECT_TRUE(colocated.is_worker(3));
  const PsLayout dedicated{5, 2};
  EXPECT_EQ(dedicated.number(), 2);
  EXPECT_EQ(dedicated.workers(), 3);
  EXPECT_EQ(dedicated.server_rank(0), 3);
  EXPECT_EQ(dedicated.server_rank(1), 4);
  EXPECT_EQ(dedicated.server_index(2), -1);
  EXPECT_EQ(dedicated.server_index(4), 1);
  EXPECT_FALSE(dedicated.is_worker(3));
  EXPECT_TRUE(dedicated.is_worker(2));
}

// Push: server s ends with the workers' sum of shard s (a dedicated server starts from zero); pull then
// gives every worker every shard. Together they are an allreduce among the workers.
TEST(ParameterServer, PushSumsEachShardOnItsServerAndPullSpreadsIt) {
  for (int n = 1; n <= 9; ++n)
    for (int servers = 0; servers < n; ++servers)
      for (std::size_t count : test::counts_for(n)) {
        SCOPED_TRACE("n=" + std::to_string(n) + " servers=" + std::to_string(servers) +
                     " count=" + std::to_string(count));
        const PsLayout ps{n, servers};
        const Schedule push = make_schedule("ps", ScheduleParams{n, count, 1, servers}, Collective::Push);
        const Schedule pull = make_schedule("ps", ScheduleParams{n, count, 1, servers}, Collective::Pull);
        test::check_rules(push);
        test::check_rules(pull);
        std::vector<std::vector<double>> bufs(static_cast<std::size_t>(n), std::vector<double>(count, 0.0));
        std::vector<double> ref(count, 0.0);
        for (int r = 0; r < ps.workers(); ++r)
          for (std::size_t i = 0; i < count; ++i)
            ref[i] += bufs[static_cast<std::size_t>(r)][i] = value(static_cast<std::size_t>(r), i);
        run_in_memory(push, bufs);
        for (int s = 0; s < ps.number(); ++s) {
          const Chunk c = chunk_of(count, ps.number(), s);
          for (std::size_t i = c.offset; i < c.offset + c.count; ++i)
            ASSERT_EQ(bufs[static_cast<std::size_t>(ps.server_rank(s))][i], ref[i])
                << "server " << s << " element " << i;
        }
        // Only the servers' shards are meaningful now: garble the rest, pull must overwrite it on workers.
        for (int s = 0; s < ps.number(); ++s) {
          const Chunk c = chunk_of(count, ps.number(), s);
          for (int r = 0; r < n; ++r)
            if (r != ps.server_rank(s))
              for (std::size_t i = c.offset; i < c.offset + c.count; ++i) bufs[static_cast<std::size_t>(r)][i] = -7.0;
        }
        run_in_memory(pull, bufs);
        for (int w = 0; w < ps.workers(); ++w) EXPECT_EQ(bufs[static_cast<std::size_t>(w)], ref) << "worker " << w;
      }
}

TEST(ParameterServer, TrafficIsExact) {
  // Dedicated: each worker pushes its whole buffer and each server pulls its shard to every worker.
  const std::size_t count = 1000;
  const Schedule push = ps_push(6, count, 2), pull = ps_pull(6, count, 2);
  for (int w = 0; w < 4; ++w) {
    EXPECT_EQ(push.bytes_sent(w, 4), count * 4) << "worker " << w;
    EXPECT_EQ(pull.bytes_sent(w, 4), 0u) << "worker " << w;
  }
  for (int s = 4; s < 6; ++s) {
    EXPECT_EQ(push.bytes_sent(s, 4), 0u);
    EXPECT_EQ(pull.bytes_sent(s, 4), 4 * (count / 2) * 4);
  }
  // Co-located: like direct allreduce, (n-1)/n of the buffer each way, one step each.
  const Schedule cpush = ps_push(4, count, 0), cpull = ps_pull(4, count, 0);
  EXPECT_EQ(test::traffic(cpush).steps, 1u);
  for (int r = 0; r < 4; ++r) {
    EXPECT_EQ(cpush.bytes_sent(r, 4), 3 * 250 * 4u);
    EXPECT_EQ(cpull.bytes_sent(r, 4), 3 * 250 * 4u);
  }
  EXPECT_THROW(ps_push(3, count, 3), ddplab::InputError);
}

const ModelSpec kMlp = ModelSpec::mlp({784, 64, 32, 10});

StrategyConfig ps_config(int servers) {
  StrategyConfig c;
  c.policy = "ps";
  c.policy_options["ps_servers"] = std::to_string(servers);
  c.bucket_cap = 4000;  // two buckets: layers 2 and 1, then layer 0
  c.first_bucket_cap = 2000;
  return c;
}

TEST(ParameterServer, PlanPushesEachReadyBucketUpdatesOnTheServerAndPulls) {
  const Strategy s(ps_config(1), kMlp, {4, 1, 16, 1});
  const StepPlan p = s.plan(0);
  const std::size_t buckets = s.bucketing().buckets.size();
  ASSERT_GT(buckets, 1u);
  std::size_t push = 0, update = 0, pull = 0;
  for (const PlanOp& op : p.ops) {
    if (op.kind == OpKind::Push) {
      ++push;
      EXPECT_EQ(op.schedule, "ps");
      EXPECT_EQ(op.calls.at(0).collective, Collective::Push);
      // Backward ops are ids 1, 2, 3 for layers 2, 1, 0: a push waits for its bucket's lowest layer only.
      EXPECT_EQ(op.deps, std::vector<int>{s.ready_op({3, 2, 1}, op.index)});
    }
    if (op.kind == OpKind::ShardOptimizer) {
      ++update;
      EXPECT_EQ(p.ops.at(static_cast<std::size_t>(op.deps.at(0))).kind, OpKind::Push);
    }
    if (op.kind == OpKind::Pull) {
      ++pull;
      EXPECT_EQ(p.ops.at(static_cast<std::size_t>(op.deps.at(0))).kind, OpKind::ShardOptimizer);
    }
  }
  EXPECT_EQ(push, buckets);
  EXPECT_EQ(update, buckets);
  EXPECT_EQ(pull, buckets);
  // Rank 3 is the only server: it updates all of every bucket; workers update nothing.
  EXPECT_FALSE(s.is_worker(3));
  EXPECT_EQ(s.workers(), 3);
  for (const Bucket& b : s.bucketing().buckets) {
    EXPECT_EQ(s.shard(b.id, 3).count, b.count);
    EXPECT_EQ(s.shard(b.id, 0).count, 0u);
  }
  // Co-located: rank r serves chunk r of n of every bucket.
  const Strategy co(ps_config(0), kMlp, {4, 1, 16, 1});
  for (const Bucket& b : co.bucketing().buckets)
    for (int r = 0; r < 4; ++r) EXPECT_EQ(co.shard(b.id, r), chunk_of(b.count, 4, r));
  // The schedule each call runs on knows the servers.
  const Schedule sched = s.schedule_for(p.ops[static_cast<std::size_t>(p.ops.size() - 1)].calls.at(0), "ps");
  EXPECT_EQ(sched.collective, Collective::Pull);
  EXPECT_EQ(sched.bytes_sent(0, 4), 0u);
}

TEST(ParameterServer, RejectsServersThatLeaveNoWorkerAndServersWithoutPs) {
  EXPECT_THROW(Strategy(ps_config(4), kMlp, {4, 1, 16, 1}), ddplab::InputError);
  StrategyConfig c = ps_config(1);
  c.policy = "overlap";
  EXPECT_THROW(Strategy(c, kMlp, {4, 1, 16, 1}), ddplab::InputError);
}

std::string validation_error(const std::string& strategy) {
  try {
    validate_strategies(parse_scenario("[[strategy]]\n" + strategy, "x.toml"));
  } catch (const ScenarioError& e) {
    return e.what();
  }
  return "";
}

TEST(ParameterServer, ValidationNamesTheField) {
  EXPECT_EQ(validation_error("policy = \"ps\"\nps_servers = 2\n"), "");
  const std::string sched = validation_error("policy = \"ps\"\nschedule = \"ring\"\n");
  EXPECT_EQ(sched.substr(0, sched.find(" must")), "x.toml:3:12: strategy[0].schedule") << sched;
  const std::string codec = validation_error("policy = \"ps\"\ncodec = \"fp16\"\n");
  EXPECT_EQ(codec.substr(0, codec.find(" must")), "x.toml:3:9: strategy[0].codec") << codec;
  EXPECT_EQ(validation_error("policy = \"overlap\"\nps_servers = 1\n"),
            "x.toml:3:14: strategy[0].ps_servers is neither a [[strategy]] field (name, policy, schedule, bucket_cap, "
            "first_bucket_cap, codec, codec_options, accumulate_steps) nor an option of policy \"overlap\" (none)");
  EXPECT_EQ(validation_error("policy = \"ps\"\nps_servers = -1\n"),
            "x.toml:3:14: strategy[0].ps_servers must be an integer >= 0 (dedicated server ranks, the last ones; 0 = "
            "every rank serves a shard), got -1");
  EXPECT_EQ(validation_error("policy = \"local_sgd\"\nlocal_sgd_period = \"four\"\n"),
            "x.toml:3:20: strategy[0].local_sgd_period must be an integer >= 1 (H: parameters are averaged every H "
            "steps), got four");
  EXPECT_EQ(validation_error("policy = \"local_sgd\"\nlocal_sgd_period = [4]\n"),
            "x.toml:3:20: strategy[0].local_sgd_period must be a string, number or boolean (a policy option), or one "
            "of the [[strategy]] fields, got [4]");
}

}  // namespace
}  // namespace ddplab
