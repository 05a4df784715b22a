// Checkpoint files (core/checkpoint.hpp), the store's checkpoints and reopening a run (Store::resume_run), and
// which run `ddplab run --resume` continues (core/resume.hpp).
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>

#include "ddplab/core/checkpoint.hpp"
#include "ddplab/core/error.hpp"
#include "ddplab/core/resume.hpp"
#include "store_test_util.hpp"

namespace ddplab {
namespace {

Checkpoint sample() {
  Checkpoint c;
  c.meta = {{"step", 40}, {"identity", {{"world_size", 2}}}};
  c.tensors["params"] = {1.0f, -2.5f, 3.25f, 0.0f};
  c.tensors["optimizer.0"] = {0.5f, 0.25f, 0.125f, -0.0f};
  c.tensors["empty"] = {};
  return c;
}

std::vector<char> bytes_of(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}
void write_bytes(const std::string& path, const std::vector<char>& b) {
  std::ofstream(path, std::ios::binary | std::ios::trunc).write(b.data(), static_cast<std::streamsize>(b.size()));
}

// The message of the CheckpointError that reading `path` throws ("" when it reads).
std::string read_error(const std::string& path) {
  try {
    read_checkpoint(path);
  } catch (const CheckpointError& e) {
    return e.what();
  }
  return "";
}

TEST(CheckpointFile, RoundTripsMetaAndTensorsBitForBit) {
  test::TempDir dir;
  const std::string path = dir.file("sub/rank-0.ckpt");
  const std::uint64_t bytes = write_checkpoint(path, sample());
  EXPECT_EQ(bytes, std::filesystem::file_size(path));
  const Checkpoint back = read_checkpoint(path);
  EXPECT_EQ(back.meta, sample().meta);
  ASSERT_EQ(back.tensors.size(), 3u);
  for (const auto& [name, v] : sample().tensors) {
    ASSERT_EQ(back.tensors.at(name).size(), v.size()) << name;
    EXPECT_EQ(std::memcmp(back.tensors.at(name).data(), v.data(), v.size() * sizeof(float)), 0) << name;
  }
  EXPECT_TRUE(std::signbit(back.tensors.at("optimizer.0")[3])) << "-0 kept as -0";
  // Nothing but the file is left in its folder: the temporary was renamed.
  int entries = 0;
  for ([[maybe_unused]] const auto& e : std::filesystem::directory_iterator(dir.file("sub"))) ++entries;
  EXPECT_EQ(entries, 1);
}

TEST(CheckpointFile, OverwritingReplacesTheWholeFile) {
  test::TempDir dir;
  const std::string path = dir.file("c.ckpt");
  write_checkpoint(path, sample());
  Checkpoint small;
  small.tensors["params"] = {7.0f};
  write_checkpoint(path, small);
  const Checkpoint back = read_checkpoint(path);
  EXPECT_EQ(back.tensors.size(), 1u);
  EXPECT_EQ(back.tensors.at("params"), std::vector<float>{7.0f});
}

TEST(CheckpointFile, RefusesDamagedFilesNamingWhatIsWrong) {
  test::TempDir dir;
  const std::string path = dir.file("c.ckpt");
  write_checkpoint(path, sample());
  const std::vector<char> good = bytes_of(path);

  EXPECT_NE(read_error(dir.file("missing.ckpt")).find("cannot open"), std::string::npos);

  std::vector<char> b = good;
  b[0] = 'X';
  write_bytes(path, b);
  EXPECT_NE(read_error(path).find("not a ddplab checkpoint"), std::string::npos);

  b = good;
  b[8] = 9;  // format version
  write_bytes(path, b);
  EXPECT_NE(read_error(path).find("format version 9"), std::string::npos) << read_error(path);

  b = good;
  b.back() ^= 0x01;  // a bit of the last tensor
  write_bytes(path, b);
  EXPECT_NE(read_error(path).find("CRC-32 mismatch"), std::string::npos) << read_error(path);

  b.assign(good.begin(), good.end() - 3);
  write_bytes(path, b);
  EXPECT_NE(read_error(path).find("truncated"), std::string::npos) << read_error(path);

  b.assign(good.begin(), good.begin() + 12);
  write_bytes(path, b);
  EXPECT_NE(read_error(path).find("truncated header"), std::string::npos) << read_error(path);

  b = good;
  b.push_back(0);
  write_bytes(path, b);
  EXPECT_NE(read_error(path).find("1 bytes past its last tensor"), std::string::npos) << read_error(path);

  write_bytes(path, good);
  EXPECT_EQ(read_error(path), "");
}

TEST(CheckpointFile, TensorLookupNamesTheMissingOrMisfitTensor) {
  const Checkpoint c = sample();
  EXPECT_EQ(c.tensor("params", 4, "f").size(), 4u);
  try {
    c.tensor("params", 5, "f");
    FAIL() << "no throw";
  } catch (const CheckpointError& e) {
    EXPECT_STREQ(e.what(), "f: tensor \"params\" holds 4 values, 5 expected");
  }
  EXPECT_THROW(c.tensor("buffers", 1, "f"), CheckpointError);
}

TEST(CheckpointFile, JsonDifferencesNameEveryDifferingPathButTheIgnoredOnes) {
  const nlohmann::json a = {{"train", {{"lr", 0.05}, {"checkpoint_every", 10}, {"seed", 1}}}, {"world_size", 2}};
  nlohmann::json b = a;
  EXPECT_EQ(json_differences(a, b, {}), "");
  b["train"]["checkpoint_every"] = 20;
  EXPECT_EQ(json_differences(a, b, {"train.checkpoint_every"}), "");
  b["train"]["lr"] = 0.1;
  b["world_size"] = 4;
  b["extra"] = true;
  EXPECT_EQ(json_differences(a, b, {"train.checkpoint_every"}),
            "extra: absent in the checkpoint, true now; train.lr: 0.05 in the checkpoint, 0.1 now; world_size: 2 in "
            "the checkpoint, 4 now");
  EXPECT_EQ(json_differences(a, b, {}, 1), "extra: absent in the checkpoint, true now; and 3 more");
}

TEST(CheckpointFolder, BesideTheStoreNamedByItOrWhereTheScenarioSays) {
  Scenario sc;
  EXPECT_EQ(run_checkpoint_folder(sc, "/data/results/lab.db", 3), "/data/results/lab-checkpoints/run-3");
  EXPECT_EQ(run_checkpoint_folder(sc, "/data/results/other.db", 3), "/data/results/other-checkpoints/run-3")
      << "two stores in one folder keep their run-3s apart";
  sc.train.checkpoint_dir = "/scratch/ck";
  EXPECT_EQ(run_checkpoint_folder(sc, "/data/results/lab.db", 3), "/scratch/ck/run-3");
  EXPECT_EQ(rank_checkpoint_file(step_checkpoint_folder("/scratch/ck/run-3", 40), 2),
            "/scratch/ck/run-3/step-40/rank-2.ckpt");
}

// A store holding run 1, failed after 30 of its steps (2 ranks), with checkpoints at steps 10 and 20 and
// evaluations at 10, 20 and 25.
struct FailedRun : ::testing::Test {
  test::TempDir dir;
  std::string db = dir.file("r.db");
  std::int64_t run = 0;
  void SetUp() override {
    Store s(db);
    run = s.begin_run(test::sample_info());
    for (int step = 0; step < 30; ++step)
      for (int rank = 0; rank < 2; ++rank) {
        StepMetrics m;
        m.step = step, m.rank = rank, m.step_s = 0.01, m.samples = 32, m.loss = 2.0 - 0.01 * step;
        s.add_step(run, m);
      }
    for (int at : {10, 20, 25}) {
      Evaluation e;
      e.step = at, e.test_accuracy = 0.01 * at;
      s.add_evaluation(run, e);
    }
    for (int at : {10, 20})
      s.add_checkpoint({run, at, dir.file("ck/step-" + std::to_string(at)), 2, 1000, 0.01, false, ""});
    s.add_flight(run, {FlightRecord{0, 1, 29, "sync_grads #0 on ring", "allreduce of 1 f32", 4, 0.0, -1, false}});
    s.finish_run(run, RunStatus::Failed, "rank 1 step 30: exiting on purpose");
  }
};

TEST_F(FailedRun, ResumeKeepsWhatCameBeforeTheCheckpointAndDropsTheRest) {
  Store s(db);
  ASSERT_EQ(s.checkpoints(run).size(), 2u);
  s.resume_run(run, 20, R"({"launch_id":"new"})");
  const auto row = s.run(run);
  EXPECT_EQ(row->status, RunStatus::Running);
  EXPECT_EQ(row->reason, "");
  EXPECT_EQ(row->ended_at, "");
  EXPECT_EQ(row->info.host_info, R"({"launch_id":"new"})");
  const auto config = nlohmann::json::parse(row->info.config_json);
  ASSERT_EQ(config.at("resumed").size(), 1u);
  EXPECT_EQ(config["resumed"][0]["from_step"], 20);
  EXPECT_EQ(config["resumed"][0]["status"], "failed");
  EXPECT_EQ(config["resumed"][0]["reason"], "rank 1 step 30: exiting on purpose");
  EXPECT_EQ(config.at("model"), "mlp") << "the rest of the config kept";
  const auto steps = s.steps(run);
  ASSERT_EQ(steps.size(), 40u) << "steps 0..19 of both ranks";
  EXPECT_EQ(steps.back().step, 19);
  const auto evals = s.evaluations(run);
  ASSERT_EQ(evals.size(), 2u);
  EXPECT_EQ(evals.back().step, 20) << "the evaluation at the checkpoint's step is kept";
  EXPECT_TRUE(s.flight(run).empty());
  EXPECT_EQ(s.checkpoints(run).size(), 2u);
  // A running run is not resumed twice.
  EXPECT_THROW(s.resume_run(run, 20, "{}"), StoreError);
}

TEST_F(FailedRun, ResumeIsRefusedWithoutThatCheckpointOrForACompletedRun) {
  Store s(db);
  EXPECT_THROW(s.resume_run(run, 15, "{}"), StoreError);
  EXPECT_THROW(s.resume_run(run + 1, 10, "{}"), StoreError);
  EXPECT_EQ(s.steps(run).size(), 60u) << "a refused resume deletes nothing";
  const std::int64_t done = s.begin_run(test::sample_info());
  s.add_checkpoint({done, 10, dir.file("x"), 2, 1, 0.01, false, ""});
  s.finish_run(done, RunStatus::Completed);
  EXPECT_THROW(s.resume_run(done, 10, "{}"), StoreError);
}

TEST_F(FailedRun, DeletingTheRunDeletesItsCheckpointRows) {
  Store s(db);
  s.delete_runs({run});
  EXPECT_TRUE(s.checkpoints(run).empty());
}

// find_resume_point: the run, its checkpoint, and the settings of its rank-0 file.
struct ResumePointTest : FailedRun {
  Scenario sc;
  void SetUp() override {
    FailedRun::SetUp();
    sc = load_scenario(dir.write("default.toml",
                                 "name = \"default\"\n[train]\nlr = 0.05\ncheckpoint_every = 10\n"
                                 "[[strategy]]\nname = \"ring\"\n"));
    // The file of rank 0 for the newest checkpoint, as the trainer writes it.
    Checkpoint c;
    c.meta["identity"] = checkpoint_identity(sc, sc.strategies[0], 2);
    c.tensors["params"] = {1.0f};
    write_checkpoint(rank_checkpoint_file(dir.file("ck/step-20"), 0), c);
  }
  std::string refusal(const Scenario& s, int world, std::optional<std::int64_t> id) {
    try {
      find_resume_point(Store(db), s, world, id);
    } catch (const ddplab::InputError& e) {
      return e.what();
    }
    return "";
  }
};

TEST_F(ResumePointTest, FindsTheNewestCheckpointOfTheNewestUnfinishedRun) {
  const ResumePoint p = find_resume_point(Store(db), sc, 2, std::nullopt);
  EXPECT_EQ(p.run.id, run);
  EXPECT_EQ(p.checkpoint.step, 20);
  EXPECT_EQ(p.strategy_index, 0u);
  EXPECT_EQ(find_resume_point(Store(db), sc, 2, run).checkpoint.step, 20);
  EXPECT_EQ(find_resume_point(Store(db), sc, 0, run).world, 2) << "world 0: the run's own";
}

TEST_F(ResumePointTest, AnotherNumberOfRanksNeedsEveryOldFileAndReplicasThatAgree) {
  Checkpoint c;
  c.meta["identity"] = checkpoint_identity(sc, sc.strategies[0], 2);
  c.tensors["params"] = {1.0f};
  write_checkpoint(rank_checkpoint_file(dir.file("ck/step-20"), 1), c);
  EXPECT_EQ(refusal(sc, 3, run), "");
  const ResumePoint p = find_resume_point(Store(db), sc, 3, run);
  EXPECT_TRUE(p.elastic());
  EXPECT_EQ(p.world, 3);
  EXPECT_FALSE(find_resume_point(Store(db), sc, 2, run).elastic());
  // Between local SGD's syncs (a bucket whose replicas part): only on its own ranks.
  c.meta["trainer"] = {{"agreement", {1, 0}}};
  write_checkpoint(rank_checkpoint_file(dir.file("ck/step-20"), 0), c);
  EXPECT_NE(refusal(sc, 3, run).find("falls where the replicas differ"), std::string::npos) << refusal(sc, 3, run);
  EXPECT_EQ(refusal(sc, 2, run), "");
}

TEST_F(ResumePointTest, ARunAnotherOneContinuesIsNotPickedAgain) {
  {
    Store s(db);
    RunInfo elastic = test::sample_info();
    elastic.world_size = 3;
    elastic.config_json = R"({"resumed_from":{"run":1,"step":20,"world_size":2}})";
    const std::int64_t id = s.begin_run(elastic);
    s.finish_run(id, RunStatus::Completed);
  }
  EXPECT_NE(refusal(sc, 2, std::nullopt).find("no failed, interrupted or abandoned run"), std::string::npos)
      << refusal(sc, 2, std::nullopt);
  EXPECT_EQ(refusal(sc, 2, run), "") << "named by its id, it may still be continued";
}

TEST_F(ResumePointTest, SettingsThatDoNotChangeTrainingMayDifferOthersAreNamed) {
  Scenario other = sc;
  other.train.checkpoint_every = 50;
  other.train.comm_timeout_s = 10;
  EXPECT_EQ(refusal(other, 2, run), "");
  other.train.lr = 0.1;
  EXPECT_NE(refusal(other, 2, run).find("scenario.train.lr: 0.05 in the checkpoint, 0.1 now"), std::string::npos)
      << refusal(other, 2, run);
}

TEST_F(ResumePointTest, RefusalsSayWhy) {
  EXPECT_NE(refusal(sc, 4, run).find("rank-1.ckpt is missing"), std::string::npos) << refusal(sc, 4, run);
  EXPECT_NE(refusal(sc, 2, 99).find("no run with that id"), std::string::npos);
  Scenario renamed = sc;
  renamed.strategies[0].name = "tree";
  EXPECT_NE(refusal(renamed, 2, run).find("no [[strategy]] named \"ring\""), std::string::npos);
  Scenario elsewhere = sc;
  elsewhere.name = "other";
  EXPECT_NE(refusal(elsewhere, 2, std::nullopt).find("no failed, interrupted or abandoned run with a checkpoint"),
            std::string::npos);
  std::filesystem::remove(rank_checkpoint_file(dir.file("ck/step-20"), 0));
  EXPECT_NE(refusal(sc, 2, run).find("cannot open"), std::string::npos) << refusal(sc, 2, run);
  {
    Store s(db);
    const std::int64_t done = s.begin_run(test::sample_info());
    s.finish_run(done, RunStatus::Completed);
  }
  EXPECT_NE(refusal(sc, 2, run + 1).find("is completed"), std::string::npos);
}

}  // namespace
}  // namespace ddplab
