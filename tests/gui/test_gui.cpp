// GUI tests (Qt Test, offscreen): a temp store with 2 measured and 3 simulated runs is opened
// in MainWindow; the table, filter and both charts are checked against known values and
// against Store::summary, and --screenshot is checked both in-process and through the binary.
#include <QChart>
#include <QFileInfo>
#include <QImage>
#include <QItemSelectionModel>
#include <QLineEdit>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QProcess>
#include <QScatterSeries>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QTemporaryDir>
#include <QValueAxis>
#include <QtTest>
#include <cmath>
#include <limits>
#include <map>

#include "ddplab/core/store.hpp"
#include "ddplab/gui/charts.hpp"
#include "ddplab/gui/main_window.hpp"
#include "ddplab/gui/runs_model.hpp"

using namespace ddplab;
using ddplab::gui::MainWindow;

namespace {

constexpr int kSteps = 5;

// Known per-rank loss of a measured run: decreasing in step, offset by rank.
double knownLoss(int world, std::int64_t step, int rank) { return 2.0 + 0.1 * world - 0.25 * step + 0.03 * rank; }

double expectedMeanLoss(int world, std::int64_t step) {
  double sum = 0;
  for (int r = 0; r < world; ++r) sum += knownLoss(world, step, r);
  return sum / world;
}

QList<QXYSeries*> seriesOfType(QChart* chart, QAbstractSeries::SeriesType type) {
  QList<QXYSeries*> out;
  for (QAbstractSeries* s : chart->series())
    if (s->type() == type) out.append(static_cast<QXYSeries*>(s));
  return out;
}

}  // namespace

class GuiTest : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  QString db_;
  std::map<int, std::int64_t> measuredId_, simulatedId_;  // world size -> run id
  std::map<std::int64_t, double> samplesPerS_;              // run id -> Store::summary samples_per_s

  QString tmp(const QString& name) const { return dir_.filePath(name); }

 private slots:
  void initTestCase() {
    QVERIFY(dir_.isValid());
    db_ = tmp("results.db");
    Store store(db_.toStdString());
    for (int world : {2, 4}) {
      RunInfo info{"demo", "ring", "cpu", world, "measured", "{}", "{}", 64};
      const auto id = store.begin_run(info);
      for (std::int64_t step = 0; step < kSteps; ++step)
        for (int rank = 0; rank < world; ++rank) {
          StepMetrics m;
          m.step = step;
          m.rank = rank;
          m.compute_s = 0.08;
          m.comm_s = 0.02 * world;
          m.step_s = 0.1 + 0.01 * rank + 0.005 * world;
          m.samples = 64;
          m.bytes_sent = 1 << 20;
          m.loss = knownLoss(world, step, rank);
          store.add_step(id, m);
        }
      store.add_evaluation(id, Evaluation{kSteps - 1, 1.0, 0.5, 0.80 + 0.01 * world, 0.8, 0.8});
      store.finish_run(id, "completed");
      measuredId_[world] = id;
    }
    for (int world : {8, 2, 4}) {  // out of order: the chart must sort by world size
      RunInfo info{"demo", "ring", "simgrid", world, "simulated", "{}", "{}", 64};
      const auto id = store.begin_run(info);
      for (int rank = 0; rank < world; ++rank) {
        StepMetrics m;
        m.step = 0;
        m.rank = rank;
        m.step_s = 0.1 * (1.0 + 0.1 * std::log2(world)) + 0.001 * rank;
        m.samples = 64;
        m.loss = std::numeric_limits<double>::quiet_NaN();
        store.add_step(id, m);
      }
      store.finish_run(id, "completed");
      simulatedId_[world] = id;
    }
    store.flush();
    for (const auto& [w, id] : measuredId_) samplesPerS_[id] = store.summary(id).samples_per_s;
    for (const auto& [w, id] : simulatedId_) samplesPerS_[id] = store.summary(id).samples_per_s;
    for (const auto& [id, v] : samplesPerS_) QVERIFY2(v > 0, "store summary gives positive samples/s");
  }

  void opensStoreAndFillsTable() {
    MainWindow w;
    QString error;
    QVERIFY2(w.openStore(db_, &error), qPrintable(error));
    QCOMPARE(w.runsModel()->rowCount(), 5);
    QCOMPARE(w.proxyModel()->rowCount(), 5);
    QCOMPARE(w.runsModel()->columnCount(), 9);
  }

  void filterNarrowsRows() {
    MainWindow w;
    QVERIFY(w.openStore(db_));
    w.filterEdit()->setText("simulated");
    QCOMPARE(w.proxyModel()->rowCount(), 3);
    // The charts follow the filter: no measured run in view, only the simulated line left.
    QCOMPARE(w.lossChart()->chart()->series().size(), 0);
    QCOMPARE(seriesOfType(w.throughputChart()->chart(), QAbstractSeries::SeriesTypeScatter).size(), 0);
    QCOMPARE(seriesOfType(w.throughputChart()->chart(), QAbstractSeries::SeriesTypeLine).size(), 1);
    w.filterEdit()->setText("MEASURED");  // case-insensitive
    QCOMPARE(w.proxyModel()->rowCount(), 2);
    w.filterEdit()->clear();
    QCOMPARE(w.proxyModel()->rowCount(), 5);
  }

  void lossChartShowsMeanLossOfMeasuredRuns() {
    MainWindow w;
    QVERIFY(w.openStore(db_));
    const auto series = w.lossChart()->chart()->series();
    QCOMPARE(series.size(), 2);
    std::map<QString, int> worldByName;
    for (const auto& [world, id] : measuredId_)
      worldByName[QStringLiteral("#%1 ring (%2 ranks)").arg(id).arg(world)] = world;
    for (QAbstractSeries* s : series) {
      QCOMPARE(s->type(), QAbstractSeries::SeriesTypeLine);
      auto* line = static_cast<QLineSeries*>(s);
      QVERIFY2(worldByName.count(line->name()), qPrintable("unexpected series name " + line->name()));
      const int world = worldByName[line->name()];
      const auto pts = line->points();
      QCOMPARE(pts.size(), kSteps);
      for (int i = 0; i < kSteps; ++i) {
        QCOMPARE(pts[i].x(), double(i));
        QVERIFY2(std::abs(pts[i].y() - expectedMeanLoss(world, i)) < 1e-12,
                 qPrintable(QString("world %1 step %2: %3").arg(world).arg(i).arg(pts[i].y())));
      }
    }
  }

  void throughputChartComparesMeasuredAndSimulated() {
    MainWindow w;
    QVERIFY(w.openStore(db_));
    QChart* chart = w.throughputChart()->chart();
    const auto scatters = seriesOfType(chart, QAbstractSeries::SeriesTypeScatter);
    const auto lines = seriesOfType(chart, QAbstractSeries::SeriesTypeLine);
    QCOMPARE(scatters.size(), 1);
    QCOMPARE(lines.size(), 1);
    QCOMPARE(chart->series().size(), 2);
    QCOMPARE(scatters[0]->name(), QString("ring measured"));
    QCOMPARE(lines[0]->name(), QString("ring simulated"));

    const auto measured = scatters[0]->points();
    QCOMPARE(measured.size(), 2);
    for (const QPointF& p : measured) {
      const int world = int(p.x());
      QVERIFY(measuredId_.count(world));
      QCOMPARE(p.y(), samplesPerS_[measuredId_[world]]);
    }

    const auto simulated = lines[0]->points();
    QCOMPARE(simulated.size(), 3);
    const double worlds[] = {2, 4, 8};
    for (int i = 0; i < 3; ++i) {
      QCOMPARE(simulated[i].x(), worlds[i]);
      QCOMPARE(simulated[i].y(), samplesPerS_[simulatedId_[int(worlds[i])]]);
    }

    // World size on a log2 axis whose range covers every point.
    const auto xAxes = chart->axes(Qt::Horizontal);
    QCOMPARE(xAxes.size(), 1);
    auto* logAxis = qobject_cast<QLogValueAxis*>(xAxes[0]);
    QVERIFY(logAxis);
    QCOMPARE(logAxis->base(), 2.0);
    QVERIFY(logAxis->min() < 2 && logAxis->max() > 8);
    const auto yAxes = chart->axes(Qt::Vertical);
    QCOMPARE(yAxes.size(), 1);
    auto* yAxis = qobject_cast<QValueAxis*>(yAxes[0]);
    QVERIFY(yAxis);
    for (const auto& [id, v] : samplesPerS_) QVERIFY(yAxis->min() <= v && v <= yAxis->max());

    // Log scale on y: same points, log axis.
    w.setThroughputLogScale(true);
    chart = w.throughputChart()->chart();
    QVERIFY(qobject_cast<QLogValueAxis*>(chart->axes(Qt::Vertical).value(0)));
    QCOMPARE(seriesOfType(chart, QAbstractSeries::SeriesTypeLine).value(0)->points(), simulated);
  }

  void selectionNarrowsLossChartAndSurvivesReload() {
    MainWindow w;
    QVERIFY(w.openStore(db_));
    const auto target = measuredId_[4];
    int row = -1;
    for (int r = 0; r < w.proxyModel()->rowCount(); ++r)
      if (w.proxyModel()->index(r, 0).data(gui::RunsTableModel::RunIdRole).toLongLong() == target) row = r;
    QVERIFY(row >= 0);
    w.runsTable()->selectRow(row);
    QCOMPARE(w.lossChart()->chart()->series().size(), 1);
    QCOMPARE(w.lossChart()->chart()->series()[0]->name(), QStringLiteral("#%1 ring (4 ranks)").arg(target));
    QCOMPARE(w.throughputChart()->chart()->series().size(), 2);  // selection does not narrow throughput

    w.reload();
    QCOMPARE(w.selectedRunIds(), std::vector<std::int64_t>{target});
    QCOMPARE(w.lossChart()->chart()->series().size(), 1);

    w.runsTable()->clearSelection();
    QCOMPARE(w.lossChart()->chart()->series().size(), 2);
  }

  void missingFileIsAClearErrorAndNotCreated() {
    MainWindow w;
    const QString missing = tmp("nope/missing.db");
    QString error;
    QVERIFY(!w.openStore(missing, &error));
    QVERIFY2(error.contains("not found") && error.contains(missing), qPrintable(error));
    QVERIFY(!QFileInfo::exists(missing));

    QFile junk(tmp("junk.db"));
    QVERIFY(junk.open(QIODevice::WriteOnly));
    junk.write(QByteArray(4096, 'x'));
    junk.close();
    QVERIFY(!w.openStore(junk.fileName(), &error));
    QVERIFY2(error.contains("cannot read results store"), qPrintable(error));
  }

  void screenshotFunctionRendersBothCharts() {
    MainWindow w;
    QVERIFY(w.openStore(db_));
    const QString png = tmp("direct.png");
    QString error;
    QVERIFY2(gui::saveScreenshot(w, png, QSize(1400, 900), &error), qPrintable(error));
    QImage img(png);
    QVERIFY(!img.isNull());
    QCOMPARE(img.size(), QSize(1400, 900));
    // Both chart halves (bottom-left: loss, bottom-right: throughput) contain the first
    // series colour, so their data was drawn, not just empty axes.
    auto countColor = [&](QRect r) {
      int n = 0;
      for (int y = r.top(); y <= r.bottom(); ++y)
        for (int x = r.left(); x <= r.right(); ++x)
          if ((img.pixel(x, y) & 0xffffff) == 0x1f77b4) ++n;
      return n;
    };
    QVERIFY(countColor(QRect(0, 450, 700, 430)) > 50);
    QVERIFY(countColor(QRect(700, 450, 700, 430)) > 50);
  }

  void binaryWritesScreenshotAndReportsErrors() {
    const QString png = tmp("binary.png");
    QProcess p;
    p.start(DDPLAB_GUI_EXE, {db_, "--screenshot", png});
    QVERIFY(p.waitForFinished(60000));
    QVERIFY2(p.exitStatus() == QProcess::NormalExit && p.exitCode() == 0, p.readAllStandardError().constData());
    QImage img(png);
    QVERIFY(!img.isNull());
    QCOMPARE(img.size(), QSize(1400, 900));
    QVERIFY(QFileInfo(png).size() > 10000);

    p.start(DDPLAB_GUI_EXE, {tmp("missing.db"), "--screenshot", tmp("never.png")});
    QVERIFY(p.waitForFinished(60000));
    QCOMPARE(p.exitCode(), 1);
    QVERIFY(p.readAllStandardError().contains("not found"));
    QVERIFY(!QFileInfo::exists(tmp("never.png")));

    p.start(DDPLAB_GUI_EXE, {"--help"});
    QVERIFY(p.waitForFinished(60000));
    QCOMPARE(p.exitCode(), 0);
    QVERIFY(p.readAllStandardOutput().contains("--screenshot"));
  }
};

QTEST_MAIN(GuiTest)
#include "test_gui.moc"
