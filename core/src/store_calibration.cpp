// Results store: calibration fits with their ping-pong measurements, and validation comparisons (schema 3).
#include <sqlite3.h>

#include "ddplab/core/store.hpp"
#include "ddplab/core/version.hpp"
#include "store_sql.hpp"

namespace ddplab {
namespace {

CalibrationRecord read_calibration(const Stmt& s) {
  CalibrationRecord r;
  r.id = s.i64(0);
  r.name = s.text(1);
  r.created_at = s.text(2);
  r.host_info = s.text(3);
  r.fit_json = s.text(4);
  return r;
}

constexpr const char* kCalibrationColumns = "SELECT id, name, created_at, host_info, fit FROM calibrations";

}  // namespace

std::int64_t Store::add_calibration(const CalibrationRecord& rec, const std::vector<PingPongRow>& pingpong) {
  if (rec.name.empty()) throw StoreError(fmt::format("results store {}: add_calibration: the name is empty", path_));
  flush();
  std::int64_t id = 0;
  in_transaction(db_, path_, "add calibration", [&] {
    Stmt s(db_, path_, "INSERT INTO calibrations(name, created_at, host_info, fit, version) VALUES(?1,?2,?3,?4,?5)");
    s.bind(1, rec.name).bind(2, rec.created_at.empty() ? utc_now() : rec.created_at).bind(3, rec.host_info);
    s.bind(4, rec.fit_json).bind(5, std::string(version())).run();
    id = sqlite3_last_insert_rowid(db_);
    Stmt ins(db_, path_,
             "INSERT INTO calibration_pingpong(calibration_id, src, dst, bytes, iters, one_way_s) "
             "VALUES(?1,?2,?3,?4,?5,?6)");
    for (const PingPongRow& p : pingpong) {
      ins.reset();
      ins.bind(1, id).bind(2, p.src).bind(3, p.dst).bind(4, p.bytes).bind(5, p.iters).bind(6, p.one_way_s).run();
    }
  });
  return id;
}

std::vector<CalibrationRecord> Store::calibrations() const {
  std::vector<CalibrationRecord> out;
  Stmt s(db_, path_, (std::string(kCalibrationColumns) + " ORDER BY id").c_str());
  while (s.step()) out.push_back(read_calibration(s));
  return out;
}

std::optional<CalibrationRecord> Store::calibration(const std::string& name) const {
  Stmt s(db_, path_, (std::string(kCalibrationColumns) + " WHERE name = ?1 ORDER BY id DESC LIMIT 1").c_str());
  s.bind(1, name);
  if (!s.step()) return std::nullopt;
  return read_calibration(s);
}

std::vector<PingPongRow> Store::pingpong_rows(std::int64_t calibration) const {
  std::vector<PingPongRow> out;
  Stmt s(db_, path_,
         "SELECT src, dst, bytes, iters, one_way_s FROM calibration_pingpong WHERE calibration_id = ?1 "
         "ORDER BY src, dst, bytes");
  s.bind(1, calibration);
  while (s.step()) out.push_back({s.i32(0), s.i32(1), s.i64(2), s.i32(3), s.real(4)});
  return out;
}

void Store::add_validations(const std::vector<ValidationRow>& rows) {
  flush();
  const std::string now = utc_now();
  in_transaction(db_, path_, "add validations", [&] {
    Stmt ins(
        db_, path_,
        "INSERT INTO validations(created_at, calibration, kind, ref_id, label, world_size, bytes, metric, measured, "
        "predicted, error_pct) VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,?11)");
    for (const ValidationRow& v : rows) {
      ins.reset();
      ins.bind(1, now).bind(2, v.calibration).bind(3, v.kind).bind(4, v.ref_id).bind(5, v.label);
      ins.bind(6, v.world_size).bind(7, v.bytes).bind(8, v.metric).bind(9, v.measured).bind(10, v.predicted);
      ins.bind(11, v.error_pct).run();
    }
  });
}

std::vector<ValidationRow> Store::validations() const {
  std::vector<ValidationRow> out;
  Stmt s(db_, path_,
         "SELECT id, created_at, calibration, kind, ref_id, label, world_size, bytes, metric, measured, predicted, "
         "error_pct FROM validations ORDER BY id");
  while (s.step()) {
    ValidationRow v;
    v.id = s.i64(0);
    v.created_at = s.text(1);
    v.calibration = s.text(2);
    v.kind = s.text(3);
    v.ref_id = s.i64(4);
    v.label = s.text(5);
    v.world_size = s.i32(6);
    v.bytes = s.i64(7);
    v.metric = s.text(8);
    v.measured = s.real(9);
    v.predicted = s.real(10);
    v.error_pct = s.real(11);
    out.push_back(std::move(v));
  }
  return out;
}

}  // namespace ddplab
