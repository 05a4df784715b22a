// The Goodput view: predicted time to accuracy per strategy against the stored predictions, the best
// strategy marked per world size, measured counterparts as points.
#include <QComboBox>
#include <QLabel>
#include <QLogValueAxis>
#include <QScatterSeries>
#include <QTemporaryDir>
#include <QtTest>

#include "ddplab/gui/goodput_view.hpp"
#include "ddplab/gui/main_window.hpp"
#include "gui_fixture.hpp"

using namespace ddplab;
using namespace ddplab::gui;
namespace fx = gui_fixture;

class GoodputViewTest : public fx::StoreTest {
  Q_OBJECT

 private slots:
  void initTestCase() { QVERIFY(makeStore()); }

  void predictionsPerStrategyWithTheBestMarked() {
    MainWindow w;
    QVERIFY(w.openStore(db_));
    GoodputView* v = w.goodputView();
    QCOMPARE(v->batches().size(), std::size_t(1));
    QCOMPARE(v->batchCombo()->count(), 1);
    const PredictionBatch& b = v->batches().front();
    QCOMPARE(b.rows.size(), std::size_t(4));
    // Tree is faster at 4 ranks (1.5 s against 2.0 s), ring at 64 (0.5 s against 0.8 s).
    const auto best = best_per_world(b);
    QCOMPARE(best.size(), std::size_t(2));
    QCOMPARE(b.rows[best[0].second].strategy, std::string("tree"));
    QCOMPARE(b.rows[best[1].second].strategy, std::string("ring"));
    QChart* c = v->chartViews().front()->chart();
    QXYSeries* ring = fx::seriesNamed(c, "ring predicted");
    QXYSeries* tree = fx::seriesNamed(c, "tree predicted");
    QVERIFY(ring && tree);
    QCOMPARE(ring->points(), (QList<QPointF>{{4, 2.0}, {64, 0.5}}));
    QCOMPARE(tree->points(), (QList<QPointF>{{4, 1.5}, {64, 0.8}}));
    QXYSeries* measured = fx::seriesNamed(c, "ring measured");
    QVERIFY(measured);
    QCOMPARE(measured->points(), (QList<QPointF>{{4, 2.2}}));
    QVERIFY(!fx::seriesNamed(c, "tree measured"));  // no counterpart, no series
    QXYSeries* stars = fx::seriesNamed(c, "best at each size");
    QVERIFY(stars);
    QCOMPARE(stars->points(), (QList<QPointF>{{4, 1.5}, {64, 0.5}}));
    QVERIFY2(
        v->summaryLabel()->text().contains("4 ranks: tree") && v->summaryLabel()->text().contains("64 ranks: ring"),
        qPrintable(v->summaryLabel()->text()));
    QVERIFY(qobject_cast<QLogValueAxis*>(c->axes(Qt::Vertical).value(0)));
  }

  void batchesSplitByInvocation() {
    std::vector<PredictionRow> rows(4);
    const char* strategies[] = {"ring", "ring", "tree", "ring"};
    const int worlds[] = {4, 64, 4, 4};
    for (std::size_t i = 0; i < rows.size(); ++i) {
      rows[i].scenario = "demo", rows[i].target_accuracy = 0.8, rows[i].strategy = strategies[i],
      rows[i].world_size = worlds[i];
      rows[i].created_at = i < 2 ? "2026-12-01T10:00:00Z" : "2026-12-01T10:00:01Z";  // strategies a second apart
    }
    // One invocation for ring and tree (a second apart); ring at 4 again starts the next.
    auto batches = prediction_batches(rows);
    QCOMPARE(batches.size(), std::size_t(2));
    QCOMPARE(batches[0].rows.size(), std::size_t(3));
    rows[2].target_accuracy = 0.85;  // another target: another invocation
    QCOMPARE(prediction_batches(rows).size(), std::size_t(3));
  }

  void emptyStoreSaysHowToPredict() {
    const QString empty = dir_.filePath("empty.db");
    { Store s(empty.toStdString()); }
    MainWindow w;
    QVERIFY(w.openStore(empty));
    QVERIFY(w.goodputView()->summaryLabel()->text().contains("ddplab predict"));
  }
};

QTEST_MAIN(GoodputViewTest)
#include "test_goodput_view.moc"
