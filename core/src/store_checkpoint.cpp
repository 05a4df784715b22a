// Results store: checkpoints of measured runs, and reopening a run to continue from one (schema 11).
#include <sqlite3.h>

#include "ddplab/core/process_identity.hpp"
#include "ddplab/core/store.hpp"
#include "store_sql.hpp"

namespace ddplab {

void Store::add_checkpoint(const CheckpointRow& row) {
  flush();
  Stmt s(db_, path_,
         "INSERT OR REPLACE INTO checkpoints(run_id, step, path, ranks, bytes, write_s, final, created_at) "
         "VALUES(?1,?2,?3,?4,?5,?6,?7,?8)");
  s.bind(1, row.run_id).bind(2, row.step).bind(3, row.path).bind(4, row.ranks).bind(5, row.bytes).bind(6, row.write_s);
  s.bind(7, row.final ? 1 : 0).bind(8, row.created_at.empty() ? utc_now() : row.created_at).run();
}

void Store::delete_checkpoint(std::int64_t run, std::int64_t step) {
  Stmt s(db_, path_, "DELETE FROM checkpoints WHERE run_id = ?1 AND step = ?2");
  s.bind(1, run).bind(2, step).run();
}

std::vector<CheckpointRow> Store::checkpoints(std::int64_t run) const {
  std::vector<CheckpointRow> out;
  if (schema_ < 11) return out;
  pending_->flush(db_, path_);
  Stmt s(db_, path_,
         "SELECT run_id, step, path, ranks, bytes, write_s, final, created_at FROM checkpoints WHERE run_id = ?1 ORDER "
         "BY step");
  s.bind(1, run);
  while (s.step()) {
    CheckpointRow r;
    r.run_id = s.i64(0);
    r.step = s.i64(1);
    r.path = s.text(2);
    r.ranks = s.i32(3);
    r.bytes = s.i64(4);
    r.write_s = s.real(5);
    r.final = s.i64(6) != 0;
    r.created_at = s.text(7);
    out.push_back(std::move(r));
  }
  return out;
}

void Store::resume_run(std::int64_t run, std::int64_t step, const std::string& host_info) {
  flush();  // so that the reads below start no transaction of their own
  // Checked inside the write transaction: of two resumes of one run, the second finds it running.
  in_transaction(db_, path_, "resume run", [&] {
    const auto row = this->run(run);
    if (!row) throw StoreError(fmt::format("results store {}: no run with id {}", path_, run));
    if (row->status == RunStatus::Completed || row->status == RunStatus::Running)
      throw StoreError(
          fmt::format("results store {}: run {} is {}: only a failed, interrupted or abandoned run can be resumed",
                      path_, run, to_string(row->status)));
    bool found = false;
    for (const CheckpointRow& c : checkpoints(run)) found |= c.step == step && !c.final;
    if (!found)
      throw StoreError(fmt::format("results store {}: run {} has no checkpoint at step {}", path_, run, step));
    auto erase = [&](const char* sql) {
      Stmt s(db_, path_, sql);
      s.bind(1, run).bind(2, step).run();
    };
    erase("DELETE FROM steps WHERE run_id = ?1 AND step >= ?2");
    erase("DELETE FROM evaluations WHERE run_id = ?1 AND step > ?2");
    erase("DELETE FROM checkpoints WHERE run_id = ?1 AND step > ?2");
    for (const char* table : {"trace_events", "resources", "flight_records", "step_totals", "run_summaries"}) {
      Stmt s(db_, path_, fmt::format("DELETE FROM {} WHERE run_id = ?1", table).c_str());
      s.bind(1, run).run();
    }
    // The run's config keeps a record of each stop it was resumed from.
    nlohmann::json config = nlohmann::json::parse(row->info.config_json, nullptr, false);
    if (!config.is_object()) config = nlohmann::json::object();
    config["resumed"].push_back(
        {{"from_step", step}, {"status", row->status}, {"reason", row->reason}, {"at", utc_now()}});
    Stmt s(
        db_, path_,
        "UPDATE runs SET status = 'running', ended_at = NULL, reason = NULL, writer = ?1, host_info = ?2, config = ?3 "
        "WHERE id = ?4");
    s.bind(1, ProcessIdentity::current().to_json()).bind(2, host_info).bind(3, config.dump()).bind(4, run).run();
  });
}

}  // namespace ddplab
