// The Convergence view: curves against the store's known losses and evaluations, the three x axes,
// TensorBoard's smoothing, the time-to-accuracy markers, log y, and colours shared with the other charts.
#include <QLabel>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QScatterSeries>
#include <QTemporaryDir>
#include <QtTest>

#include "ddplab/gui/convergence_view.hpp"
#include "ddplab/gui/curve_loader.hpp"
#include "ddplab/gui/main_window.hpp"
#include "ddplab/gui/runs_view.hpp"
#include "ddplab/gui/scaling_view.hpp"
#include "ddplab/gui/validation_view.hpp"
#include "gui_fixture.hpp"

using namespace ddplab;
using namespace ddplab::gui;
namespace fx = gui_fixture;

class ConvergenceViewTest : public fx::StoreTest {
  Q_OBJECT

  QString label(int world) const {
    return QStringLiteral("#%1 ring (%2 ranks)").arg(ids_.measured.at(world)).arg(world);
  }
  // Training time after n completed steps of a measured run: the slowest rank (the last) paces each step.
  static double timeThrough(int world, double n) {
    double t = 0;
    for (int s = 0; s < fx::kSteps; ++s) t += std::clamp(n - s, 0.0, 1.0) * fx::stepTime(world, s, world - 1);
    return t;
  }

 private slots:
  void initTestCase() { QVERIFY(makeStore()); }

  void trainLossOnEachXAxis() {
    MainWindow w;
    QVERIFY(w.openStore(db_));
    QVERIFY(w.waitForCurves());
    ConvergenceView* v = w.convergenceView();
    v->setSmoothing(0);
    auto c = [v] { return v->chartViews().front()->chart(); };  // a refresh swaps a new chart in
    for (XAxis axis : {XAxis::Step, XAxis::Samples, XAxis::Time}) {
      v->setXAxis(axis);
      for (int world : {2, 4}) {
        QXYSeries* s = fx::seriesNamed(c(), label(world));
        QVERIFY2(s, qPrintable(label(world)));
        const auto pts = s->points();
        QCOMPARE(pts.size(), fx::kSteps);
        for (int step = 0; step < fx::kSteps; ++step) {
          const double n = step + 1;  // the loss of step s is after s + 1 completed steps
          const double x = axis == XAxis::Step      ? n
                           : axis == XAxis::Samples ? n * fx::kBatch * world
                                                    : timeThrough(world, n);
          QVERIFY2(std::abs(pts[step].x() - x) < 1e-9, qPrintable(QString("%1 vs %2").arg(pts[step].x()).arg(x)));
          QVERIFY(std::abs(pts[step].y() - fx::meanLoss(world, step)) < 1e-12);
        }
      }
    }
    // The failed run is drawn too, marked as such; simulated runs never (they have no loss).
    QVERIFY(fx::seriesNamed(c(), QStringLiteral("#%1 tree (2 ranks) [failed]").arg(ids_.failed)));
    QCOMPARE(v->drawnRuns().size(), std::size_t(3));
  }

  void curvesAreDrawnAsTheyArrive() {
    MainWindow w;
    QVERIFY(w.openStore(db_));
    // Opening reads summaries only: the worker's curves reach the window through its event loop.
    ConvergenceView* v = w.convergenceView();
    QCOMPARE(v->drawnRuns().size(), std::size_t(0));
    QCOMPARE(v->chartViews().front()->chart()->title(), QString("Convergence: reading curves"));
    QVERIFY2(v->summaryLabel()->text().contains("3 of these 3 runs still to come"),
             qPrintable(v->summaryLabel()->text()));
    QVERIFY(w.waitForCurves());
    QCOMPARE(v->drawnRuns().size(), std::size_t(3));
    QVERIFY2(!v->summaryLabel()->text().contains("Reading curves"), qPrintable(v->summaryLabel()->text()));
  }

  void drawsTheNewestRunsWithinItsCap() {
    const QString many = dir_.filePath("many.db");
    const std::size_t n = ConvergenceView::kMaxRuns + 5;
    std::vector<std::int64_t> ids;
    {
      Store store(many.toStdString());
      for (std::size_t i = 0; i < n; ++i) {
        ids.push_back(
            store.begin_run(RunInfo{"demo", "ring", "cpu", 1, RunSource::Measured, fx::mlpConfig(), "{}", 8}));
        StepMetrics m;
        m.step_s = 0.1, m.samples = 8, m.loss = 1.0 + static_cast<double>(i);
        store.add_step(ids.back(), m);
        store.finish_run(ids.back(), RunStatus::Completed);
      }
    }
    MainWindow w;
    QVERIFY(w.openStore(many));
    QVERIFY(w.waitForCurves());
    ConvergenceView* v = w.convergenceView();
    QCOMPARE(v->drawnRuns().size(), ConvergenceView::kMaxRuns);
    QCOMPARE(v->drawnRuns().front()->id(), ids[5]);  // the oldest five are left out
    QCOMPARE(v->drawnRuns().back()->id(), ids.back());
    QVERIFY2(v->summaryLabel()->text().contains(
                 QStringLiteral("newest %1 of the %2 measured runs").arg(ConvergenceView::kMaxRuns).arg(n)),
             qPrintable(v->summaryLabel()->text()));
    // No legend for 100 entries (it would be cut off), and the note says so; grouped, one entry and a legend.
    auto c = [v] { return v->chartViews().front()->chart(); };  // a refresh swaps a new chart in
    QVERIFY(!c()->legend()->isVisible());
    QVERIFY2(v->summaryLabel()->text().contains("No legend for 100 curves"), qPrintable(v->summaryLabel()->text()));
    w.runsView()->setGroupBy(GroupBy::Strategy);
    QVERIFY(c()->legend()->isVisible() && !v->summaryLabel()->text().contains("No legend"));
    w.runsView()->setGroupBy(GroupBy::Run);
    // Selected runs are drawn whatever their age.
    w.runsView()->selectRuns({ids[0], ids[1]});
    QCOMPARE(v->drawnRuns().size(), std::size_t(2));
    QVERIFY(c()->legend()->isVisible());
    QCOMPARE(v->drawnRuns().front()->id(), ids[0]);
    QVERIFY(!v->summaryLabel()->text().contains("newest"));
  }

  void smoothingFollowsTensorBoardWithTheRawCurveBehind() {
    MainWindow w;
    QVERIFY(w.openStore(db_));
    QVERIFY(w.waitForCurves());
    ConvergenceView* v = w.convergenceView();
    QCOMPARE(v->smoothing(), 0.6);                              // TensorBoard's default
    auto c = [v] { return v->chartViews().front()->chart(); };  // a refresh swaps a new chart in
    QXYSeries* smooth = fx::seriesNamed(c(), label(4));
    QXYSeries* raw = fx::seriesNamed(c(), label(4) + " (raw)");
    QVERIFY(smooth && raw);
    double last = 0;
    for (int step = 0; step < fx::kSteps; ++step) {
      const double y = fx::meanLoss(4, step);
      last = last * 0.6 + 0.4 * y;
      QVERIFY(std::abs(raw->points()[step].y() - y) < 1e-12);
      QVERIFY(std::abs(smooth->points()[step].y() - last / (1 - std::pow(0.6, step + 1))) < 1e-12);
    }
    QVERIFY(raw->pen().color().alpha() < 255);  // faint
    QCOMPARE(smooth->pen().color(), w.colors().color(*w.runsView()->snapshot().find(ids_.measured[4])));
  }

  void accuracyWithTargetMarksTimeToAccuracy() {
    MainWindow w;
    QVERIFY(w.openStore(db_));
    QVERIFY(w.waitForCurves());
    ConvergenceView* v = w.convergenceView();
    v->setSmoothing(0);
    v->setMetric(CurveMetric::TestAccuracy);
    v->setXAxis(XAxis::Time);
    v->setTarget(0.8);
    auto c = [v] { return v->chartViews().front()->chart(); };  // a refresh swaps a new chart in
    for (int world : {2, 4}) {
      QXYSeries* s = fx::seriesNamed(c(), label(world));
      QVERIFY(s);
      QCOMPARE(s->points().size(), 2);  // evaluations after 3 and kSteps steps
      QVERIFY(std::abs(s->points()[0].x() - timeThrough(world, 3)) < 1e-12);
      QCOMPARE(s->points()[1].y(), fx::accuracy(world, fx::kSteps));
      // First reached between the two evaluations, interpolated in steps, then converted to time.
      const double a3 = fx::accuracy(world, 3), a6 = fx::accuracy(world, fx::kSteps);
      const double steps = 3 + (0.8 - a3) / (a6 - a3) * 3;
      QXYSeries* marker = fx::seriesNamed(c(), label(world) + " reached target");
      QVERIFY(marker);
      QCOMPARE(marker->points().size(), 1);
      QVERIFY(std::abs(marker->points()[0].x() - timeThrough(world, steps)) < 1e-12);
      QCOMPARE(marker->points()[0].y(), 0.8);
      const auto tta = time_to_accuracy(*w.curves()->find(ids_.measured[world]), 0.8, XAxis::Step);
      QVERIFY(tta && std::abs(*tta - steps) < 1e-12);
    }
    QVERIFY(fx::seriesNamed(c(), "target 0.8"));
    QVERIFY2(v->summaryLabel()->text().contains("Time to accuracy 0.8") &&
                 !v->summaryLabel()->text().contains("not reached"),
             qPrintable(v->summaryLabel()->text()));
    // The failed run has no evaluation: no curve, no marker.
    QVERIFY(!fx::seriesNamed(c(), QStringLiteral("#%1 tree (2 ranks) [failed]").arg(ids_.failed)));
    // 0.89: only the 4-rank run gets there (0.90; the 2-rank run ends at 0.88).
    v->setTarget(0.89);
    QVERIFY(fx::seriesNamed(c(), label(4) + " reached target") && !fx::seriesNamed(c(), label(2) + " reached target"));
    QVERIFY2(v->summaryLabel()->text().contains(QStringLiteral("not reached: #%1").arg(ids_.measured[2])),
             qPrintable(v->summaryLabel()->text()));
    // Grouped: one line per group, the median of the runs that reached it.
    w.runsView()->setGroupBy(GroupBy::Strategy);
    QVERIFY2(v->summaryLabel()->text().contains("ring median") && v->summaryLabel()->text().contains("(1 of 2 runs)"),
             qPrintable(v->summaryLabel()->text()));
    v->setTarget(0.8);
    QVERIFY2(v->summaryLabel()->text().contains("(2 of 2 runs)"), qPrintable(v->summaryLabel()->text()));
  }

  void logYAndColoursSharedWithScaling() {
    MainWindow w;
    QVERIFY(w.openStore(db_));
    QVERIFY(w.waitForCurves());
    ConvergenceView* v = w.convergenceView();
    v->setLogY(true);
    auto c = [v] { return v->chartViews().front()->chart(); };  // a refresh swaps a new chart in
    QVERIFY(qobject_cast<QLogValueAxis*>(c()->axes(Qt::Vertical).value(0)));
    v->setLogY(false);
    QVERIFY(!qobject_cast<QLogValueAxis*>(c()->axes(Qt::Vertical).value(0)));
    // Grouped by strategy, a ring run's curve has the colour of ring's points and line in Scaling.
    w.runsView()->setGroupBy(GroupBy::Strategy);
    const QColor ring = fx::seriesNamed(c(), "ring")->pen().color();
    QChart* scaling = w.scalingView()->chartViews()[2]->chart();  // the demo panel's samples/s (big comes first)
    QXYSeries* measured = fx::seriesNamed(scaling, "ring measured");
    QXYSeries* simulated = fx::seriesNamed(scaling, "ring simulated");
    QVERIFY(measured && simulated);
    QCOMPARE(measured->color(), ring);
    QCOMPARE(simulated->pen().color(), ring);
    // ...and of its points in Validation.
    QXYSeries* validated = fx::seriesNamed(w.validationView()->chartView()->chart(), "ring");
    QVERIFY(validated);
    QCOMPARE(validated->color(), ring);
    // Selection narrows the curves to the selected runs.
    w.runsView()->selectRuns({ids_.measured[2]});
    QCOMPARE(v->drawnRuns().size(), std::size_t(1));
    QCOMPARE(v->drawnRuns().front()->id(), ids_.measured[2]);
  }
};

QTEST_MAIN(ConvergenceViewTest)
#include "test_convergence_view.moc"
