// What each rank of `ddplab calibrate` measures (calibration_probe.hpp), on one rank without MPI: the world
// sizes of the schedules, the node names, the compute of a scenario's MLP and the codecs' work, and the
// schedules' benches in the store. The links need a peer: tests/mpi/test_calibration_probe.cpp.
#include <gtest/gtest.h>
#include <unistd.h>

#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "ddplab/core/error.hpp"
#include "ddplab/core/scenario.hpp"
#include "ddplab/core/store.hpp"
#include "ddplab/runtime/calibration_probe.hpp"
#include "ddplab/runtime/communicator.hpp"
#include "temp_dir.hpp"

namespace ddplab {
namespace {

using test::TempDir;

TEST(CalibrationProbe, ScheduleWorldsArePowersOfTwoAndTheJobOrThoseAsked) {
  EXPECT_EQ(schedule_worlds({}, 2), (std::vector<int>{2}));
  EXPECT_EQ(schedule_worlds({}, 3), (std::vector<int>{2, 3}));
  EXPECT_EQ(schedule_worlds({}, 8), (std::vector<int>{2, 4, 8}));
  EXPECT_EQ(schedule_worlds({}, 12), (std::vector<int>{2, 4, 8, 12}));
  EXPECT_EQ(schedule_worlds({3, 2, 3}, 3), (std::vector<int>{2, 3}));  // ascending, once each
  for (const int bad : {1, 4}) {
    try {
      schedule_worlds({2, bad}, 3);
      FAIL() << "world " << bad << " accepted on 3 ranks";
    } catch (const InputError& e) {
      EXPECT_EQ(std::string(e.what()), "--worlds: " + std::to_string(bad) + " is outside 2..3 (the job's ranks)");
    }
  }
}

TEST(CalibrationProbe, NodeNamesAreHostNames) {
  auto comm = make_single_process_communicator();
  char host[256] = {};
  ASSERT_EQ(gethostname(host, sizeof host - 1), 0);
  EXPECT_EQ(node_names(*comm), (std::vector<std::string>{host}));
}

TEST(CalibrationProbe, ComputeOfTheScenariosMlpAndTheCodecsWork) {
  auto comm = make_single_process_communicator();
  CalibrationProbe probe(*comm);
  EXPECT_EQ(probe.transport(), Transport::Mpi);  // the job's communicator until open() says otherwise
  const Scenario sc = load_scenario(DDPLAB_SOURCE_DIR "/scenarios/ci-small.toml");
  const ComputeSamples c = probe.measure_compute(Backend::Cpu, &sc, false);
  EXPECT_EQ(c.compute_backend, "cpu");
  ASSERT_TRUE(c.mlp);
  ASSERT_EQ(c.mlp->forward_s.size(), sc.model.layers.size() - 1);
  ASSERT_EQ(c.mlp->backward_s.size(), sc.model.layers.size() - 1);
  for (std::size_t l = 0; l < c.mlp->forward_s.size(); ++l) {
    EXPECT_GT(c.mlp->forward_s[l], 0) << l;
    EXPECT_GT(c.mlp->backward_s[l], 0) << l;
  }
  EXPECT_GT(c.mlp->optimizer_s, 0);
  EXPECT_TRUE(c.codec_work.empty());
  EXPECT_TRUE(c.codec_backend.empty());

  // No scenario: the codecs' work alone, every kind of work timed.
  const ComputeSamples w = probe.measure_compute(Backend::Cpu, nullptr, true);
  EXPECT_FALSE(w.mlp);
  EXPECT_EQ(w.codec_backend, "host");
  EXPECT_EQ(w.codec_work.size(), codec_probe_works(1u << 21).size());
  for (const CodecWorkTiming& t : w.codec_work) EXPECT_GT(t.seconds, 0) << work_key(t.work);
}

TEST(CalibrationProbe, SchedulesAreStoredOneBenchPerWorld) {
  TempDir dir;
  auto comm = make_single_process_communicator();
  CalibrationProbe probe(*comm);
  probe.open(Transport::Mpi, 10);
  Store store(dir.file("r.db"));
  CollectiveBenchOptions opt;
  opt.sizes = {4096};
  opt.schedules = {"native", "ring"};
  opt.iters = 1;
  opt.warmup = 0;
  opt.ranks_per_node = 4;  // capped at the world's ranks
  std::vector<std::string> seen;
  ScheduleBenchHooks hooks;
  hooks.begin = [&](int w, std::int64_t id) {
    seen.push_back("world " + std::to_string(w) + " bench " + std::to_string(id));
  };
  hooks.row = [&](const CollectiveBenchRow& r) { seen.push_back(r.schedule); };
  const ScheduleBenches b = probe.measure_schedules({1}, opt, &store, {{"calibration", "c"}}, hooks);
  ASSERT_EQ(b.ids.size(), 1u);
  EXPECT_EQ(b.wrong, 0);
  EXPECT_EQ(seen, (std::vector<std::string>{"world 1 bench " + std::to_string(b.ids[0]), "native", "ring"}));
  const auto benches = store.benches();
  ASSERT_EQ(benches.size(), 1u);
  EXPECT_EQ(benches[0].status, RunStatus::Completed);
  EXPECT_EQ(benches[0].info.world_size, 1);
  EXPECT_EQ(benches[0].info.ranks_per_node, 1);
  EXPECT_EQ(benches[0].info.backend, "mpi");
  EXPECT_EQ(nlohmann::json::parse(benches[0].info.config_json)["calibration"], "c");
  EXPECT_EQ(store.bench_rows(b.ids[0]).size(), 2u);
}

}  // namespace
}  // namespace ddplab
