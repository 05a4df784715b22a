// The main window: bad files get a reason and nothing is created; every view renders (in-process and
// --screenshot-all through the binary); export as PNG, SVG and CSV of the view's data; live follow picks
// up new runs; settings, shortcuts and drag and drop.
#include <QAction>
#include <QFile>
#include <QFileInfo>
#include <QImage>
#include <QMenuBar>
#include <QMimeData>
#include <QProcess>
#include <QSettings>
#include <QStandardPaths>
#include <QTabWidget>
#include <QTemporaryDir>
#include <QUrl>
#include <QtTest>
#include <set>

#include "ddplab/gui/convergence_view.hpp"
#include "ddplab/gui/curve_loader.hpp"
#include "ddplab/gui/main_window.hpp"
#include "ddplab/gui/runs_model.hpp"
#include "ddplab/gui/runs_view.hpp"
#include "gui_fixture.hpp"
#include "store_test_util.hpp"

using namespace ddplab;
using namespace ddplab::gui;
namespace fx = gui_fixture;

class MainWindowTest : public fx::StoreTest {
  Q_OBJECT
  QString tmp(const QString& name) const { return dir_.filePath(name); }

  static int run(const QStringList& args, QByteArray* err = nullptr) {
    QProcess p;
    p.start(DDPLAB_GUI_EXE, args);
    if (!p.waitForFinished(60000)) return -1;
    if (err) *err = p.readAllStandardError() + p.readAllStandardOutput();
    return p.exitStatus() == QProcess::NormalExit ? p.exitCode() : -1;
  }

 private slots:
  void initTestCase() {
    QStandardPaths::setTestModeEnabled(true);  // QSettings away from the user's own
    QVERIFY(makeStore());
  }

  void badFilesGetAReasonAndAreNotCreated() {
    MainWindow w;
    QString error;
    const QString missing = tmp("nope/missing.db");
    QVERIFY(!w.openStore(missing, &error));
    QVERIFY2(error.contains("not found") && error.contains(missing), qPrintable(error));
    QVERIFY(!QFileInfo::exists(missing));
    QFile junk(tmp("junk.db"));
    QVERIFY(junk.open(QIODevice::WriteOnly));
    junk.write(QByteArray(4096, 'x'));
    junk.close();
    QVERIFY(!w.openStore(junk.fileName(), &error));
    QVERIFY2(error.contains("cannot read results store") && error.contains("not a database"), qPrintable(error));
    const QString foreign = tmp("foreign.db");
    {
      ddplab::test::RawDb raw(foreign.toStdString());
      raw.exec("CREATE TABLE t(x)");
    }
    QVERIFY(!w.openStore(foreign, &error));
    QVERIFY2(error.contains("not a ddplab results store"), qPrintable(error));
    const QString old = tmp("old.db");
    QVERIFY(QFile::copy(db_, old));
    {
      ddplab::test::RawDb raw(old.toStdString());
      raw.exec("UPDATE schema_version SET version = 5");
    }
    QVERIFY(!w.openStore(old, &error));
    QVERIFY2(error.contains("older") && error.contains("ddplab report --db"), qPrintable(error));
    // The window is still usable, and shows what it showed (nothing).
    QVERIFY(w.storePath().isEmpty());
    QVERIFY(w.openStore(db_, &error));
    QCOMPARE(w.runsView()->model()->rowCount(), 7);
  }

  void everyViewRendersAndExports() {
    MainWindow w;
    QVERIFY(w.openStore(db_));
    w.convergenceView()->setSmoothing(0);
    const QString shots = tmp("shots");
    QString error;
    QVERIFY2(saveAllScreenshots(w, shots, QSize(1400, 900), &error), qPrintable(error));
    std::set<QByteArray> distinct;
    for (const QString& key : MainWindow::viewKeys()) {
      QFile f(shots + "/" + key + ".png");
      QVERIFY2(f.open(QIODevice::ReadOnly), qPrintable(key));
      const QByteArray bytes = f.readAll();
      QCOMPARE(QImage::fromData(bytes).size(), QSize(1400, 900));
      distinct.insert(bytes);
    }
    QCOMPARE(int(distinct.size()), MainWindow::viewKeys().size());  // each view drew something of its own

    QVERIFY(w.showView("convergence"));
    QVERIFY2(w.exportImage(tmp("conv.png"), &error), qPrintable(error));
    QVERIFY(!QImage(tmp("conv.png")).isNull());
    QVERIFY2(w.exportImage(tmp("conv.svg"), &error), qPrintable(error));
    QFile svg(tmp("conv.svg"));
    QVERIFY(svg.open(QIODevice::ReadOnly));
    const QByteArray svgText = svg.readAll();
    QVERIFY(svgText.contains("<svg") && svgText.contains("<path"));
    QVERIFY(!w.exportImage(tmp("conv.bmp"), &error));
    QVERIFY(error.contains(".png or .svg"));
    // CSV: the curve's points as drawn.
    QVERIFY2(w.exportCsv(tmp("conv.csv"), &error), qPrintable(error));
    QFile csv(tmp("conv.csv"));
    QVERIFY(csv.open(QIODevice::ReadOnly | QIODevice::Text));
    const QStringList lines = QString::fromUtf8(csv.readAll()).split('\n', Qt::SkipEmptyParts);
    QCOMPARE(lines.front(), QString("chart,series,x,y"));
    const QString name = QStringLiteral("#%1 ring (4 ranks)").arg(ids_.measured[4]);
    QStringList mine;
    for (const QString& l : lines)
      if (l.contains("," + name + ",")) mine << l;
    QCOMPARE(mine.size(), fx::kSteps);
    const QStringList first = mine.front().split(',');
    QCOMPARE(first[2].toDouble(), 1.0);
    QVERIFY(std::abs(first[3].toDouble() - fx::meanLoss(4, 0)) < 1e-9);
    // The Runs view has no chart to export.
    QVERIFY(w.showView("runs"));
    QVERIFY(!w.exportCsv(tmp("runs.csv"), &error));
  }

  void binaryRendersEveryViewAndRefusesBadOptions() {
    QByteArray err;
    const QString shots = tmp("binary-shots");
    QCOMPARE(
        run({db_, "--screenshot-all", shots, "--group", "strategy", "--target-accuracy", "0.8", "--x", "time"}, &err),
        0);
    for (const QString& key : MainWindow::viewKeys())
      QCOMPARE(QImage(shots + "/" + key + ".png").size(), QSize(1400, 900));
    QCOMPARE(run({db_, "--view", "scaling", "--screenshot", tmp("scaling.png"), "--size", "1000x700"}, &err), 0);
    QCOMPARE(QImage(tmp("scaling.png")).size(), QSize(1000, 700));
    QCOMPARE(run({db_, "--view", "plots", "--screenshot", tmp("x.png")}, &err), 2);
    QVERIFY(err.contains("--view expects one of runs, convergence, scaling"));
    QCOMPARE(run({db_, "--group", "colour", "--screenshot", tmp("x.png")}, &err), 2);
    QVERIFY(err.contains("--group expects"));
    QCOMPARE(run({db_, "--target-accuracy", "80", "--screenshot", tmp("x.png")}, &err), 2);
    QVERIFY(err.contains("--target-accuracy expects a number in (0, 1]"));
    QCOMPARE(run({db_, "--x", "epochs", "--screenshot", tmp("x.png")}, &err), 2);
    QCOMPARE(run({db_, "--size", "10x10", "--screenshot", tmp("x.png")}, &err), 2);
    QCOMPARE(run({tmp("missing.db"), "--screenshot-all", tmp("never")}, &err), 1);
    QVERIFY(err.contains("not found"));
    QVERIFY(!QFileInfo::exists(tmp("x.png")) && !QFileInfo::exists(tmp("never")));
    QCOMPARE(run({"--help"}, &err), 0);
    QVERIFY(err.contains("--screenshot-all"));
  }

  void followPicksUpNewRunsAndSteps() {
    const QString live = tmp("live.db");
    QVERIFY(QFile::copy(db_, live));
    MainWindow w;
    QVERIFY(w.openStore(live));
    w.setFollow(true, 200);
    QVERIFY(w.following());
    QVERIFY(!w.pollStore());  // nothing changed
    Store writer(live.toStdString(), 1);
    const auto id = writer.begin_run(RunInfo{"demo", "ring", "cpu", 2, RunSource::Measured, fx::mlpConfig(), "{}", 64});
    StepMetrics m;
    m.step = 0, m.rank = 0, m.step_s = 0.1, m.samples = 64, m.loss = 1.5;
    writer.add_step(id, m);
    // The timer reloads within its interval; the new run shows, still running (greyed), with its step.
    QTRY_COMPARE_WITH_TIMEOUT(w.runsView()->model()->rowCount(), 8, 2000);
    const RunRecord* r = w.runsView()->snapshot().find(id);
    QVERIFY(r && !r->finished());
    QVERIFY(w.waitForCurves());
    QCOMPARE(w.curves()->find(id)->totals.size(), std::size_t(1));
    QCOMPARE(w.curves()->find(id)->totals[0].mean_loss, 1.5);
    // The next reload reads only the running run's curves again; the finished runs' are kept.
    const RunCurves* finished = w.curves()->find(ids_.measured.at(2));
    QVERIFY(finished);
    m.step = 1;
    writer.add_step(id, m);
    QTRY_VERIFY_WITH_TIMEOUT(w.curves()->find(id) && w.curves()->find(id)->totals.size() == 2, 2000);
    QCOMPARE(w.curves()->find(ids_.measured.at(2)), finished);
    w.setFollow(false);
    QVERIFY(!w.following());
  }

  void settingsShortcutsAndDrop() {
    {
      MainWindow w;
      QVERIFY(w.openStore(db_));
      QVERIFY(w.showView("breakdown"));
      w.saveSettings();
    }
    QCOMPARE(QSettings().value("store/last").toString(), QFileInfo(db_).absoluteFilePath());
    MainWindow w;
    w.restoreSettings();
    QCOMPARE(w.currentViewKey(), QString("breakdown"));
    // Ctrl+1..7 select the views in tab order.
    for (int i = 0; i < MainWindow::viewKeys().size(); ++i) {
      const QKeySequence key(Qt::CTRL | static_cast<Qt::Key>(Qt::Key_1 + i));
      QAction* hit = nullptr;
      for (QAction* a : w.menuBar()->findChildren<QAction*>())
        if (a->shortcut() == key) hit = a;
      QVERIFY2(hit, qPrintable(key.toString()));
      hit->trigger();
      QCOMPARE(w.currentViewKey(), MainWindow::viewKeys()[i]);
    }
    // Dropping a store opens it.
    QMimeData two;
    two.setUrls({QUrl::fromLocalFile(db_), QUrl::fromLocalFile(db_)});
    QVERIFY(!MainWindow::acceptsDrop(&two));
    QMimeData remote;
    remote.setUrls({QUrl("https://example.org/results.db")});
    QVERIFY(!MainWindow::acceptsDrop(&remote));
    QMimeData mime;
    mime.setUrls({QUrl::fromLocalFile(db_)});
    QVERIFY(MainWindow::acceptsDrop(&mime));
    QVERIFY(w.openDropped(&mime));
    QCOMPARE(w.storePath(), db_);
    QCOMPARE(w.runsView()->model()->rowCount(), 7);
  }
};

QTEST_MAIN(MainWindowTest)
#include "test_main_window.moc"
