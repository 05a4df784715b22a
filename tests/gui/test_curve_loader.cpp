// The background curve reader: what it reads against Store's own totals and evaluations, what it keeps
// across reloads, superseded loads, an unreadable store, and a loader destroyed mid-read.
#include <QFile>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include "ddplab/gui/curve_loader.hpp"
#include "gui_fixture.hpp"

using namespace ddplab;
using namespace ddplab::gui;
namespace fx = gui_fixture;

class CurveLoaderTest : public fx::StoreTest {
  Q_OBJECT

 private slots:
  void initTestCase() { QVERIFY(makeStore()); }

  void readsEveryMeasuredRunAsTheStoreHasIt() {
    const StoreSnapshot snap = load_snapshot(db_.toStdString());
    CurveLoader loader;
    loader.load(snap);
    QCOMPARE(loader.pending(), std::size_t(3));  // the 2- and 4-rank ring runs and the failed tree run
    QVERIFY(loader.waitUntilIdle(10000));
    QVERIFY(loader.error().isEmpty());
    const Store store(db_.toStdString(), Store::Access::ReadOnly);
    for (const RunRecord& r : snap.runs) {
      const RunCurves* c = loader.find(r.id());
      if (!r.measured()) {
        QVERIFY(!c);  // simulated runs have no curves
        continue;
      }
      QVERIFY(c);
      const std::vector<StepTotals> totals = store.totals(r.id());
      QCOMPARE(c->totals.size(), totals.size());
      for (std::size_t i = 0; i < totals.size(); ++i) {
        QCOMPARE(c->totals[i].step, totals[i].step);
        QCOMPARE(c->totals[i].slowest_s, totals[i].slowest_s);
        QCOMPARE(c->totals[i].samples, totals[i].samples);
        QCOMPARE(c->totals[i].mean_loss, totals[i].mean_loss);
      }
      const std::vector<Evaluation> evals = store.evaluations(r.id());
      QCOMPARE(c->evaluations.size(), evals.size());
      for (std::size_t i = 0; i < evals.size(); ++i) {
        QCOMPARE(c->evaluations[i].step, evals[i].step);
        QCOMPARE(c->evaluations[i].test_accuracy, evals[i].test_accuracy);
        QVERIFY(c->evaluations[i].confusion.empty());
      }
    }
    // The known values themselves: the 4-rank run's mean loss at step 2.
    QCOMPARE(loader.find(ids_.measured.at(4))->totals.at(2).mean_loss, fx::meanLoss(4, 2));
  }

  void prioritizedMovesTheGivenRunsFirstInTheirOrder() {
    std::deque<RunRow> queue;
    for (std::int64_t id : {1, 2, 3, 4, 5}) queue.push_back(RunRow{id, {}, {}, {}, {}, RunStatus::Completed, {}, {}});
    std::vector<std::int64_t> order;
    for (const RunRow& r : prioritized(queue, {5, 9, 3})) order.push_back(r.id);  // 9 is not queued
    QCOMPARE(order, (std::vector<std::int64_t>{5, 3, 1, 2, 4}));
    order.clear();
    for (const RunRow& r : prioritized(queue, {})) order.push_back(r.id);
    QCOMPARE(order, (std::vector<std::int64_t>{1, 2, 3, 4, 5}));
  }

  void keepsWhatCannotChangeAndRereadsTheRest() {
    StoreSnapshot snap = load_snapshot(db_.toStdString());
    CurveLoader loader;
    loader.load(snap);
    QVERIFY(loader.waitUntilIdle(10000));
    QCOMPARE(loader.readCount(), std::size_t(3));
    const RunCurves* two = loader.find(ids_.measured.at(2));
    // The same runs again: nothing to read, the same curves.
    loader.load(snap);
    QVERIFY(loader.idle());
    QCOMPARE(loader.find(ids_.measured.at(2)), two);
    // A run marked running is read again (its steps may grow), and so is one that changed since.
    for (RunRecord& r : snap.runs) {
      if (r.id() == ids_.measured.at(2)) r.summary.run.status = RunStatus::Running, r.summary.run.ended_at.clear();
      if (r.id() == ids_.measured.at(4)) r.summary.run.ended_at = "2099-01-01T00:00:00Z";
    }
    loader.load(snap);
    QCOMPARE(loader.pending(), std::size_t(2));
    QVERIFY(!loader.find(ids_.measured.at(2)) && !loader.find(ids_.measured.at(4)) && loader.find(ids_.failed));
    QVERIFY(loader.waitUntilIdle(10000));
    QCOMPARE(loader.readCount(), std::size_t(5));
    // A run no longer in the store is forgotten (the one marked running is read once more).
    snap.runs.erase(
        std::remove_if(snap.runs.begin(), snap.runs.end(), [&](const RunRecord& r) { return r.id() == ids_.failed; }),
        snap.runs.end());
    loader.load(snap);
    QVERIFY(!loader.find(ids_.failed));
    QCOMPARE(loader.pending(), std::size_t(1));
    QVERIFY(loader.waitUntilIdle(10000));
  }

  void aNewerLoadSupersedesAnOlderOne() {
    const QString other = dir_.filePath("other.db");
    QVERIFY(QFile::copy(db_, other));
    {
      Store store(other.toStdString());
      store.delete_runs({ids_.measured.at(4), ids_.failed});
    }
    CurveLoader loader;
    loader.load(load_snapshot(db_.toStdString()));
    loader.load(load_snapshot(other.toStdString()));  // before the first one's curves came in
    QCOMPARE(loader.pending(), std::size_t(1));
    QVERIFY(loader.waitUntilIdle(10000));
    QVERIFY(loader.find(ids_.measured.at(2)) && !loader.find(ids_.measured.at(4)) && !loader.find(ids_.failed));
    QCoreApplication::processEvents();  // a stale batch still queued is dropped, not added
    QVERIFY(!loader.find(ids_.measured.at(4)));
  }

  void anUnreadableStoreIsReportedNotWaitedFor() {
    const QString gone = dir_.filePath("gone.db");
    QVERIFY(QFile::copy(db_, gone));
    const StoreSnapshot snap = load_snapshot(gone.toStdString());
    QVERIFY(QFile::remove(gone));
    CurveLoader loader;
    QSignalSpy failed(&loader, &CurveLoader::failed);
    loader.load(snap);
    QVERIFY(loader.waitUntilIdle(10000));
    QCOMPARE(failed.size(), 1);
    QVERIFY2(loader.error().contains(gone), qPrintable(loader.error()));
    QVERIFY(!loader.find(ids_.measured.at(2)));
  }

  void destroyedWhileReading() {
    const StoreSnapshot snap = load_snapshot(db_.toStdString());
    for (int i = 0; i < 20; ++i) {
      auto loader = std::make_unique<CurveLoader>();
      loader->load(snap);
      loader.reset();  // joins the worker; its queued batches die with it
    }
    QCoreApplication::processEvents();
  }
};

QTEST_MAIN(CurveLoaderTest)
#include "test_curve_loader.moc"
