-- A results store at schema version 10, as ddplab at 27f8928 created it (make_fixtures.py).
BEGIN TRANSACTION;
CREATE TABLE bench_runs(
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  kind TEXT NOT NULL,
  backend TEXT NOT NULL,
  world_size INTEGER NOT NULL CHECK(world_size >= 1),
  ranks_per_node INTEGER NOT NULL CHECK(ranks_per_node >= 1),
  iters INTEGER NOT NULL,
  warmup INTEGER NOT NULL,
  config TEXT NOT NULL,
  host_info TEXT NOT NULL,
  version TEXT NOT NULL,
  started_at TEXT NOT NULL,
  ended_at TEXT,
  status TEXT NOT NULL CHECK(status IN ('running','completed','failed')));
INSERT INTO "bench_runs" VALUES(1,'collectives','mpi',2,1,10,2,'{}','{}','0.1.0','2026-11-01T12:00:00Z','2026-11-01T12:00:05Z','completed');
CREATE TABLE calibration_pingpong(
  calibration_id INTEGER NOT NULL REFERENCES calibrations(id) ON DELETE CASCADE,
  src INTEGER NOT NULL, dst INTEGER NOT NULL,
  bytes INTEGER NOT NULL CHECK(bytes >= 0),
  iters INTEGER NOT NULL,
  one_way_s REAL);
CREATE TABLE calibrations(
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  name TEXT NOT NULL,
  created_at TEXT NOT NULL,
  host_info TEXT NOT NULL,
  fit TEXT NOT NULL,
  version TEXT NOT NULL);
INSERT INTO "calibrations" VALUES(1,'lab','2026-11-01T13:00:00Z','{}','{"latency_s":1e-6}','0.1.0');
CREATE TABLE collective_bench(
  id INTEGER PRIMARY KEY,
  bench_id INTEGER NOT NULL REFERENCES bench_runs(id) ON DELETE CASCADE,
  schedule TEXT NOT NULL,
  collective TEXT NOT NULL,
  type TEXT NOT NULL,
  bytes INTEGER NOT NULL CHECK(bytes >= 0),
  count INTEGER NOT NULL CHECK(count >= 0),
  time_us REAL, algbw_gbs REAL, busbw_gbs REAL,
  wrong INTEGER);
INSERT INTO "collective_bench" VALUES(1,1,'ring','allreduce','float',4096,1024,10.0,0.41,0.41,0);
CREATE TABLE evaluations(
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  step INTEGER NOT NULL,
  wall_s REAL, test_loss REAL, test_accuracy REAL, macro_precision REAL, macro_recall REAL, confusion TEXT);
INSERT INTO "evaluations" VALUES(1,4,60.0,0.5,0.75,0.7,0.7,NULL);
CREATE TABLE flight_records(
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  rank INTEGER NOT NULL,
  seq INTEGER NOT NULL,
  step INTEGER NOT NULL,
  op TEXT NOT NULL,
  call TEXT NOT NULL,
  bytes INTEGER NOT NULL,
  start_s REAL NOT NULL,
  end_s REAL,
  failed INTEGER NOT NULL,
  PRIMARY KEY(run_id, rank, seq)) WITHOUT ROWID;
CREATE TABLE predictions(
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  created_at TEXT NOT NULL,
  scenario TEXT NOT NULL,
  strategy TEXT NOT NULL,
  target_accuracy REAL NOT NULL,
  world_size INTEGER NOT NULL,
  global_batch REAL NOT NULL,
  updates REAL NOT NULL,
  step_s REAL NOT NULL,
  time_s REAL NOT NULL,
  sim_run_id INTEGER REFERENCES runs(id) ON DELETE SET NULL,
  fit TEXT NOT NULL,
  measured_s REAL,
  measured_runs TEXT NOT NULL DEFAULT '[]',
  version TEXT NOT NULL);
CREATE TABLE resources(
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  rank INTEGER NOT NULL,
  peak_rss_bytes INTEGER NOT NULL,
  cpu_s REAL, wall_s REAL, peak_device_bytes INTEGER);
INSERT INTO "resources" VALUES(1,0,1048576,1.5,2.0,NULL);
CREATE TABLE run_summaries(
  run_id INTEGER PRIMARY KEY REFERENCES runs(id) ON DELETE CASCADE,
  definition INTEGER NOT NULL,
  summary TEXT NOT NULL);
CREATE TABLE runs(
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  scenario TEXT NOT NULL,
  strategy TEXT NOT NULL,
  backend TEXT NOT NULL,
  world_size INTEGER NOT NULL CHECK(world_size >= 1),
  source TEXT NOT NULL CHECK(source IN ('measured','simulated')),
  batch_size INTEGER NOT NULL,
  config TEXT NOT NULL,
  host_info TEXT NOT NULL,
  version TEXT NOT NULL,
  started_at TEXT NOT NULL,
  ended_at TEXT,
  status TEXT NOT NULL CHECK(status IN ('running','completed','failed','interrupted')), writer TEXT, reason TEXT);
INSERT INTO "runs" VALUES(1,'default','ring','cpu',2,'measured',32,'{"model":"mlp"}','{"hostname":"old"}','0.1.0','2026-11-01T10:00:00Z','2026-11-01T10:01:00Z','completed',NULL,NULL);
INSERT INTO "runs" VALUES(2,'default','tree','cpu',2,'measured',32,'{"model":"mlp"}','{"hostname":"old"}','0.1.0','2026-11-01T11:00:00Z',NULL,'running',NULL,NULL);
CREATE TABLE schema_version(version INTEGER NOT NULL);
INSERT INTO "schema_version" VALUES(10);
CREATE TABLE step_totals(
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  step INTEGER NOT NULL,
  ranks INTEGER NOT NULL,
  slowest_s REAL, samples REAL, compute_s REAL, comm_s REAL, exposed_comm_s REAL, optimizer_s REAL, bytes_sent REAL,
  mean_loss REAL,
  PRIMARY KEY(run_id, step)) WITHOUT ROWID;
CREATE TABLE steps(
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  step INTEGER NOT NULL,
  rank INTEGER NOT NULL,
  compute_s REAL, comm_s REAL, exposed_comm_s REAL, optimizer_s REAL, step_s REAL,
  samples INTEGER NOT NULL,
  bytes_sent INTEGER NOT NULL,
  loss REAL,
  PRIMARY KEY(run_id, step, rank)) WITHOUT ROWID;
INSERT INTO "steps" VALUES(1,0,0,0.01,0.004,0.002,0.001,0.02,32,1000,2.0);
INSERT INTO "steps" VALUES(1,0,1,0.01,0.004,0.002,0.001,0.03,32,1000,2.0);
INSERT INTO "steps" VALUES(1,1,0,0.01,0.004,0.002,0.001,0.02,32,1000,1.75);
INSERT INTO "steps" VALUES(1,1,1,0.01,0.004,0.002,0.001,0.03,32,1000,1.75);
INSERT INTO "steps" VALUES(1,2,0,0.01,0.004,0.002,0.001,0.02,32,1000,1.5);
INSERT INTO "steps" VALUES(1,2,1,0.01,0.004,0.002,0.001,0.03,32,1000,1.5);
INSERT INTO "steps" VALUES(1,3,0,0.01,0.004,0.002,0.001,0.02,32,1000,1.25);
INSERT INTO "steps" VALUES(1,3,1,0.01,0.004,0.002,0.001,0.03,32,1000,1.25);
INSERT INTO "steps" VALUES(2,0,0,0.01,0.004,0.002,0.001,0.02,32,1000,2.0);
INSERT INTO "steps" VALUES(2,0,1,0.01,0.004,0.002,0.001,0.03,32,1000,2.0);
INSERT INTO "steps" VALUES(2,1,0,0.01,0.004,0.002,0.001,0.02,32,1000,1.75);
INSERT INTO "steps" VALUES(2,1,1,0.01,0.004,0.002,0.001,0.03,32,1000,1.75);
CREATE TABLE trace_events(
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  rank INTEGER NOT NULL,
  step INTEGER NOT NULL,
  track TEXT NOT NULL,
  name TEXT NOT NULL,
  start_s REAL NOT NULL,
  dur_s REAL NOT NULL,
  args TEXT NOT NULL DEFAULT '{}');
CREATE TABLE validations(
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  created_at TEXT NOT NULL,
  calibration TEXT NOT NULL,
  kind TEXT NOT NULL CHECK(kind IN ('run','collective')),
  ref_id INTEGER NOT NULL,
  label TEXT NOT NULL,
  world_size INTEGER NOT NULL,
  bytes INTEGER NOT NULL,
  metric TEXT NOT NULL,
  measured REAL, predicted REAL, error_pct REAL);
CREATE INDEX runs_by_name ON runs(scenario, strategy, source, status);
CREATE INDEX evaluations_by_run ON evaluations(run_id, step);
CREATE INDEX resources_by_run ON resources(run_id, rank);
CREATE INDEX collective_bench_by_bench ON collective_bench(bench_id, schedule, bytes);
CREATE INDEX calibrations_by_name ON calibrations(name, id);
CREATE INDEX calibration_pingpong_by_id ON calibration_pingpong(calibration_id, src, dst, bytes);
CREATE INDEX predictions_by_scenario ON predictions(scenario, strategy, id);
CREATE INDEX trace_events_by_run ON trace_events(run_id, step, rank);
DELETE FROM "sqlite_sequence";
INSERT INTO "sqlite_sequence" VALUES('runs',2);
INSERT INTO "sqlite_sequence" VALUES('bench_runs',1);
INSERT INTO "sqlite_sequence" VALUES('calibrations',1);
COMMIT;
