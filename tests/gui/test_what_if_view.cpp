// The What-if view: its simulation against `ddplab simulate`'s own path (simulate_sweep) for the same
// inputs, unchanged and changed; refused inputs; stale requests dropped; the view's controls and result.
#include <QDir>
#include <QFile>
#include <QLabel>
#include <QSignalSpy>
#include <QTemporaryDir>
#include <QtTest>

#include "ddplab/gui/main_window.hpp"
#include "ddplab/gui/what_if_view.hpp"
#include "gui_fixture.hpp"
#include "simulator/stored_runs.hpp"

using namespace ddplab;
using namespace ddplab::gui;
namespace fx = gui_fixture;

namespace {
// A scenario with its own compute time, so that no measured run is needed.
const char* kScenario = R"(
[model]
type = "mlp"
layers = [784, 256, 10]
[data]
dataset = "synthetic"
[train]
batch_size = 32
[cluster]
topology = "star"
link_bandwidth = "10Gbit/s"
link_latency = "5us"
compute_s = 0.004
simulate_world = [2, 4, 16]
[[strategy]]
name = "overlap-ring"
policy = "overlap"
schedule = "ring"
bucket_cap = "256KiB"
[[strategy]]
name = "flat-fp16"
policy = "flat"
schedule = "ring"
codec = "fp16"
)";
}  // namespace

class WhatIfViewTest : public fx::StoreTest {
  Q_OBJECT
  QString toml_;
  Scenario scenario_;

  // What `ddplab simulate --aggregated` stores for the scenario at one world size.
  SweepPoint simulated(const Scenario& sc, std::size_t strategy, int world) {
    const QString copy = dir_.filePath(QStringLiteral("sweep-%1.db").arg(world));
    QFile::remove(copy);
    QFile::copy(db_, copy);
    Store store(copy.toStdString());
    SimOptions o;
    o.mode = "aggregated";
    o.keep_trace = false;  // as `ddplab simulate` without --trace
    return simulate_sweep(sc, sc.strategies[strategy], {world}, store, o).front();
  }

 private slots:
  void initTestCase() {
    QVERIFY(makeStore());
    toml_ = dir_.filePath("whatif.toml");
    QFile f(toml_);
    QVERIFY(f.open(QIODevice::WriteOnly));
    f.write(kScenario);
    f.close();
    scenario_ = load_scenario(toml_.toStdString());
  }

  void sameInputsAsSimulate() {
    for (std::size_t strategy : {0u, 1u}) {
      WhatIfRequest req{0, db_.toStdString(), scenario_, strategy,
                        inputs_of(scenario_, scenario_.strategies[strategy], 32)};
      const WhatIfResult r = run_what_if(req);
      QVERIFY2(r.error.empty(), r.error.c_str());
      const SweepPoint want = simulated(scenario_, strategy, 32);
      // Bit for bit: the same code path (QCOMPARE on doubles would forgive the last bits).
      QVERIFY(r.what_if.result.step_s == want.result.step_s);
      QVERIFY(r.what_if.result.samples_per_s == want.result.samples_per_s);
      QVERIFY(r.what_if.efficiency == want.efficiency);
      QVERIFY(r.base.result.step_s == want.result.step_s);  // unchanged inputs: the scenario as written
      QCOMPARE(r.scaling.size(), std::size_t(6));           // 1, 2, 4, 8, 16, 32
      QCOMPARE(r.scaling.back(), std::make_pair(32, want.result.samples_per_s));
      QCOMPARE(r.compute_origin.empty(), false);
    }
  }

  void changedInputsAsSimulateOfTheChangedScenario() {
    WhatIfInputs in = inputs_of(scenario_, scenario_.strategies[0], 8);
    QCOMPARE(in.link_gbps, 10.0);
    QCOMPARE(in.latency_us, 5.0);
    QCOMPARE(in.bucket_kib, 256.0);
    in.link_gbps = 1;
    in.bucket_kib = 1024;
    in.schedule = "halving_doubling";
    in.codec = "fp16";
    const WhatIfResult r = run_what_if({0, db_.toStdString(), scenario_, 0, in});
    QVERIFY2(r.error.empty(), r.error.c_str());
    Scenario changed = scenario_;
    changed.cluster.link_bandwidth = 1e9 / 8;
    changed.strategies[0].bucket_cap = 1 << 20;
    changed.strategies[0].schedule = "halving_doubling";
    changed.strategies[0].codec = "fp16";
    const SweepPoint want = simulated(changed, 0, 8);
    QVERIFY(r.what_if.result.step_s == want.result.step_s);
    QCOMPARE(r.what_if.result.schedule, std::string("halving_doubling"));
    // A tenth of the bandwidth: slower than the scenario as written.
    QVERIFY(r.what_if.result.step_s > r.base.result.step_s);
    // Refused inputs come back as an error, not a crash.
    in.network_model = "XYZ";
    const WhatIfResult bad = run_what_if({0, db_.toStdString(), scenario_, 0, in});
    QVERIFY(!bad.error.empty());
  }

  void staleRequestsAreDropped() {
    WhatIfRunner runner;
    QSignalSpy spy(&runner, &WhatIfRunner::finished);
    std::uint64_t last = 0;
    for (int world : {64, 32, 16, 8})
      last = runner.submit({0, db_.toStdString(), scenario_, 0, inputs_of(scenario_, scenario_.strategies[0], world)});
    QTRY_VERIFY_WITH_TIMEOUT(spy.count() >= 1, 30000);
    QTest::qWait(300);         // any stale result would have arrived by now
    QCOMPARE(spy.count(), 1);  // only the newest request's result is delivered
    const auto r = spy.front().front().value<WhatIfResult>();
    QCOMPARE(r.id, last);
    QCOMPARE(r.what_if.world_size, 8);
    QVERIFY(runner.ran() <= 4 && runner.ran() >= 1);
  }

  void opensOnTheScenariosBesideTheStore() {
    QTemporaryDir project;
    QVERIFY(QDir(project.path()).mkpath("scenarios") && QDir(project.path()).mkpath("results"));
    QVERIFY(QFile::copy(toml_, project.filePath("scenarios/whatif.toml")));
    QVERIFY(QFile::copy(db_, project.filePath("results/ddplab.db")));
    MainWindow w;  // the window refreshes its views before any store is open: nothing may be simulated then
    QVERIFY(w.whatIfView()->runner()->latest() == 0);
    QVERIFY(w.openStore(project.filePath("results/ddplab.db")));
    WhatIfView* v = w.whatIfView();
    QVERIFY(v->scenario() && v->scenario()->name == "whatif");  // found in results/../scenarios
    QVERIFY(v->waitForResult(30000));
    QVERIFY2(v->result() && v->result()->error.empty(), v->result() ? v->result()->error.c_str() : "no result");
  }

  // No file is the newest run's scenario: the view rebuilds it from the store's measured runs and says so.
  void opensOnTheStoresNewestScenarioWhenNoFileIsIt() {
    QTemporaryDir project;
    QVERIFY(QDir(project.path()).mkpath("results"));
    const QString db = project.filePath("results/ddplab.db");
    QVERIFY(QFile::copy(db_, db));
    Scenario sc = scenario_;
    sc.name = "stored-only";
    std::int64_t newest = 0;
    {
      Store store(db.toStdString());
      // overlap-ring twice (the second replaces the first), then flat-fp16.
      for (std::size_t strategy : {0u, 0u, 1u}) {
        const StrategyConfig& st = sc.strategies[strategy];
        newest =
            store.begin_run({sc.name, st.name, "cpu", 2, RunSource::Measured, test::run_config(sc, st, 2), "{}", 32});
        for (std::int64_t step = 0; step < 8; ++step)
          for (int rank = 0; rank < 2; ++rank)
            store.add_step(newest, {step, rank, 0.004, 0.001, 0.0005, 0.0002, 0.005, 32, 1 << 20, 1.0});
        store.finish_run(newest, RunStatus::Completed);
      }
    }
    MainWindow w;
    QVERIFY(w.openStore(db));
    WhatIfView* v = w.whatIfView();
    QVERIFY2(v->scenario() && v->scenario()->name == "stored-only", qPrintable(v->originLabel()->text()));
    QCOMPARE(v->scenario()->strategies.size(), std::size_t(2));
    QCOMPARE(v->scenario()->strategies[0].name, std::string("overlap-ring"));
    QCOMPARE(v->scenario()->model.layers, sc.model.layers);
    const QString origin = v->originLabel()->text();
    QVERIFY2(origin.contains("as the store holds it") && origin.contains(QStringLiteral("#%1").arg(newest)) &&
                 origin.contains("3 completed measured runs") && origin.contains("calibration: none"),
             qPrintable(origin));
    QVERIFY(v->waitForResult(30000));
    QVERIFY2(v->result() && v->result()->error.empty(), v->result() ? v->result()->error.c_str() : "no result");
  }

  void viewSimulatesWhatItsControlsSay() {
    MainWindow w;
    QVERIFY(w.openStore(db_));
    WhatIfView* v = w.whatIfView();
    QString error;
    QVERIFY2(v->addScenario(toml_, &error), qPrintable(error));
    QVERIFY(v->selectScenario(toml_));
    QVERIFY(v->scenario() && v->scenario()->name == scenario_.name);
    WhatIfInputs in = inputs_of(scenario_, scenario_.strategies[0], 4);
    in.latency_us = 50;
    v->setInputs(in);
    QVERIFY(v->waitForResult(30000));
    QVERIFY(v->result() && v->result()->error.empty());
    QCOMPARE(v->inputs().latency_us, 50.0);
    QCOMPARE(v->result()->what_if.world_size, 4);
    const WhatIfResult direct = run_what_if({0, db_.toStdString(), scenario_, 0, in});
    QVERIFY(v->result()->what_if.result.step_s == direct.what_if.result.step_s);
    QVERIFY2(v->summaryLabel()->text().contains(QString::number(direct.what_if.result.step_s * 1e3, 'f', 3)),
             qPrintable(v->summaryLabel()->text()));
    // Through the controls, unchanged inputs are the scenario as written, bit for bit (no unit rounding).
    v->setInputs(inputs_of(scenario_, scenario_.strategies[0], 4));
    QVERIFY(v->waitForResult(30000));
    QVERIFY(v->result()->what_if.result.step_s == v->result()->base.result.step_s);
    // Exact above 256 ranks is refused with the reason.
    in.world = 512;
    in.mode = "exact";
    v->setInputs(in);
    QVERIFY(v->waitForResult(30000));
    QVERIFY2(v->summaryLabel()->text().contains("use aggregated"), qPrintable(v->summaryLabel()->text()));
    QVERIFY(!v->addScenario(dir_.filePath("missing.toml"), &error));
    QVERIFY(!error.isEmpty());
  }
};

QTEST_MAIN(WhatIfViewTest)
#include "test_what_if_view.moc"
