// Results store: `ddplab predict`'s time-to-accuracy predictions (schema 6).
#include <sqlite3.h>

#include "ddplab/core/store.hpp"
#include "ddplab/core/version.hpp"
#include "store_sql.hpp"

namespace ddplab {

void Store::add_predictions(const std::vector<PredictionRow>& rows) {
  flush();
  const std::string now = utc_now();
  in_transaction(db_, path_, "add predictions", [&] {
    Stmt ins(
        db_, path_,
        "INSERT INTO predictions(created_at, scenario, strategy, target_accuracy, world_size, global_batch, updates, "
        "step_s, time_s, sim_run_id, fit, measured_s, measured_runs, version) "
        "VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11,?12,?13,?14)");
    for (const PredictionRow& p : rows) {
      ins.reset();
      ins.bind(1, now).bind(2, p.scenario).bind(3, p.strategy).bind(4, p.target_accuracy).bind(5, p.world_size);
      ins.bind(6, p.global_batch).bind(7, p.updates).bind(8, p.step_s).bind(9, p.time_s).bind(10, p.sim_run_id);
      ins.bind(11, p.fit_json).bind(12, p.measured_s.value_or(std::nan(""))).bind(13, p.measured_runs_json);
      ins.bind(14, version()).run();
    }
  });
}

std::vector<PredictionRow> Store::predictions() const {
  std::vector<PredictionRow> out;
  Stmt s(
      db_, path_,
      "SELECT id, created_at, scenario, strategy, target_accuracy, world_size, global_batch, updates, step_s, time_s, "
      "sim_run_id, fit, measured_s, measured_runs, version FROM predictions ORDER BY id");
  while (s.step()) {
    PredictionRow p;
    p.id = s.i64(0);
    p.created_at = s.text(1);
    p.scenario = s.text(2);
    p.strategy = s.text(3);
    p.target_accuracy = s.real(4);
    p.world_size = s.i32(5);
    p.global_batch = s.real(6);
    p.updates = s.real(7);
    p.step_s = s.real(8);
    p.time_s = s.real(9);
    p.sim_run_id = s.opt_i64(10);
    p.fit_json = s.text(11);
    p.measured_s = s.opt(12);
    p.measured_runs_json = s.text(13);
    p.version = s.text(14);
    out.push_back(std::move(p));
  }
  return out;
}

}  // namespace ddplab
