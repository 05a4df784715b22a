#include "ddplab/runtime/checkpointer.hpp"

#include <chrono>
#include <cstdio>
#include <filesystem>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "ddplab/core/resume.hpp"
#include "ddplab/core/units.hpp"

namespace ddplab {

Checkpointer::Checkpointer(const Scenario& sc, const StrategyConfig& st, Communicator& comm, Store* store,
                           std::int64_t run, const std::string& db_path)
    : comm_(comm),
      store_(store),
      run_(run),
      every_(sc.train.checkpoint_every),
      keep_(sc.train.checkpoint_keep),
      folder_(run_checkpoint_folder(sc, db_path, run)),
      identity_(checkpoint_identity(sc, st, comm.size())) {}

bool Checkpointer::save(std::int64_t steps, bool final, PlanExecutor& executor, const nlohmann::json& trainer) {
  using Clock = std::chrono::steady_clock;
  const auto t0 = Clock::now();
  const std::string step_folder = step_checkpoint_folder(folder_, steps);
  Written mine;
  try {
    Checkpoint c;
    c.meta = {{"identity", identity_}, {"rank", comm_.rank()}, {"run", run_},
              {"step", steps},         {"final", final},       {"trainer", trainer}};
    executor.save(c);
    mine.bytes = static_cast<double>(write_checkpoint(rank_checkpoint_file(step_folder, comm_.rank()), c));
  } catch (const std::exception& e) {  // a full disk should not end the training it was meant to protect
    std::fprintf(stderr, "warning: rank %d: checkpoint at step %lld not written: %s\n", comm_.rank(),
                 static_cast<long long>(steps), e.what());
    mine.ok = 0;
  }
  mine.seconds = std::chrono::duration<double>(Clock::now() - t0).count();
  std::vector<Written> all(static_cast<std::size_t>(comm_.size()));
  comm_.gather(&mine, sizeof mine, all.data(), 0);
  int stored = comm_.rank() == 0 ? record(steps, final, all) : 0;
  comm_.broadcast(&stored, sizeof stored, 0);
  return stored != 0;
}

// Rank 0: stores the checkpoint that every rank wrote, and drops the oldest beyond checkpoint_keep.
int Checkpointer::record(std::int64_t steps, bool final, const std::vector<Written>& all) {
  const std::string step_folder = step_checkpoint_folder(folder_, steps);
  CheckpointRow row{run_, steps, step_folder, comm_.size(), 0, 0, final, ""};
  std::vector<int> failed;
  for (int r = 0; r < comm_.size(); ++r) {
    const Written& w = all[static_cast<std::size_t>(r)];
    if (!w.ok) failed.push_back(r);
    row.bytes += static_cast<std::int64_t>(w.bytes);
    row.write_s = std::max(row.write_s, w.seconds);
  }
  if (!failed.empty()) {
    std::fprintf(stderr, "warning: checkpoint at step %lld not stored: rank %s could not write its file (above)\n",
                 static_cast<long long>(steps), fmt::format("{}", fmt::join(failed, ", ")).c_str());
    return 0;
  }
  try {
    if (store_) store_->add_checkpoint(row);
  } catch (const StoreError& e) {
    std::fprintf(stderr, "warning: checkpoint at step %lld not stored: %s\n", static_cast<long long>(steps), e.what());
    return 0;
  }
  std::printf("checkpoint%s at step %lld: %d ranks, %s in %.3f s (slowest rank) -> %s\n", final ? " (final)" : "",
              static_cast<long long>(steps), comm_.size(), format_bytes(static_cast<double>(row.bytes)).c_str(),
              row.write_s, step_folder.c_str());
  std::fflush(stdout);
  if (!store_) return 1;
  try {
    // The row first: a checkpoint is never stored without its files.
    auto rows = store_->checkpoints(run_);
    for (std::size_t i = 0; i + static_cast<std::size_t>(keep_) < rows.size(); ++i) {
      store_->delete_checkpoint(run_, rows[i].step);
      std::error_code ec;
      std::filesystem::remove_all(rows[i].path, ec);
    }
  } catch (const StoreError& e) {
    std::fprintf(stderr, "warning: older checkpoints not removed: %s\n", e.what());
  }
  return 1;
}

Checkpoint Checkpointer::read_rank(const std::string& step_folder, int rank, const nlohmann::json& identity) const {
  const std::string file = rank_checkpoint_file(step_folder, rank);
  Checkpoint c = read_checkpoint(file);
  const std::string diff = identity_differences(c.meta.value("identity", nlohmann::json()), identity);
  if (!diff.empty()) throw CheckpointError(fmt::format("checkpoint {} was written for other settings: {}", file, diff));
  if (c.meta.value("rank", -1) != rank)
    throw CheckpointError(
        fmt::format("checkpoint {} is rank {}'s, not rank {}'s", file, c.meta.value("rank", -1), rank));
  return c;
}

std::vector<Checkpoint> Checkpointer::load_world(const std::string& step_folder, int old_world) const {
  nlohmann::json identity = identity_;
  identity["world_size"] = old_world;
  std::vector<Checkpoint> out;
  for (int r = 0; r < old_world; ++r) out.push_back(read_rank(step_folder, r, identity));
  return out;
}

Checkpoint Checkpointer::load(const std::string& step_folder) const {
  Checkpoint c = read_rank(step_folder, comm_.rank(), identity_);
  if (c.meta.value("run", std::int64_t{-1}) != run_)
    throw CheckpointError(fmt::format("checkpoint {} is of run {}, not run {}",
                                      rank_checkpoint_file(step_folder, comm_.rank()),
                                      c.meta.value("run", std::int64_t{-1}), run_));
  return c;
}

}  // namespace ddplab
