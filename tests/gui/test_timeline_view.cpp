// The Timeline view: bars against the stored timeline (times from the step's first op), the run and step
// chosen, the simulated counterpart at the same place in the pattern, one time window for both, CSV export.
#include <QComboBox>
#include <QTemporaryDir>
#include <QtTest>

#include "ddplab/gui/main_window.hpp"
#include "ddplab/gui/runs_model.hpp"
#include "ddplab/gui/runs_view.hpp"
#include "ddplab/gui/timeline_view.hpp"
#include "gui_fixture.hpp"

using namespace ddplab;
using namespace ddplab::gui;
namespace fx = gui_fixture;

class TimelineViewTest : public fx::StoreTest {
  Q_OBJECT

 private slots:
  void initTestCase() { QVERIFY(makeStore()); }

  void stepsAndBarsFromTheStoredTimeline() {
    const auto events = fx::traceOps(5, 11.0, 1.0);
    QCOMPARE(trace_steps(events), (std::vector<std::int64_t>{5}));
    const TimelineStep s = timeline_step(events, 5);
    QCOMPARE(s.ranks, 4);
    QCOMPARE(s.bars.size(), std::size_t(12));
    // Rank 3's sync_grads starts 3 ms + 30 ms after rank 0's forward and lasts 20 ms: the step spans 53 ms.
    QVERIFY(std::abs(s.span_ms - 53.0) < 1e-9);
    const TimelineBar& last = s.bars.back();
    QVERIFY(last.comm && last.rank == 3 && last.bytes == 4096);
    QVERIFY(std::abs(last.start_ms - 33.0) < 1e-9 && std::abs(last.dur_ms - 20.0) < 1e-9);
    QVERIFY(timeline_step(events, 4).bars.empty());
    QCOMPARE(matching_step(5, 1, {0}), std::int64_t(0));
    QCOMPARE(matching_step(6, 4, {0, 1, 2, 3}), std::int64_t(2));  // same place in a block of 4
    QCOMPARE(matching_step(6, 4, {}), std::int64_t(-1));
  }

  void measuredAboveSimulatedOnOneScale() {
    MainWindow w;
    QVERIFY(w.openStore(db_));
    TimelineView* v = w.timelineView();
    // The shown runs with a timeline, newest first: the 4-rank simulation, then the 4-rank measured run.
    QCOMPARE(v->runCombo()->count(), 2);
    QVERIFY(v->shownRun() && v->shownRun()->id() == ids_.measured[4]);  // measured preferred
    QCOMPARE(v->stepCombo()->count(), 2);
    QCOMPARE(v->stepCombo()->currentData().toLongLong(), 5);  // the last traced step
    QVERIFY(v->counterpart() && v->counterpart()->id() == ids_.simulated[4]);
    QCOMPARE(v->measuredWidget()->step().step, std::int64_t(5));
    QCOMPARE(v->simulatedWidget()->step().step, std::int64_t(0));
    QVERIFY(std::abs(v->simulatedWidget()->step().span_ms - 2 * 50.0 - 3.0) < 1e-9);  // ops stretched 2x
    // Both start on the longer step's window, and zooming one zooms the other.
    QVERIFY(std::abs(v->measuredWidget()->windowEnd() - 103.0 * 1.02) < 1e-9);
    v->measuredWidget()->setWindow(10, 20);
    QCOMPARE(v->simulatedWidget()->windowStart(), 10.0);
    QCOMPARE(v->simulatedWidget()->windowEnd(), 20.0);
    // Step 4 of the measured run.
    v->stepCombo()->setCurrentIndex(0);
    QCOMPARE(v->measuredWidget()->step().step, std::int64_t(4));
    // CSV: every bar of both steps.
    const QStringList rows = v->csv().split('\n', Qt::SkipEmptyParts);
    QCOMPARE(rows.front(), QString("run,source,step,rank,track,name,start_ms,dur_ms,bytes"));
    QCOMPARE(rows.size(), 1 + 12 + 12);
    QVERIFY(rows[1].startsWith(QStringLiteral("%1,measured,4,0,compute,forward,0,10").arg(ids_.measured[4])));
    // Selecting the simulated run shows it alone.
    w.runsView()->selectRuns({ids_.simulated[4]});
    QCOMPARE(v->shownRun()->id(), ids_.simulated[4]);
    QVERIFY(!v->counterpart());
    // Nothing shown: the empty state.
    w.runsView()->selectRuns({});
    w.runsView()->model()->setAllShown(false);
    QVERIFY(!v->shownRun());
    QVERIFY(v->csv().isEmpty() && !v->exportWidget());
  }
};

QTEST_MAIN(TimelineViewTest)
#include "test_timeline_view.moc"
