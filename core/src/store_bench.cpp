// Results store: the collective benchmark tables (bench_runs, collective_bench).
#include <sqlite3.h>

#include "ddplab/core/store.hpp"
#include "ddplab/core/version.hpp"
#include "store_sql.hpp"

namespace ddplab {

std::int64_t Store::begin_bench(const BenchInfo& info) {
  Stmt s(db_, path_,
         "INSERT INTO bench_runs(kind, backend, world_size, ranks_per_node, iters, warmup, config, host_info, "
         "version, started_at, ended_at, status) VALUES(?1,?2,?3,?4,?5,?6,?7,?8,?9,?10,NULL,'running')");
  s.bind(1, info.kind).bind(2, info.backend).bind(3, info.world_size).bind(4, info.ranks_per_node);
  s.bind(5, info.iters).bind(6, info.warmup).bind(7, info.config_json).bind(8, info.host_info);
  s.bind(9, std::string(version())).bind(10, utc_now()).run();
  return sqlite3_last_insert_rowid(db_);
}

bool BenchInfo::simulated() const { return backend == "simgrid"; }
Transport BenchInfo::transport() const { return choice_from<Transport>(backend).value_or(Transport::Mpi); }

void Store::add_bench_row(std::int64_t bench, const CollectiveBenchRow& row) {
  pending_->bench.emplace_back(bench, row);
  if (pending_->size() >= static_cast<std::size_t>(batch_rows_)) flush();
}

void Store::finish_bench(std::int64_t bench, RunStatus status) {
  if (status != RunStatus::Completed && status != RunStatus::Failed)
    throw StoreError(
        fmt::format("results store {}: finish_bench({}): status must be \"completed\" or \"failed\", not \"{}\"", path_,
                    bench, to_string(status)));
  std::optional<StoreError> flush_error;
  try {
    flush();
  } catch (const StoreError& e) {
    flush_error = e;
  }
  Stmt s(db_, path_, "UPDATE bench_runs SET status = ?1, ended_at = ?2 WHERE id = ?3");
  s.bind(1, status).bind(2, utc_now()).bind(3, bench).run();
  if (sqlite3_changes(db_) == 0)
    throw StoreError(fmt::format("results store {}: finish_bench: no bench with id {}", path_, bench));
  if (flush_error) throw *flush_error;
}

std::vector<BenchRunRow> Store::benches() const {
  pending_->flush(db_, path_);
  std::vector<BenchRunRow> out;
  Stmt s(db_, path_,
         "SELECT id, kind, backend, world_size, ranks_per_node, iters, warmup, config, host_info, version, "
         "started_at, ended_at, status FROM bench_runs ORDER BY id");
  while (s.step()) {
    BenchRunRow b;
    b.id = s.i64(0);
    b.info.kind = s.text(1);
    b.info.backend = s.text(2);
    b.info.world_size = s.i32(3);
    b.info.ranks_per_node = s.i32(4);
    b.info.iters = s.i32(5);
    b.info.warmup = s.i32(6);
    b.info.config_json = s.text(7);
    b.info.host_info = s.text(8);
    b.version = s.text(9);
    b.started_at = s.text(10);
    b.ended_at = s.text(11);
    b.status = s.choice<RunStatus>(12);
    out.push_back(std::move(b));
  }
  return out;
}

std::vector<CollectiveBenchRow> Store::bench_rows(std::int64_t bench) const {
  pending_->flush(db_, path_);
  std::vector<CollectiveBenchRow> out;
  Stmt s(db_, path_,
         "SELECT schedule, collective, type, bytes, count, time_us, algbw_gbs, busbw_gbs, wrong "
         "FROM collective_bench WHERE bench_id = ?1 ORDER BY id");
  s.bind(1, bench);
  while (s.step()) {
    CollectiveBenchRow r;
    r.schedule = s.text(0);
    r.collective = s.choice<Collective>(1);
    r.type = s.text(2);
    r.bytes = s.i64(3);
    r.count = s.i64(4);
    r.time_us = s.real(5);
    r.algbw_gbs = s.real(6);
    r.busbw_gbs = s.real(7);
    r.wrong = s.opt_i64(8);
    out.push_back(std::move(r));
  }
  return out;
}

}  // namespace ddplab
