// ddplab-gui: desktop viewer of a ddplab results store.
//   ddplab-gui [results.db]                        interactive window (default: the last store opened)
//   ddplab-gui results.db --view convergence       start on a view (runs, convergence, scaling, ...)
//   ddplab-gui results.db --screenshot out.png     render the view offscreen at a fixed size and exit
//   ddplab-gui results.db --screenshot-all DIR     render every view into DIR/<view>.png and exit
#include <QApplication>
#include <QComboBox>
#include <QCommandLineParser>
#include <QMessageBox>
#include <QRegularExpression>
#include <QSettings>
#include <QTimer>
#include <QFileInfo>
#include <algorithm>
#include <cstdio>
#include <cstring>

#include "ddplab/core/version.hpp"
#include "ddplab/gui/convergence_view.hpp"
#include "ddplab/gui/main_window.hpp"
#include "ddplab/gui/runs_view.hpp"
#include "ddplab/gui/scaling_view.hpp"
#include "ddplab/gui/validation_view.hpp"

namespace {

// True if argv holds one of the given options (also as --opt=value).
bool hasOption(int argc, char** argv, std::initializer_list<const char*> names) {
  for (int i = 1; i < argc; ++i)
    for (const char* n : names) {
      const std::size_t len = std::strlen(n);
      if (std::strncmp(argv[i], n, len) == 0 && (argv[i][len] == '\0' || argv[i][len] == '=')) return true;
    }
  return false;
}

void printErr(const QString& msg) { std::fprintf(stderr, "ddplab-gui: %s\n", qPrintable(msg)); }

}  // namespace

int main(int argc, char** argv) {
  // QApplication aborts without a display. Screenshots and --help/--version need none,
  // so pick the offscreen platform for them unless the user chose one.
  const bool headlessUse =
      hasOption(argc, argv, {"--screenshot", "--screenshot-all", "--help", "-h", "--help-all", "--version", "-v"});
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) {
    if (headlessUse) {
      qputenv("QT_QPA_PLATFORM", "offscreen");
    } else if (qEnvironmentVariableIsEmpty("DISPLAY") && qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY")) {
      printErr(
          "no display (DISPLAY and WAYLAND_DISPLAY are unset); use --screenshot FILE.png or --screenshot-all DIR, "
          "or set QT_QPA_PLATFORM=offscreen");
      return 1;
    }
  }

  QApplication app(argc, argv);
  QApplication::setOrganizationName("ddplab");
  QApplication::setApplicationName("ddplab-gui");
  QApplication::setApplicationVersion(QString::fromLatin1(ddplab::version()));
  using ddplab::gui::MainWindow;
  const QString keys = MainWindow::viewKeys().join(", ");

  QCommandLineParser parser;
  parser.setApplicationDescription(
      "Compare ddplab runs, measured and simulated: convergence, throughput and scaling, step breakdown,\n"
      "collective bandwidth, the simulator's validation and predicted time to accuracy.");
  parser.addHelpOption();
  parser.addVersionOption();
  parser.addPositionalArgument("results",
                               "Results store (SQLite) to open; default: the last one opened, else results/ddplab.db.",
                               "[results.db]");
  QCommandLineOption view("view", "View to start on (and to render with --screenshot): " + keys + ".", "VIEW", "runs");
  QCommandLineOption screenshot("screenshot", "Render the view offscreen into FILE (PNG) and exit.", "FILE");
  QCommandLineOption screenshotAll("screenshot-all", "Render every view offscreen into DIR/<view>.png and exit.",
                                   "DIR");
  QCommandLineOption size("size", "Window size for screenshots, WIDTHxHEIGHT (default 1400x900).", "WxH", "1400x900");
  QCommandLineOption logY("log-throughput", "Start with a log scale on the Scaling view's samples/s axis.");
  QCommandLineOption metric(
      "metric", "Validation metric to show: step_s, comm_s or busbw_gbs (default: the first stored).", "METRIC");
  QCommandLineOption group(
      "group", "Group runs by run, scenario, strategy, world, source or backend (one colour each).", "BY", "run");
  QCommandLineOption target("target-accuracy", "Convergence: mark each run's time to this test accuracy (0-1).", "A");
  QCommandLineOption xaxis("x", "Convergence x axis: step, samples or time.", "AXIS", "step");
  QCommandLineOption follow("follow", "Follow the store live: reload within 2 s of new steps.");
  for (const auto* o : {&view, &screenshot, &screenshotAll, &size, &logY, &metric, &group, &target, &xaxis, &follow})
    parser.addOption(*o);
  parser.process(app);  // handles --help / --version and exits on unknown options

  const QStringList pos = parser.positionalArguments();
  if (pos.size() > 1) {
    printErr("expected at most one results file, got " + pos.join(' '));
    return 2;
  }
  const bool render = parser.isSet(screenshot) || parser.isSet(screenshotAll);
  QString path = pos.isEmpty() ? QStringLiteral("results/ddplab.db") : pos.first();
  if (pos.isEmpty() && !render) {
    const QString last = QSettings().value("store/last").toString();
    if (!last.isEmpty() && QFileInfo::exists(last)) path = last;
  }
  if (!MainWindow::viewKeys().contains(parser.value(view))) {
    printErr("--view expects one of " + keys + ", got " + parser.value(view));
    return 2;
  }
  const auto& groups = ddplab::gui::group_names();
  const QString groupName = parser.value(group) == "world" ? QStringLiteral("world size") : parser.value(group);
  auto groupIt = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.second == groupName; });
  if (groupIt == groups.end()) {
    printErr("--group expects run, scenario, strategy, world, source or backend, got " + parser.value(group));
    return 2;
  }
  const QStringList axes{"step", "samples", "time"};
  if (!axes.contains(parser.value(xaxis))) {
    printErr("--x expects step, samples or time, got " + parser.value(xaxis));
    return 2;
  }
  double targetAccuracy = 0;
  if (parser.isSet(target)) {
    bool ok = false;
    targetAccuracy = parser.value(target).toDouble(&ok);
    if (!ok || !(targetAccuracy > 0 && targetAccuracy <= 1)) {
      printErr("--target-accuracy expects a number in (0, 1], got " + parser.value(target));
      return 2;
    }
  }
  QSize shotSize;
  if (render) {
    const auto m = QRegularExpression("^(\\d+)x(\\d+)$").match(parser.value(size));
    if (!m.hasMatch() || m.captured(1).toInt() < 200 || m.captured(2).toInt() < 150) {
      printErr("--size expects WIDTHxHEIGHT of at least 200x150, got " + parser.value(size));
      return 2;
    }
    shotSize = QSize(m.captured(1).toInt(), m.captured(2).toInt());
  }

  MainWindow window;
  window.runsView()->setGroupBy(groupIt->first);
  window.convergenceView()->setXAxis(static_cast<ddplab::gui::XAxis>(axes.indexOf(parser.value(xaxis))));
  window.convergenceView()->setTarget(targetAccuracy);
  if (parser.isSet(logY)) window.scalingView()->setLogY(true);
  if (!render) window.restoreSettings();  // geometry and the last view; screenshots stay reproducible
  QString error;
  const bool loaded = window.openStore(path, &error);
  if (render || parser.isSet(view)) window.showView(parser.value(view));
  if (loaded && parser.isSet(metric) && !window.validationView()->setCurrentMetric(parser.value(metric))) {
    QStringList present;  // what the latest validation does have
    const QComboBox* box = window.validationView()->metricCombo();
    for (int i = 0; i < box->count(); ++i) present << box->itemData(i).toString();
    printErr("--metric " + parser.value(metric) +
             (present.isEmpty() ? QStringLiteral(": the store has no validations yet (`ddplab validate` makes them)")
                                : ": the latest validation has no rows of it (it has " + present.join(", ") +
                                      "; known metrics: step_s, comm_s, busbw_gbs)"));
    return 2;
  }

  if (render) {
    if (!loaded) {
      printErr(error);
      return 1;
    }
    const bool ok = parser.isSet(screenshotAll)
                        ? ddplab::gui::saveAllScreenshots(window, parser.value(screenshotAll), shotSize, &error)
                        : ddplab::gui::saveScreenshot(window, parser.value(screenshot), shotSize, &error);
    if (!ok) {
      printErr(error);
      return 1;
    }
    return 0;
  }

  if (parser.isSet(follow)) window.setFollow(true);
  if (window.size().width() < 400) window.resize(1400, 900);
  window.show();
  if (!loaded)  // show the (empty) window first so the user can File > Open another store
    QTimer::singleShot(0, &window, [&window, error] {
      QMessageBox::warning(&window, QObject::tr("ddplab: cannot open results"), error);
    });
  return app.exec();
}
