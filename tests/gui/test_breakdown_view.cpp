// The Breakdown view: per-strategy bars against Store's summaries, per-rank means by hand, the straggler
// named (and not named when the ranks are even), and the % of step mode.
#include <QBarSet>
#include <QHorizontalStackedBarSeries>
#include <QLabel>
#include <QTemporaryDir>
#include <QtTest>

#include "ddplab/gui/breakdown_view.hpp"
#include "ddplab/gui/main_window.hpp"
#include "ddplab/gui/runs_view.hpp"
#include "gui_fixture.hpp"

using namespace ddplab;
using namespace ddplab::gui;
namespace fx = gui_fixture;

namespace {
// The four stacked sets of a chart's one bar series: compute, exposed comm, optimizer, other.
QList<QBarSet*> sets(QChart* c) {
  for (QAbstractSeries* s : c->series())
    if (auto* b = qobject_cast<QHorizontalStackedBarSeries*>(s)) return b->barSets();
  return {};
}
}  // namespace

class BreakdownViewTest : public fx::StoreTest {
  Q_OBJECT

 private slots:
  void initTestCase() { QVERIFY(makeStore()); }

  void barsPerStrategyAndRank() {
    MainWindow w;
    QVERIFY(w.openStore(db_));
    BreakdownView* v = w.breakdownView();
    const Store store(db_.toStdString(), Store::Access::ReadOnly);
    // Completed runs only, one per (scenario, strategy, world, source): big 64 sim, demo ring 2/4 measured, 2/4/8 sim.
    QCOMPARE(v->bars().size(), std::size_t(6));
    for (const BreakdownBar& b : v->bars()) {
      const RunSummary s = store.summary(b.run->id());
      QCOMPARE(b.compute_s, s.compute_s);
      QCOMPARE(b.exposed_comm_s, s.exposed_comm_s);
      QCOMPARE(b.optimizer_s, s.optimizer_s);
      QVERIFY(std::abs(b.compute_s + b.exposed_comm_s + b.optimizer_s + b.other_s - s.step_s) < 1e-12);
    }
    QCOMPARE(v->bars()[1].label, std::string("demo: ring 2r measured"));  // measured beside simulated
    QCOMPARE(v->bars()[2].label, std::string("demo: ring 2r simulated"));
    const auto strategySets = sets(v->chartViews()[0]->chart());
    QCOMPARE(strategySets.size(), 4);
    QCOMPARE(strategySets[0]->count(), 6);
    QCOMPARE(strategySets[0]->at(5), v->bars()[0].compute_s * 1e3);  // drawn bottom-up: the first bar last

    // Per rank: the newest shown measured run (ring at 4 ranks); rank 1 computes 20 ms more.
    QVERIFY(v->rankRun() && v->rankRun()->id() == ids_.measured[4]);
    const auto rankSets = sets(v->chartViews()[1]->chart());
    QCOMPARE(rankSets[0]->count(), 4);
    for (int rank = 0; rank < 4; ++rank)
      QVERIFY(std::abs(rankSets[0]->at(3 - rank) - fx::compute(4, rank) * 1e3) < 1e-9);
    QVERIFY(v->rankReport());
    const RankBreakdown& r1 = v->rankReport()->ranks[1];
    double step = 0;
    for (int s = 0; s < fx::kSteps; ++s) step += fx::stepTime(4, s, 1);
    QVERIFY(std::abs(r1.step_s - step / fx::kSteps) < 1e-12);
    QVERIFY(std::abs(rankSets[3]->at(2) - 1e3 * (r1.step_s - 0.10 - 0.04 - 0.005)) < 1e-9);  // other
    QCOMPARE(v->rankReport()->slowest, 1);
    // 0.105 s against the others' median 0.085 s: 23.5% over.
    QVERIFY2(v->stragglerLabel()->text().contains("rank 1") && v->stragglerLabel()->text().contains("23.5%"),
             qPrintable(v->stragglerLabel()->text()));
    // The 2-rank run's ranks are even: no straggler named.
    w.runsView()->selectRuns({ids_.measured[2]});
    QCOMPARE(v->rankRun()->id(), ids_.measured[2]);
    QVERIFY2(v->stragglerLabel()->text().startsWith("No straggler"), qPrintable(v->stragglerLabel()->text()));

    // As % of the step: each bar's parts add up to 100.
    v->setPercent(true);
    const auto pct = sets(v->chartViews()[0]->chart());
    for (int i = 0; i < pct[0]->count(); ++i)
      QVERIFY(std::abs(pct[0]->at(i) + pct[1]->at(i) + pct[2]->at(i) + pct[3]->at(i) - 100) < 1e-9);
  }
};

QTEST_MAIN(BreakdownViewTest)
#include "test_breakdown_view.moc"
