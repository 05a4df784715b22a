// The store every GUI test opens: runs, a benchmark, validations and predictions with known values, so
// that each view's series can be checked against hand-computed figures and against Store's own summaries.
//   measured  "demo" ring  at 2 and 4 ranks: kSteps steps, known per-rank times and losses, evaluations
//   measured  "demo" tree  at 2 ranks, failed after 2 steps (greyed, left out of scaling and breakdown)
//   simulated "demo" ring  at 8, 2 and 4 ranks (out of order), and "big" (resnet50) ring at 64 ranks
//   bench #1: ring and tree allreduce busbw at 3 sizes; one validate invocation predicting ring's, and the
//   2-rank ring run's step time
//   predictions: "demo" to 0.8 at 4 and 64 ranks, ring and tree
//   timelines: the 4-rank measured run's steps 4 and 5, the 4-rank simulation's step 0 (traceOp)
#pragma once
#include <QList>
#include <QObject>
#include <QTemporaryDir>
#include <QPointF>
#include <QString>
#include <QXYSeries>
#include <QChart>
#include <cmath>
#include <cstdint>
#include <limits>
#include <map>
#include <string>
#include <vector>

#include "ddplab/core/store.hpp"

namespace gui_fixture {

using namespace ddplab;

constexpr int kSteps = 6;
constexpr int kBatch = 64;  // per rank

// Per-rank loss of a measured run: decreasing in step, offset by rank.
inline double loss(int world, std::int64_t step, int rank) { return 2.0 + 0.1 * world - 0.25 * step + 0.03 * rank; }
inline double meanLoss(int world, std::int64_t step) {
  double sum = 0;
  for (int r = 0; r < world; ++r) sum += loss(world, step, r);
  return sum / world;
}
// Per-rank step time: rank 1 of the 4-rank run is slow in compute (the straggler).
inline double compute(int world, int rank) { return 0.08 + (world == 4 && rank == 1 ? 0.02 : 0.0); }
inline double stepTime(int world, std::int64_t step, int rank) {
  return 0.15 + 0.005 * world + 0.01 * rank + 0.001 * step;
}
// Test accuracy after n completed steps (evaluations at 3 and kSteps).
inline double accuracy(int world, std::int64_t completed) { return 0.5 + 0.06 * completed + 0.01 * world; }

inline std::string mlpConfig(const std::string& extra = "") {
  return R"({"model":{"type":"mlp","layers":[784,64,10]})" + extra + "}";
}

// The stored timeline: per rank a forward, a backward and a sync_grads op; `scale` stretches the simulated one.
inline std::vector<TraceEvent> traceOps(std::int64_t step, double origin_s, double scale) {
  std::vector<TraceEvent> out;
  for (int rank = 0; rank < 4; ++rank) {
    const double t = origin_s + 0.001 * rank;
    out.push_back({rank, "compute", "forward", t, 0.010 * scale, {{"step", step}}});
    out.push_back({rank, "compute", "backward 0", t + 0.010 * scale, 0.020 * scale, {{"step", step}}});
    out.push_back({rank,
                   "comm",
                   "sync_grads 0",
                   t + 0.030 * scale,
                   0.005 * (rank + 1) * scale,
                   {{"step", step}, {"bytes", 4096}}});
  }
  return out;
}

struct Ids {
  std::map<int, std::int64_t> measured, simulated;  // world -> run
  std::int64_t failed = 0, big = 0, bench = 0;
};

inline Ids build(const std::string& path) {
  Ids ids;
  Store store(path);
  for (int world : {2, 4}) {
    const auto id =
        store.begin_run(RunInfo{"demo", "ring", "cpu", world, RunSource::Measured, mlpConfig(), "{}", kBatch});
    for (std::int64_t step = 0; step < kSteps; ++step)
      for (int rank = 0; rank < world; ++rank) {
        StepMetrics m;
        m.step = step, m.rank = rank;
        m.compute_s = compute(world, rank);
        m.comm_s = 0.02 * world;
        m.exposed_comm_s = 0.01 * world;
        m.optimizer_s = 0.005;
        m.step_s = stepTime(world, step, rank);
        m.samples = kBatch;
        m.bytes_sent = 1 << 20;
        m.loss = loss(world, step, rank);
        store.add_step(id, m);
      }
    if (world == 4) {
      auto events = traceOps(4, 10.0, 1.0);
      for (const TraceEvent& e : traceOps(5, 11.0, 1.0)) events.push_back(e);
      store.add_trace(id, events);
    }
    for (std::int64_t at : {3, kSteps})
      store.add_evaluation(id, Evaluation{at, 1.0 * at, 1.0 - 0.05 * at, accuracy(world, at), 0.7, 0.6, 0, {}});
    store.finish_run(id, RunStatus::Completed);
    ids.measured[world] = id;
  }
  {
    ids.failed = store.begin_run(RunInfo{"demo", "tree", "cpu", 2, RunSource::Measured, mlpConfig(), "{}", kBatch});
    for (std::int64_t step = 0; step < 2; ++step)
      for (int rank = 0; rank < 2; ++rank) {
        StepMetrics m;
        m.step = step, m.rank = rank, m.compute_s = 0.08, m.step_s = 0.2, m.samples = kBatch, m.loss = 2.5;
        store.add_step(ids.failed, m);
      }
    store.finish_run(ids.failed, RunStatus::Failed);
  }
  const std::string sim = R"(,"simulation":{"compute_origin":"run #1","network_model":"LV08"})";
  for (int world : {8, 2, 4}) {
    const auto id =
        store.begin_run(RunInfo{"demo", "ring", "simgrid", world, RunSource::Simulated, mlpConfig(sim), "{}", kBatch});
    for (int rank = 0; rank < world; ++rank) {
      StepMetrics m;
      m.step = 0, m.rank = rank;
      m.compute_s = 0.08, m.exposed_comm_s = 0.002 * world, m.optimizer_s = 0.005;
      m.step_s = 0.1 * (1.0 + 0.1 * std::log2(world));
      m.samples = kBatch;
      m.loss = std::numeric_limits<double>::quiet_NaN();
      store.add_step(id, m);
    }
    if (world == 4) store.add_trace(id, traceOps(0, 0.0, 2.0));
    store.finish_run(id, RunStatus::Completed);
    ids.simulated[world] = id;
  }
  {
    ids.big = store.begin_run(RunInfo{"big", "ring", "simgrid", 64, RunSource::Simulated,
                                      R"({"model":{"type":"table","table":"resnet50"}})", "{}", 32});
    StepMetrics m;
    m.step = 0, m.compute_s = 0.2, m.step_s = 0.3, m.samples = 32, m.loss = std::numeric_limits<double>::quiet_NaN();
    store.add_step(ids.big, m);
    store.finish_run(ids.big, RunStatus::Completed);
  }
  {
    const BenchInfo b{"collectives", "mpi", 4, 2, 5, 1, "{}", "{}"};
    ids.bench = store.begin_bench(b);
    for (const char* schedule : {"ring", "tree"})
      for (std::int64_t bytes : {std::int64_t(1) << 10, std::int64_t(1) << 16, std::int64_t(1) << 22}) {
        CollectiveBenchRow r;
        r.schedule = schedule, r.bytes = bytes, r.count = bytes / 4;
        r.busbw_gbs = (std::string(schedule) == "ring" ? 1.0 : 0.5) * std::log2(static_cast<double>(bytes)) / 10;
        r.algbw_gbs = r.busbw_gbs / 1.5, r.time_us = 1;
        store.add_bench_row(ids.bench, r);
      }
    store.finish_bench(ids.bench, RunStatus::Completed);
    std::vector<ValidationRow> v;
    for (std::int64_t bytes : {std::int64_t(1) << 10, std::int64_t(1) << 16, std::int64_t(1) << 22}) {
      const double measured = std::log2(static_cast<double>(bytes)) / 10;
      v.push_back(
          ValidationRow::compare("", "collective", ids.bench, "ring", 4, bytes, "busbw_gbs", measured, 1.1 * measured));
    }
    v.push_back(ValidationRow::compare("", "run", ids.measured[2], "ring", 2, 0, "step_s", 0.16, 0.15));
    store.add_validations(v);
  }
  {
    std::vector<PredictionRow> rows;
    auto row = [&](const char* strategy, int world, double time, std::optional<double> measured) {
      PredictionRow p;
      p.scenario = "demo", p.strategy = strategy, p.target_accuracy = 0.8, p.world_size = world;
      p.global_batch = kBatch * world, p.updates = 100, p.step_s = time / 100, p.time_s = time, p.fit_json = "{}";
      p.measured_s = measured;
      rows.push_back(p);
    };
    row("ring", 4, 2.0, 2.2);
    row("ring", 64, 0.5, std::nullopt);
    row("tree", 4, 1.5, std::nullopt);
    row("tree", 64, 0.8, std::nullopt);
    store.add_predictions(rows);
  }
  return ids;
}

inline QList<QXYSeries*> seriesOfType(QChart* chart, QAbstractSeries::SeriesType type) {
  QList<QXYSeries*> out;
  for (QAbstractSeries* s : chart->series())
    if (s->type() == type) out.append(static_cast<QXYSeries*>(s));
  return out;
}

inline QXYSeries* seriesNamed(QChart* chart, const QString& name) {
  for (QAbstractSeries* s : chart->series())
    if (s->name() == name) return qobject_cast<QXYSeries*>(s);
  return nullptr;
}

// What each view's test case starts from: the fixture store, built once in a temporary folder
// (initTestCase: QVERIFY(makeStore())).
class StoreTest : public QObject {
 protected:
  QTemporaryDir dir_;
  QString db_;
  Ids ids_;
  bool makeStore() {
    if (!dir_.isValid()) return false;
    db_ = dir_.filePath("results.db");
    ids_ = build(db_.toStdString());
    return true;
  }
};

}  // namespace gui_fixture
