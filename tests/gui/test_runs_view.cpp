// The Runs view: table cells against Store's summaries, filter by text and regex, show/hide, grouping
// colours, greyed unfinished runs, and deleting runs (transactional, refused while running).
#include <QBrush>
#include <QCheckBox>
#include <QComboBox>
#include <QFile>
#include <QLineEdit>
#include <QSortFilterProxyModel>
#include <QTableView>
#include <QTemporaryDir>
#include <QtTest>
#include <set>

#include "ddplab/gui/convergence_view.hpp"
#include "ddplab/gui/main_window.hpp"
#include "ddplab/gui/runs_model.hpp"
#include "ddplab/gui/runs_view.hpp"
#include "gui_fixture.hpp"
#include "store_test_util.hpp"

using namespace ddplab;
using namespace ddplab::gui;
using Col = RunsTableModel;

class RunsViewTest : public gui_fixture::StoreTest {
  Q_OBJECT

  std::set<std::int64_t> shownIds(const RunsView* v) {
    std::set<std::int64_t> out;
    for (const RunRecord* r : v->shownRuns()) out.insert(r->id());
    return out;
  }

 private slots:
  void initTestCase() { QVERIFY(makeStore()); }

  // What the charts call each run's model: its type and shape, from the stored config.
  void modelLabelsNameTheTypeAndShape() {
    auto label = [](const std::string& model) {
      RunRecord r;
      r.summary.run.info.config_json = R"({"model":)" + model + "}";
      return r.model();
    };
    QCOMPARE(label(R"({"type":"mlp","layers":[784,64,10]})"), std::string("mlp 784-64-10"));
    QCOMPARE(label(R"({"type":"cnn","conv":[16,32]})"), std::string("cnn 16-32"));
    QCOMPARE(label(R"({"type":"gpt","blocks":4,"dim":128,"heads":4})"), std::string("gpt 4x128"));
    QCOMPARE(label(R"({"type":"table","table":"/x/models/gpt2_xl.csv"})"), std::string("gpt2_xl.csv"));
  }

  void cellsMatchTheStoresSummaries() {
    MainWindow w;
    QString error;
    QVERIFY2(w.openStore(db_, &error), qPrintable(error));
    RunsTableModel* m = w.runsView()->model();
    QCOMPARE(m->rowCount(), 7);
    QCOMPARE(m->columnCount(), int(Col::ColumnCount));
    const Store store(db_.toStdString(), Store::Access::ReadOnly);
    for (int row = 0; row < m->rowCount(); ++row) {
      const std::int64_t id = m->index(row, 0).data(Col::RunIdRole).toLongLong();
      const RunSummary s = store.summary(id);
      auto cell = [&](int col) { return m->index(row, col).data(Col::SortRole); };
      QCOMPARE(cell(Col::World).toInt(), s.run.info.world_size);
      QCOMPARE(cell(Col::Status).toString(), QString::fromStdString(to_string(s.run.status)));
      QCOMPARE(cell(Col::Steps).toLongLong(), s.skipped + s.steps);
      QCOMPARE(cell(Col::StepMs).toDouble(), s.step_s);
      QCOMPARE(cell(Col::ComputeMs).toDouble(), s.compute_s);
      QCOMPARE(cell(Col::ExposedMs).toDouble(), s.exposed_comm_s);
      QCOMPARE(cell(Col::SamplesPerS).toDouble(), s.samples_per_s);
      if (s.final_accuracy) QCOMPARE(cell(Col::FinalAccuracy).toDouble(), *s.final_accuracy);
      QCOMPARE(m->index(row, Col::StepMs).data().toString(),
               s.step_s > 0 ? QString::number(s.step_s * 1e3, 'f', 2) : QString());
    }
    // The failed run is greyed (status red), a completed one is not.
    for (int row = 0; row < m->rowCount(); ++row) {
      const std::int64_t id = m->index(row, 0).data(Col::RunIdRole).toLongLong();
      const QVariant fg = m->index(row, Col::Scenario).data(Qt::ForegroundRole);
      QCOMPARE(fg.isValid(), id == ids_.failed);
    }
  }

  void filterByTextAndRegex() {
    MainWindow w;
    QVERIFY(w.openStore(db_));
    RunsView* v = w.runsView();
    QVERIFY(v->setFilter("SIMULATED", false));  // any column, case-insensitive
    QCOMPARE(v->proxy()->rowCount(), 4);
    QCOMPARE(int(v->shownRuns().size()), 4);
    QVERIFY(v->setFilter("^(tree|big)$", true));
    QCOMPARE(shownIds(v), (std::set<std::int64_t>{ids_.failed, ids_.big}));
    // As plain text the same pattern matches nothing.
    QVERIFY(v->setFilter("^(tree|big)$", false));
    QCOMPARE(v->proxy()->rowCount(), 0);
    // An invalid expression is reported and leaves the last valid filter applied.
    QVERIFY(v->setFilter("ring", false));
    QCOMPARE(v->proxy()->rowCount(), 6);
    QVERIFY(!v->setFilter("(ring", true));
    QVERIFY2(v->filterError().contains("invalid regular expression"), qPrintable(v->filterError()));
    QCOMPARE(v->proxy()->rowCount(), 6);
    QVERIFY(v->setFilter("", false));
    QCOMPARE(v->proxy()->rowCount(), 7);
  }

  void hiddenRunsLeaveTheChartsAndSurviveReload() {
    MainWindow w;
    QVERIFY(w.openStore(db_));
    QVERIFY(w.waitForCurves());
    RunsView* v = w.runsView();
    QCOMPARE(w.convergenceView()->drawnRuns().size(), std::size_t(3));  // measured: ring 2, ring 4, failed tree
    v->model()->setShown({ids_.measured[2]}, false);
    QCOMPARE(w.convergenceView()->drawnRuns().size(), std::size_t(2));
    QVERIFY(!shownIds(v).count(ids_.measured[2]));
    // Through the check box, as a user clicks it.
    int row = -1;
    for (int r = 0; r < v->model()->rowCount(); ++r)
      if (v->model()->index(r, 0).data(Col::RunIdRole).toLongLong() == ids_.measured[4]) row = r;
    QVERIFY(v->model()->setData(v->model()->index(row, Col::Id), Qt::Unchecked, Qt::CheckStateRole));
    QCOMPARE(w.convergenceView()->drawnRuns().size(), std::size_t(1));
    w.reload();
    QCOMPARE(w.convergenceView()->drawnRuns().size(), std::size_t(1));
    v->model()->setAllShown(true);
    QCOMPARE(w.convergenceView()->drawnRuns().size(), std::size_t(3));
  }

  void groupingGivesOneColourPerGroupEverywhere() {
    MainWindow w;
    QVERIFY(w.openStore(db_));
    RunsView* v = w.runsView();
    const StoreSnapshot& snap = v->snapshot();
    auto swatch = [&](std::int64_t id) {
      for (int r = 0; r < v->model()->rowCount(); ++r)
        if (v->model()->index(r, 0).data(Col::RunIdRole).toLongLong() == id)
          return v->model()->index(r, Col::Id).data(Qt::DecorationRole).value<QColor>();
      return QColor();
    };
    // By run: distinct colours, each the table's swatch.
    QVERIFY(w.colors().color(*snap.find(ids_.measured[2])) != w.colors().color(*snap.find(ids_.measured[4])));
    QCOMPARE(swatch(ids_.measured[2]), w.colors().color(*snap.find(ids_.measured[2])));
    // By strategy: both ring runs share one colour, the strategy colour of per-strategy charts; tree differs.
    v->setGroupBy(GroupBy::Strategy);
    QCOMPARE(w.colors().color(*snap.find(ids_.measured[2])), w.colors().color(*snap.find(ids_.simulated[8])));
    QCOMPARE(w.colors().color(*snap.find(ids_.measured[2])), w.colors().strategyColor("ring"));
    QVERIFY(w.colors().strategyColor("tree") != w.colors().strategyColor("ring"));
    QCOMPARE(swatch(ids_.measured[4]), w.colors().strategyColor("ring"));
    QCOMPARE(w.colors().label(*snap.find(ids_.failed)), QString("tree"));
    v->setGroupBy(GroupBy::Run);
    QCOMPARE(w.colors().label(*snap.find(ids_.measured[4])),
             QStringLiteral("#%1 ring (4 ranks)").arg(ids_.measured[4]));
    // A new run never recolours the old ones: slots follow first appearance, oldest first.
    for (GroupBy by : {GroupBy::Run, GroupBy::Strategy, GroupBy::World}) {
      RunColors before, after;
      before.assign(snap.runs, by);
      std::vector<RunRecord> more = snap.runs;
      RunRecord extra = snap.runs.front();
      extra.summary.run.id = 999, extra.summary.run.info.strategy = "zzz", extra.summary.run.info.world_size = 1;
      more.push_back(extra);
      after.assign(more, by);
      for (const RunRecord& r : snap.runs) QCOMPARE(after.color(r), before.color(r));
    }
  }

  void deleteRemovesRunsAndRefusesRunningOnes() {
    const QString copy = dir_.filePath("delete.db");
    QFile::remove(copy);
    QVERIFY(QFile::copy(db_, copy));
    std::int64_t running = 0;
    {
      Store store(copy.toStdString());
      running =
          store.begin_run(RunInfo{"demo", "ring", "cpu", 2, RunSource::Measured, gui_fixture::mlpConfig(), "{}", 64});
    }
    MainWindow w;
    QVERIFY(w.openStore(copy));
    QCOMPARE(w.runsView()->model()->rowCount(), 8);
    QString error;
    QVERIFY(!w.deleteRuns({ids_.failed, running}, false, &error));
    QVERIFY2(error.contains("still marked running"), qPrintable(error));
    QCOMPARE(w.runsView()->model()->rowCount(), 8);  // nothing deleted
    // A hidden run stays hidden on reload, but another store starts with every run shown.
    w.runsView()->model()->setShown({ids_.failed}, false);
    QVERIFY(w.openStore(copy));
    QVERIFY(!w.runsView()->model()->isShown(ids_.failed));
    QVERIFY(w.openStore(db_));
    QVERIFY(w.runsView()->model()->isShown(ids_.failed));
    QVERIFY(w.openStore(copy));
    QVERIFY2(w.deleteRuns({ids_.failed, ids_.simulated[8]}, false, &error), qPrintable(error));
    QCOMPARE(w.runsView()->model()->rowCount(), 6);
    const Store store(copy.toStdString(), Store::Access::ReadOnly);
    QVERIFY(!store.run(ids_.failed) && !store.run(ids_.simulated[8]));
    QVERIFY(store.steps(ids_.failed).empty());
    QCOMPARE(int(store.steps(ids_.measured[4]).size()), gui_fixture::kSteps * 4);  // the others intact
  }

  void deleteRefusesToUpgradeAnOlderStore() {
    const QString old = dir_.filePath("v6.db");
    QFile::remove(old);
    QVERIFY(QFile::copy(db_, old));
    {
      ddplab::test::RawDb raw(old.toStdString());
      raw.exec("DROP TABLE trace_events; UPDATE schema_version SET version = 6");
    }
    MainWindow w;
    QVERIFY(w.openStore(old));  // read-only: version 6 opens as it is
    QString error;
    QVERIFY(!w.deleteRuns({ids_.failed}, false, &error));
    QVERIFY2(error.contains("schema version 6") && error.contains("ddplab report --db"), qPrintable(error));
    ddplab::test::RawDb raw(old.toStdString());
    QCOMPARE(raw.integer("SELECT version FROM schema_version"), 6LL);
    QCOMPARE(raw.integer(QStringLiteral("SELECT COUNT(*) FROM runs WHERE id = %1").arg(ids_.failed).toStdString()),
             1LL);
  }
};

QTEST_MAIN(RunsViewTest)
#include "test_runs_view.moc"
