// Results store: timelines (schema 7), one row per traced op (core/trace.hpp's TraceEvent), and flight
// recorder dumps (schema 10, core/flight.hpp).
#include <sqlite3.h>

#include "ddplab/core/store.hpp"
#include "store_sql.hpp"

namespace ddplab {

void Store::add_trace(std::int64_t run, const std::vector<TraceEvent>& events) {
  flush();
  in_transaction(db_, path_, "add trace", [&] {
    Stmt ins(db_, path_,
             "INSERT INTO trace_events(run_id, rank, step, track, name, start_s, dur_s, args) "
             "VALUES(?1,?2,?3,?4,?5,?6,?7,?8)");
    for (const TraceEvent& e : events) {
      ins.reset();
      ins.bind(1, run)
          .bind(2, e.rank)
          .bind(3, trace_step(e))
          .bind(4, e.track)
          .bind(5, e.name)
          .bind(6, e.start_s)
          .bind(7, e.dur_s);
      ins.bind(8, e.args.dump()).run();
    }
  });
}

std::vector<TraceEvent> Store::trace_events(std::int64_t run) const {
  std::vector<TraceEvent> out;
  if (schema_ < 7) return out;
  pending_->flush(db_, path_);
  Stmt s(db_, path_,
         "SELECT rank, track, name, start_s, dur_s, args FROM trace_events WHERE run_id = ?1 ORDER BY step, rank, "
         "start_s, rowid");
  s.bind(1, run);
  while (s.step()) {
    TraceEvent e;
    e.rank = s.i32(0);
    e.track = s.text(1);
    e.name = s.text(2);
    e.start_s = s.real(3);
    e.dur_s = s.real(4);
    e.args = nlohmann::json::parse(s.text(5), nullptr, false);
    if (e.args.is_discarded()) e.args = nlohmann::json::object();
    out.push_back(std::move(e));
  }
  return out;
}

std::vector<std::int64_t> Store::traced_runs() const {
  std::vector<std::int64_t> out;
  if (schema_ < 7) return out;
  pending_->flush(db_, path_);
  Stmt s(db_, path_, "SELECT DISTINCT run_id FROM trace_events ORDER BY run_id");
  while (s.step()) out.push_back(s.i64(0));
  return out;
}

void Store::add_flight(std::int64_t run, const std::vector<FlightRecord>& records) {
  flush();
  in_transaction(db_, path_, "add flight records", [&] {
    Stmt ins(db_, path_,
             "INSERT OR REPLACE INTO flight_records(run_id, rank, seq, step, op, call, bytes, start_s, end_s, failed) "
             "VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10)");
    for (const FlightRecord& r : records) {
      ins.reset();
      ins.bind(1, run).bind(2, r.rank).bind(3, r.seq).bind(4, r.step).bind(5, r.op).bind(6, r.call).bind(7, r.bytes);
      ins.bind(8, r.start_s);
      if (r.in_flight())
        ins.bind_null(9);
      else
        ins.bind(9, r.end_s);
      ins.bind(10, r.failed ? 1 : 0).run();
    }
  });
}

std::vector<FlightRecord> Store::flight(std::int64_t run) const {
  std::vector<FlightRecord> out;
  if (schema_ < 10) return out;
  pending_->flush(db_, path_);
  Stmt s(db_, path_,
         "SELECT rank, seq, step, op, call, bytes, start_s, end_s, failed FROM flight_records WHERE run_id = ?1 "
         "ORDER BY rank, seq");
  s.bind(1, run);
  while (s.step()) {
    FlightRecord r;
    r.rank = s.i32(0);
    r.seq = s.i64(1);
    r.step = s.i64(2);
    r.op = s.text(3);
    r.call = s.text(4);
    r.bytes = s.i64(5);
    r.start_s = s.real(6);
    r.end_s = s.null(7) ? -1 : s.real(7);
    r.failed = s.i32(8) != 0;
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace ddplab
