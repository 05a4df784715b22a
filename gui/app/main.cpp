// ddplab-gui: desktop viewer of a ddplab results store.
//   ddplab-gui [results.db]                    interactive window
//   ddplab-gui results.db --screenshot out.png render offscreen at a fixed size and exit
//   ddplab-gui results.db --view validation    start on the Validation tab (predicted vs measured)
#include <QApplication>
#include <QComboBox>
#include <QCommandLineParser>
#include <QMessageBox>
#include <QRegularExpression>
#include <QTimer>
#include <cstdio>
#include <cstring>

#include "ddplab/core/version.hpp"
#include "ddplab/gui/main_window.hpp"
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
  const bool headlessUse = hasOption(argc, argv, {"--screenshot", "--help", "-h", "--help-all", "--version", "-v"});
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) {
    if (headlessUse) {
      qputenv("QT_QPA_PLATFORM", "offscreen");
    } else if (qEnvironmentVariableIsEmpty("DISPLAY") && qEnvironmentVariableIsEmpty("WAYLAND_DISPLAY")) {
      printErr("no display (DISPLAY and WAYLAND_DISPLAY are unset); use --screenshot FILE.png, "
               "or set QT_QPA_PLATFORM=offscreen");
      return 1;
    }
  }

  QApplication app(argc, argv);
  QApplication::setApplicationName("ddplab-gui");
  QApplication::setApplicationVersion(QString::fromLatin1(ddplab::version()));

  QCommandLineParser parser;
  parser.setApplicationDescription(
      "Compare ddplab runs, measured and simulated: loss vs step and throughput vs world size; and the\n"
      "simulator's predictions against measurements, as stored by `ddplab validate` (Validation tab).");
  parser.addHelpOption();
  parser.addVersionOption();
  parser.addPositionalArgument("results", "Results store (SQLite) to open; default results/ddplab.db.", "[results.db]");
  QCommandLineOption screenshot("screenshot", "Render the window offscreen into FILE (PNG) and exit.", "FILE");
  QCommandLineOption size("size", "Window size for --screenshot, WIDTHxHEIGHT (default 1400x900).", "WxH", "1400x900");
  QCommandLineOption logY("log-throughput", "Start with a log scale on the throughput axis (View menu, Ctrl+L).");
  QCommandLineOption view("view", "Tab to start on (and to render with --screenshot): runs or validation.", "TAB", "runs");
  QCommandLineOption metric("metric", "Validation metric to show: step_s, comm_s or busbw_gbs (default: the first stored).",
                            "METRIC");
  parser.addOption(view);
  parser.addOption(metric);
  parser.addOption(screenshot);
  parser.addOption(size);
  parser.addOption(logY);
  parser.process(app);  // handles --help / --version and exits on unknown options

  const QStringList pos = parser.positionalArguments();
  if (pos.size() > 1) {
    printErr("expected at most one results file, got " + pos.join(' '));
    return 2;
  }
  const QString path = pos.isEmpty() ? QStringLiteral("results/ddplab.db") : pos.first();

  const QString tab = parser.value(view);
  if (tab != "runs" && tab != "validation") {
    printErr("--view expects runs or validation, got " + tab);
    return 2;
  }

  ddplab::gui::MainWindow window;
  if (parser.isSet(logY)) window.setThroughputLogScale(true);
  QString error;
  const bool loaded = window.openStore(path, &error);
  window.showValidation(tab == "validation");
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

  if (parser.isSet(screenshot)) {
    if (!loaded) {
      printErr(error);
      return 1;
    }
    const auto m = QRegularExpression("^(\\d+)x(\\d+)$").match(parser.value(size));
    if (!m.hasMatch() || m.captured(1).toInt() < 200 || m.captured(2).toInt() < 150) {
      printErr("--size expects WIDTHxHEIGHT of at least 200x150, got " + parser.value(size));
      return 2;
    }
    if (!ddplab::gui::saveScreenshot(window, parser.value(screenshot), QSize(m.captured(1).toInt(), m.captured(2).toInt()),
                                     &error)) {
      printErr(error);
      return 1;
    }
    return 0;
  }

  window.resize(1400, 900);
  window.show();
  if (!loaded)  // show the (empty) window first so the user can File > Open another store
    QTimer::singleShot(0, &window, [&window, error] {
      QMessageBox::warning(&window, QObject::tr("ddplab: cannot open results"), error);
    });
  return app.exec();
}
