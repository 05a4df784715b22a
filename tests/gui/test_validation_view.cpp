// The Validation view (Qt Test, offscreen): a store with two `ddplab validate` invocations; the scatter, table,
// error column, summary and invocation choice are checked against the stored rows; log axes when values span
// more than a decade; a store without validations shows the empty state; --view validation through the binary.
#include <QChart>
#include <QComboBox>
#include <QImage>
#include <QLabel>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QProcess>
#include <QScatterSeries>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QtTest>
#include <cmath>
#include <map>

#include "ddplab/core/store.hpp"
#include "ddplab/gui/main_window.hpp"
#include "ddplab/gui/validation_view.hpp"

using namespace ddplab;
using ddplab::gui::MainWindow;

namespace {

QList<QXYSeries*> seriesOfType(QChart* chart, QAbstractSeries::SeriesType type) {
  QList<QXYSeries*> out;
  for (QAbstractSeries* s : chart->series())
    if (s->type() == type) out.append(static_cast<QXYSeries*>(s));
  return out;
}

ValidationRow vrow(const std::string& cal, const std::string& kind, std::int64_t ref, const std::string& label,
                   int world, std::int64_t bytes, const std::string& metric, double measured, double predicted) {
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

class ValidationViewTest : public QObject {
  Q_OBJECT

  QTemporaryDir dir_;
  QString vdb_;  // a store with two validate invocations and no runs
  QString tmp(const QString& name) const { return dir_.filePath(name); }

 private slots:
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
    const QString runsOnly = tmp("runs.db");
    {
      Store store(runsOnly.toStdString());
      store.finish_run(store.begin_run(RunInfo{"demo", "ring", "cpu", 2, RunSource::Measured, "{}", "{}", 64}),
                       RunStatus::Completed);
    }
    MainWindow w;
    QVERIFY(w.openStore(runsOnly));
    gui::ValidationView* v = w.validationView();
    QVERIFY(v->isEmptyState());
    QVERIFY2(v->emptyLabel()->text().contains("No validations") && v->emptyLabel()->text().contains("ddplab validate"),
             qPrintable(v->emptyLabel()->text()));
    QCOMPARE(v->batchCombo()->count(), 0);
    QCOMPARE(v->tableModel()->rowCount(), 0);
    QCOMPARE(w.tabs()->tabText(w.tabs()->indexOf(v)), QString("Validation"));
    w.showView("validation");
    QCOMPARE(w.tabs()->currentWidget(), static_cast<QWidget*>(v));
  }

  void validationPlotsPredictedAgainstMeasured() {
    QVERIFY(!vdb_.isEmpty());
    MainWindow w;
    QString error;
    QVERIFY2(w.openStore(vdb_, &error), qPrintable(error));
    QCOMPARE(w.tabs()->tabText(w.tabs()->indexOf(w.validationView())), QString("Validation (16)"));
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
        QCOMPARE(cell(gui::ValidationTableModel::Measured, gui::ValidationTableModel::SortRole).toDouble(),
                 r.measured * scale);
        QCOMPARE(cell(gui::ValidationTableModel::Predicted, gui::ValidationTableModel::SortRole).toDouble(),
                 r.predicted * scale);
        const QVariant err = cell(gui::ValidationTableModel::ErrorPct, gui::ValidationTableModel::SortRole);
        if (r.measured > 0) {
          const double e = 100 * (r.predicted - r.measured) / r.measured;
          QVERIFY2(std::abs(err.toDouble() - e) < 1e-9,
                   qPrintable(QString("row %1: %2 vs %3").arg(row).arg(err.toDouble()).arg(e)));
          QCOMPARE(cell(gui::ValidationTableModel::ErrorPct, Qt::DisplayRole).toString(),
                   QString::asprintf("%+.1f", e));
        } else {
          QVERIFY(!err.isValid());
          QCOMPARE(cell(gui::ValidationTableModel::ErrorPct, Qt::DisplayRole).toString(), QString("n/a"));
        }
      }
      // One scatter per label holding (measured, predicted) in display units.
      std::map<QString, QList<QPointF>> points;
      for (const auto& r : want)
        points[QString::fromStdString(r.label)].append(QPointF(r.measured * scale, r.predicted * scale));
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
    QVERIFY(p.readAllStandardError().contains("--view expects one of runs, convergence"));
    p.start(DDPLAB_GUI_EXE, {vdb_, "--view", "validation", "--metric", "flops", "--screenshot", tmp("never3.png")});
    QVERIFY(p.waitForFinished(60000));
    QCOMPARE(p.exitCode(), 2);
  }
};

QTEST_MAIN(ValidationViewTest)
#include "test_validation_view.moc"
