#!/usr/bin/env python3
"""Writes store_vN.sql: a results store of each past schema version N, as the build that shipped it created a
new file (its kSchema, then its migrations, taken from that commit's core/src), holding a few sample rows.
test_store_migration.cpp opens each with today's Store. Run from the project root once per new version:
    python3 tests/store/data/make_fixtures.py
"""
import re
import sqlite3
import subprocess
from pathlib import Path

# The last commit before each version's successor landed: what that version's build wrote.
COMMITS = {1: "422faa1^", 2: "20e253e^", 3: "7f05588^", 4: "d0e850c^", 5: "75baf57^", 6: "e335b7d^",
           7: "b895423^", 8: "956651c^", 9: "a1c7eeb", 10: "27f8928"}
LITERAL = re.compile(r'constexpr const char\* (kSchema|kMigrateTo(\d+)) = R"sql\((.*?)\)sql";', re.S)


def schema_sql(commit):
    files = subprocess.run(["git", "ls-tree", "--name-only", commit, "core/src/"], check=True, capture_output=True,
                           text=True).stdout.split()
    schema, migrations = None, {}
    for f in files:
        if not f.endswith(".cpp"):
            continue
        text = subprocess.run(["git", "show", f"{commit}:{f}"], check=True, capture_output=True, text=True).stdout
        for name, to, sql in LITERAL.findall(text):
            if name == "kSchema":
                schema = sql
            else:
                migrations[int(to)] = sql
    return [schema] + [migrations[v] for v in sorted(migrations)]


def sample_rows(db, version):
    run = ("INSERT INTO runs(scenario, strategy, backend, world_size, source, batch_size, config, host_info, version, "
           "started_at, ended_at, status) VALUES(?,?,?,2,'measured',32,?,'{\"hostname\":\"old\"}','0.1.0',?,?,?)")
    db.execute(run, ("default", "ring", "cpu", '{"model":"mlp"}', "2026-11-01T10:00:00Z", "2026-11-01T10:01:00Z",
                     "completed"))
    db.execute(run, ("default", "tree", "cpu", '{"model":"mlp"}', "2026-11-01T11:00:00Z", None, "running"))
    for run_id, steps in ((1, 4), (2, 2)):
        for step in range(steps):
            for rank in range(2):
                db.execute("INSERT INTO steps VALUES(?,?,?,0.01,0.004,0.002,0.001,?,32,1000,?)",
                           (run_id, step, rank, 0.02 + 0.01 * rank, 2.0 - 0.25 * step))
    db.execute("INSERT INTO evaluations(run_id, step, wall_s, test_loss, test_accuracy, macro_precision, macro_recall) "
               "VALUES(1, 4, 60.0, 0.5, 0.75, 0.7, 0.7)")
    db.execute("INSERT INTO resources(run_id, rank, peak_rss_bytes, cpu_s, wall_s) VALUES(1, 0, 1048576, 1.5, 2.0)")
    if version >= 2:
        db.execute("INSERT INTO bench_runs(kind, backend, world_size, ranks_per_node, iters, warmup, config, host_info, "
                   "version, started_at, ended_at, status) VALUES('collectives','mpi',2,1,10,2,'{}','{}','0.1.0',"
                   "'2026-11-01T12:00:00Z','2026-11-01T12:00:05Z','completed')")
        db.execute("INSERT INTO collective_bench(bench_id, schedule, collective, type, bytes, count, time_us, algbw_gbs, "
                   "busbw_gbs, wrong) VALUES(1,'ring','allreduce','float',4096,1024,10.0,0.41,0.41,0)")
    if version >= 3:
        db.execute("INSERT INTO calibrations(name, created_at, host_info, fit, version) VALUES('lab','2026-11-01T13:00:00Z','{}',"
                   "'{\"latency_s\":1e-6}','0.1.0')")


def main():
    here = Path(__file__).resolve().parent
    for version, commit in COMMITS.items():
        db = sqlite3.connect(":memory:")
        db.execute("PRAGMA foreign_keys=ON")
        db.execute("CREATE TABLE IF NOT EXISTS schema_version(version INTEGER NOT NULL)")
        for sql in schema_sql(commit):
            db.executescript(sql)
        db.execute("INSERT INTO schema_version(version) VALUES(?)", (version,))
        sample_rows(db, version)
        db.commit()
        lines = [f"-- A results store at schema version {version}, as ddplab at {commit} created it (make_fixtures.py)."]
        lines += [line for line in db.iterdump()]
        (here / f"store_v{version}.sql").write_text("\n".join(lines) + "\n")
        db.close()


if __name__ == "__main__":
    main()
