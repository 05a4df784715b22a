-- A results store at schema version 1, as ddplab at 422faa1^ created it (make_fixtures.py).
BEGIN TRANSACTION;
CREATE TABLE evaluations(
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  step INTEGER NOT NULL,
  wall_s REAL, test_loss REAL, test_accuracy REAL, macro_precision REAL, macro_recall REAL);
INSERT INTO "evaluations" VALUES(1,4,60.0,0.5,0.75,0.7,0.7);
CREATE TABLE resources(
  run_id INTEGER NOT NULL REFERENCES runs(id) ON DELETE CASCADE,
  rank INTEGER NOT NULL,
  peak_rss_bytes INTEGER NOT NULL,
  cpu_s REAL, wall_s REAL);
INSERT INTO "resources" VALUES(1,0,1048576,1.5,2.0);
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
  status TEXT NOT NULL CHECK(status IN ('running','completed','failed')));
INSERT INTO "runs" VALUES(1,'default','ring','cpu',2,'measured',32,'{"model":"mlp"}','{"hostname":"old"}','0.1.0','2026-11-01T10:00:00Z','2026-11-01T10:01:00Z','completed');
INSERT INTO "runs" VALUES(2,'default','tree','cpu',2,'measured',32,'{"model":"mlp"}','{"hostname":"old"}','0.1.0','2026-11-01T11:00:00Z',NULL,'running');
CREATE TABLE schema_version(version INTEGER NOT NULL);
INSERT INTO "schema_version" VALUES(1);
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
CREATE INDEX runs_by_name ON runs(scenario, strategy, source, status);
CREATE INDEX evaluations_by_run ON evaluations(run_id, step);
CREATE INDEX resources_by_run ON resources(run_id, rank);
DELETE FROM "sqlite_sequence";
INSERT INTO "sqlite_sequence" VALUES('runs',2);
COMMIT;
