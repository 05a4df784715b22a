// The Scaling view: one panel per scenario and model, measured points and simulated lines against Store's
// summaries, efficiency by hand, and what a simulated line's tooltip names.
#include <QLogValueAxis>
#include <QTemporaryDir>
#include <QValueAxis>
#include <QtTest>

#include "ddplab/gui/main_window.hpp"
#include "ddplab/gui/runs_view.hpp"
#include "ddplab/gui/scaling_view.hpp"
#include "gui_fixture.hpp"

using namespace ddplab;
using namespace ddplab::gui;
namespace fx = gui_fixture;

class ScalingViewTest : public fx::StoreTest {
  Q_OBJECT

 private slots:
  void initTestCase() { QVERIFY(makeStore()); }

  void panelsPerScenarioAndModel() {
    MainWindow w;
    QVERIFY(w.openStore(db_));
    ScalingView* v = w.scalingView();
    const Store store(db_.toStdString(), Store::Access::ReadOnly);
    const auto& panels = v->panels();
    QCOMPARE(panels.size(), std::size_t(2));  // never one axis for the MLP and ResNet-50
    QCOMPARE(panels[0].scenario, std::string("big"));
    QCOMPARE(panels[0].model, std::string("resnet50"));
    QCOMPARE(panels[1].model, std::string("mlp 784-64-10"));
    QCOMPARE(v->chartViews().size(), 4);  // throughput and efficiency per panel

    const auto& lines = panels[1].lines;
    QCOMPARE(lines.size(), std::size_t(2));  // ring measured, ring simulated; the failed tree run is left out
    const ScalingLine& measured = lines[0];
    const ScalingLine& simulated = lines[1];
    QVERIFY(!measured.simulated && simulated.simulated);
    QCOMPARE(measured.points.size(), std::size_t(2));
    for (const ScalingPoint& p : measured.points) {
      QCOMPARE(p.run, ids_.measured.at(p.world));
      QCOMPARE(p.samples_per_s, store.summary(p.run).samples_per_s);
    }
    QCOMPARE(simulated.points.size(), std::size_t(3));
    const int worlds[] = {2, 4, 8};
    for (int i = 0; i < 3; ++i) {
      QCOMPARE(simulated.points[i].world, worlds[i]);  // sorted, though stored 8, 2, 4
      QCOMPARE(simulated.points[i].samples_per_s, store.summary(ids_.simulated.at(worlds[i])).samples_per_s);
    }
    QCOMPARE(simulated.compute_origin, std::string("run #1"));
    QCOMPARE(simulated.network_model, std::string("LV08"));
    // Efficiency against the line's smallest world.
    const double s2 = store.summary(ids_.measured.at(2)).samples_per_s,
                 s4 = store.summary(ids_.measured.at(4)).samples_per_s;
    QCOMPARE(measured.efficiency.size(), std::size_t(2));
    QCOMPARE(measured.efficiency[0].second, 1.0);
    QVERIFY(std::abs(measured.efficiency[1].second - s4 / (2 * s2)) < 1e-12);

    // Drawn: the demo panel's throughput chart holds exactly those points, on log2 x and log y.
    QChart* tput = v->chartViews()[2]->chart();
    QXYSeries* m = fx::seriesNamed(tput, "ring measured");
    QXYSeries* s = fx::seriesNamed(tput, "ring simulated");
    QVERIFY(m && s);
    QCOMPARE(m->points().size(), 2);
    QCOMPARE(s->points().value(2), QPointF(8, simulated.points[2].samples_per_s));
    auto* x = qobject_cast<QLogValueAxis*>(tput->axes(Qt::Horizontal).value(0));
    QVERIFY(x && x->base() == 2.0 && x->min() < 2 && x->max() > 8);
    auto* y = qobject_cast<QLogValueAxis*>(tput->axes(Qt::Vertical).value(0));
    QVERIFY(y && y->min() <= s2 && y->max() >= simulated.points[2].samples_per_s);
    v->setLogY(false);
    QVERIFY(qobject_cast<QValueAxis*>(v->chartViews()[2]->chart()->axes(Qt::Vertical).value(0)));
  }

  void emptyStateSaysHowToMakeRuns() {
    MainWindow w;
    QVERIFY(w.openStore(db_));
    ViewContext ctx;  // nothing shown
    w.scalingView()->setContext(ctx);
    QVERIFY(w.scalingView()->panels().empty());
    QVERIFY(w.scalingView()->chartViews().isEmpty());
  }
};

QTEST_MAIN(ScalingViewTest)
#include "test_scaling_view.moc"
