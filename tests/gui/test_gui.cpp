// GUI tests (Qt Test, offscreen): a temp store with 2 measured and 3 simulated runs is opened
// in MainWindow; the table, filter and both charts are checked against known values and
// against Store::summary, and --screenshot is checked both in-process and through the binary.
// A second store holds two `ddplab validate` invocations: the Validation tab's scatter, table,
// error column, summary and batch choice are checked against the stored rows; a store without
// validations shows the empty state.
#include <QChart>
#include <QComboBox>
#include <QLabel>
#include <QTabWidget>
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
#include "ddplab/gui/validation_view.hpp"

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

ValidationRow vrow(const std::string& cal, const std::string& kind, std::int64_t ref, const std::string& label, int world,
                  std::int64_t bytes, const std::string& metric, double measured, double predicted) {
  return ValidationRow::compare(cal, kind, ref, label, world, bytes, metric, measured, predicted);
}

// What `ddplab validate` writes for two runs and one bench; `f` scales the predictions.
std::vector<ValidationRow> validationRows(const std::string& cal, double f) {
  return {vrow(cal, "run", 1, "ring", 2, 0, "step_s", 0.100, 0.104 * f),
          vrow(cal, "run", 1, "ring", 2, 0, "comm_s", 0.020, 0.018 * f),
          vrow(cal, "run", 2, "overlap", 4, 0, "step_s", 0.120, 0.130 * f),
          vrow(cal, "run", 2, "overlap", 4, 0, "comm_s", 0.050, 0.040 * f),
          vrow(cal, "run", 3, "local_sgd", 4, 0, "comm_s", 0.0, 0.010 * f),  // measured 0: no error
          vrow(cal, "collective", 1, "ring", 4, 1 << 10, "busbw_gbs", 0.002, 0.0025 * f),
          vrow(cal, "collective", 1, "ring", 4, 1 << 20, "busbw_gbs", 0.060, 0.065 * f),
          vrow(cal, "collective", 1, "ring", 4, 64 << 20, "busbw_gbs", 0.090, 0.080 * f)};
}

std::map<QString, QList<QPointF>> scatterPoints(QChart* chart) {
  std::map<QString, QList<QPointF>> out;
  for (QXYSeries* s : seriesOfType(chart, QAbstractSeries::SeriesTypeScatter)) out[s->name()] = s->points();
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
  QString vdb_;  // a store with two validate invocations and no runs

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
      store.add_evaluation(id, Evaluation{kSteps - 1, 1.0, 0.5, 0.80 + 0.01 * world, 0.8, 0.8, 0, {}});
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

  // ---- Validation tab ----

  void validationBatchesAndErrorDefinition() {
    vdb_ = tmp("validations.db");
    Store store(vdb_.toStdString());
    store.add_validations(validationRows("", 1.0));
    store.add_validations(validationRows("fit1", 1.1));  // same second: split by the repeated comparisons
    const auto rows = store.validations();
    QCOMPARE(rows.size(), std::size_t(16));
    const auto batches = gui::validation_batches(rows);
    QCOMPARE(batches.size(), std::size_t(2));
    QCOMPARE(batches[0].calibration, std::string());
    QCOMPARE(batches[1].calibration, std::string("fit1"));
    QCOMPARE(batches[0].rows.size(), std::size_t(8));
    QCOMPARE(batches[1].rows.front().id, rows[8].id);
    // Same calibration and second, repeated comparisons: still two invocations.
    auto twice = validationRows("", 1.0);
    for (auto& v : twice) v.created_at = "2026-11-30T10:00:00Z";
    auto both = twice;
    both.insert(both.end(), twice.begin(), twice.end());
    QCOMPARE(gui::validation_batches(both).size(), std::size_t(2));
    QCOMPARE(gui::validation_error_pct(0.104, 0.100), 100 * (0.104 - 0.100) / 0.100);
    QVERIFY(std::isnan(gui::validation_error_pct(0.01, 0.0)));
    QVERIFY(gui::validation_batches({}).empty());
  }

  void validationEmptyStoreShowsHowToMakeSome() {
    MainWindow w;
    QVERIFY(w.openStore(db_));  // runs only
    gui::ValidationView* v = w.validationView();
    QVERIFY(v->isEmptyState());
    QVERIFY2(v->emptyLabel()->text().contains("No validations") && v->emptyLabel()->text().contains("ddplab validate"),
             qPrintable(v->emptyLabel()->text()));
    QCOMPARE(v->batchCombo()->count(), 0);
    QCOMPARE(v->tableModel()->rowCount(), 0);
    QCOMPARE(w.tabs()->tabText(1), QString("Validation"));
    w.showValidation();
    QCOMPARE(w.tabs()->currentWidget(), static_cast<QWidget*>(v));
  }

  void validationPlotsPredictedAgainstMeasured() {
    QVERIFY(!vdb_.isEmpty());
    MainWindow w;
    QString error;
    QVERIFY2(w.openStore(vdb_, &error), qPrintable(error));
    QCOMPARE(w.tabs()->tabText(1), QString("Validation (16)"));
    gui::ValidationView* v = w.validationView();
    QVERIFY(!v->isEmptyState());
    // Newest invocation first.
    QCOMPARE(v->batchCombo()->count(), 2);
    QVERIFY2(v->batchCombo()->itemText(0).contains("calibration \"fit1\"") &&
                 v->batchCombo()->itemText(0).contains("8 comparisons"),
             qPrintable(v->batchCombo()->itemText(0)));
    QVERIFY(v->batchCombo()->itemText(1).contains("scenario links"));
    QCOMPARE(v->metricCombo()->count(), 3);
    QCOMPARE(v->metricCombo()->itemData(0).toString(), QString("step_s"));
    QCOMPARE(v->metricCombo()->itemData(1).toString(), QString("comm_s"));
    QCOMPARE(v->metricCombo()->itemData(2).toString(), QString("busbw_gbs"));
    QCOMPARE(v->currentMetric(), QString("step_s"));
    QVERIFY2(v->summaryLabel()->text().contains("median |error|"), qPrintable(v->summaryLabel()->text()));

    // Which stored rows each view shows: (batch's calibration, metric).
    auto expected = [](const std::string& cal, const std::string& metric) {
      std::vector<ValidationRow> out;
      for (const auto& r : validationRows(cal, cal.empty() ? 1.0 : 1.1))
        if (r.metric == metric) out.push_back(r);
      return out;
    };
    auto check = [&](const std::string& cal, const std::string& metric, double scale) {
      const auto want = expected(cal, metric);
      gui::ValidationTableModel* m = v->tableModel();
      QCOMPARE(m->rowCount(), int(want.size()));
      QCOMPARE(m->columnCount(), int(gui::ValidationTableModel::ColumnCount));
      for (int row = 0; row < m->rowCount(); ++row) {
        const ValidationRow& r = want[std::size_t(row)];
        auto cell = [&](int col, int role) { return m->index(row, col).data(role); };
        QCOMPARE(cell(gui::ValidationTableModel::Label, Qt::DisplayRole).toString(), QString::fromStdString(r.label));
        QCOMPARE(cell(gui::ValidationTableModel::World, Qt::DisplayRole).toInt(), r.world_size);
        QCOMPARE(cell(gui::ValidationTableModel::Measured, gui::ValidationTableModel::SortRole).toDouble(), r.measured * scale);
        QCOMPARE(cell(gui::ValidationTableModel::Predicted, gui::ValidationTableModel::SortRole).toDouble(), r.predicted * scale);
        const QVariant err = cell(gui::ValidationTableModel::ErrorPct, gui::ValidationTableModel::SortRole);
        if (r.measured > 0) {
          const double e = 100 * (r.predicted - r.measured) / r.measured;
          QVERIFY2(std::abs(err.toDouble() - e) < 1e-9, qPrintable(QString("row %1: %2 vs %3").arg(row).arg(err.toDouble()).arg(e)));
          QCOMPARE(cell(gui::ValidationTableModel::ErrorPct, Qt::DisplayRole).toString(), QString::asprintf("%+.1f", e));
        } else {
          QVERIFY(!err.isValid());
          QCOMPARE(cell(gui::ValidationTableModel::ErrorPct, Qt::DisplayRole).toString(), QString("n/a"));
        }
      }
      // One scatter per label holding (measured, predicted) in display units.
      std::map<QString, QList<QPointF>> points;
      for (const auto& r : want) points[QString::fromStdString(r.label)].append(QPointF(r.measured * scale, r.predicted * scale));
      const auto got = scatterPoints(v->chartView()->chart());
      QCOMPARE(got.size(), points.size());
      for (const auto& [name, pts] : points) {
        QVERIFY2(got.count(name), qPrintable("no series " + name));
        QCOMPARE(got.at(name).size(), pts.size());
        for (int i = 0; i < pts.size(); ++i) {
          QVERIFY(std::abs(got.at(name)[i].x() - pts[i].x()) < 1e-12);
          QVERIFY(std::abs(got.at(name)[i].y() - pts[i].y()) < 1e-12);
        }
      }
      // The y = x line spans every point; the band is +-10%.
      QLineSeries* ideal = nullptr;
      QLineSeries* band = nullptr;
      for (QXYSeries* s : seriesOfType(v->chartView()->chart(), QAbstractSeries::SeriesTypeLine)) {
        if (s->name() == "y = x") ideal = static_cast<QLineSeries*>(s);
        if (s->name() == QString::fromUtf8("\u00b110%")) band = static_cast<QLineSeries*>(s);
      }
      QVERIFY(ideal && band);
      for (const QPointF& p : ideal->points()) QCOMPARE(p.y(), p.x());
      for (const QPointF& p : band->points()) QVERIFY(std::abs(p.y() - 1.1 * p.x()) < 1e-12 * std::max(1.0, p.x()));
      for (const auto& r : want) {
        const double hi = std::max(r.measured, r.predicted) * scale;
        QVERIFY(ideal->points().first().x() <= std::min(r.measured, r.predicted) * scale);
        QVERIFY(ideal->points().last().x() >= hi);
      }
    };
    check("fit1", "step_s", 1e3);  // ms
    QVERIFY(!v->chartView()->logScale());
    QCOMPARE(v->chartView()->chart()->title(), QString("Step time, predicted vs measured"));
    QVERIFY(v->setCurrentMetric("comm_s"));
    check("fit1", "comm_s", 1e3);
    QVERIFY(v->setCurrentMetric("busbw_gbs"));
    check("fit1", "busbw_gbs", 1.0);  // GB/s, 0.002 .. 0.099: log axes
    QVERIFY(v->chartView()->logScale());
    QVERIFY(qobject_cast<QLogValueAxis*>(v->chartView()->chart()->axes(Qt::Horizontal).value(0)));
    QVERIFY(!v->setCurrentMetric("flops"));

    // The older invocation keeps the metric shown.
    v->batchCombo()->setCurrentIndex(1);
    QCOMPARE(v->currentBatch()->calibration, std::string());
    QCOMPARE(v->currentMetric(), QString("busbw_gbs"));
    check("", "busbw_gbs", 1.0);
    // A reload shows the newest again, same metric.
    w.reload();
    QCOMPARE(v->batchCombo()->currentIndex(), 0);
    QCOMPARE(v->currentMetric(), QString("busbw_gbs"));
    check("fit1", "busbw_gbs", 1.0);
  }

  void validationScreenshotThroughTheBinary() {
    QVERIFY(!vdb_.isEmpty());
    const QString png = tmp("validation.png");
    QProcess p;
    p.start(DDPLAB_GUI_EXE, {vdb_, "--view", "validation", "--metric", "comm_s", "--screenshot", png});
    QVERIFY(p.waitForFinished(60000));
    QVERIFY2(p.exitStatus() == QProcess::NormalExit && p.exitCode() == 0, p.readAllStandardError().constData());
    QImage img(png);
    QCOMPARE(img.size(), QSize(1400, 900));
    int blue = 0;  // the first series' colour: points were drawn
    for (int y = 0; y < img.height(); ++y)
      for (int x = 0; x < img.width() / 2; ++x)
        if ((img.pixel(x, y) & 0xffffff) == 0x1f77b4) ++blue;
    QVERIFY(blue > 20);

    p.start(DDPLAB_GUI_EXE, {vdb_, "--view", "plots", "--screenshot", tmp("never2.png")});
    QVERIFY(p.waitForFinished(60000));
    QCOMPARE(p.exitCode(), 2);
    QVERIFY(p.readAllStandardError().contains("--view expects runs or validation"));
    p.start(DDPLAB_GUI_EXE, {vdb_, "--view", "validation", "--metric", "flops", "--screenshot", tmp("never3.png")});
    QVERIFY(p.waitForFinished(60000));
    QCOMPARE(p.exitCode(), 2);
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
