// The Collectives view: measured busbw lines against the bench's rows, the newest validation's predictions
// as dashed lines, log-log axes labelled at each decade, and the empty state.
#include <QComboBox>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QTemporaryDir>
#include <QtTest>

#include "ddplab/gui/collectives_view.hpp"
#include "ddplab/gui/main_window.hpp"
#include "gui_fixture.hpp"

using namespace ddplab;
using namespace ddplab::gui;
namespace fx = gui_fixture;

class CollectivesViewTest : public fx::StoreTest {
  Q_OBJECT

 private slots:
  void initTestCase() { QVERIFY(makeStore()); }

  void busbwPerScheduleMeasuredAndPredicted() {
    MainWindow w;
    QVERIFY(w.openStore(db_));
    CollectivesView* v = w.collectivesView();
    QCOMPARE(v->benchCombo()->count(), 1);
    QCOMPARE(v->benchCombo()->itemData(0).toLongLong(), ids_.bench);
    const auto& lines = v->lines();
    QCOMPARE(lines.size(), std::size_t(3));  // ring, tree measured; ring predicted
    const Store store(db_.toStdString(), Store::Access::ReadOnly);
    const auto rows = store.bench_rows(ids_.bench);
    for (const BusbwLine& l : lines) {
      QCOMPARE(l.points.size(), std::size_t(3));
      for (const auto& [bytes, bw] : l.points) {
        const double measured = (l.schedule == "ring" ? 1.0 : 0.5) * std::log2(static_cast<double>(bytes)) / 10;
        const double want = l.simulated ? 1.1 * std::log2(static_cast<double>(bytes)) / 10 : measured;
        QVERIFY2(std::abs(bw - want) < 1e-12, qPrintable(QString::fromStdString(l.schedule)));
      }
    }
    QCOMPARE(lines[2].schedule, std::string("ring"));
    QVERIFY(lines[2].simulated);
    QChart* c = v->chartViews().front()->chart();
    QXYSeries* measured = fx::seriesNamed(c, "ring measured");
    QXYSeries* predicted = fx::seriesNamed(c, "ring simulated");
    QVERIFY(measured && predicted && fx::seriesNamed(c, "tree measured"));
    QCOMPARE(measured->pen().color(), predicted->pen().color());  // one colour per schedule
    QCOMPARE(predicted->pen().style(), Qt::DashLine);
    QCOMPARE(measured->points().first(), QPointF(1024, 1.0));
    // Log-log, each axis spanning whole decades around the points.
    for (Qt::Orientation o : {Qt::Horizontal, Qt::Vertical}) {
      auto* a = qobject_cast<QLogValueAxis*>(c->axes(o).value(0));
      QVERIFY(a && a->base() == 10.0);
      const double lg = std::log10(a->min());
      QVERIFY(std::abs(lg - std::round(lg)) < 0.01);  // just below a power of ten: labelled
    }
    QCOMPARE(c->axes(Qt::Horizontal).value(0)->property("max").toDouble() > 4194304.0, true);
  }

  void emptyStoreSaysHowToMeasure() {
    const QString empty = dir_.filePath("empty.db");
    { Store s(empty.toStdString()); }
    MainWindow w;
    QVERIFY(w.openStore(empty));
    QCOMPARE(w.collectivesView()->benchCombo()->count(), 0);
    QVERIFY(w.collectivesView()->lines().empty());
    QVERIFY(w.collectivesView()->chartViews().front()->chart()->title().contains("no collective benchmarks"));
  }
};

QTEST_MAIN(CollectivesViewTest)
#include "test_collectives_view.moc"
