// bench_gui_open: how long ddplab-gui takes to open a large store and draw each view (offscreen).
//   bench_gui_open [--runs R] [--steps S] [--ranks N] [--db FILE]
// Makes FILE (default /tmp/ddplab-gui-bench-R-S-N.db) once with R measured runs of S steps x N ranks (a loss
// per rank and step, an evaluation every S/20 steps), then times, in one process: reading the runs'
// summaries (load_snapshot), opening the store in the window (read and refresh every view), each view's
// first draw, Convergence (the view it opens on) until it has drawn every curve it shows, the background read of every
// run's curves (until Convergence has drawn them all), and a redraw of Convergence with every curve in.
#include <QApplication>
#include <QElapsedTimer>
#include <QFileInfo>
#include <QPixmap>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

#include "ddplab/core/store.hpp"
#include "ddplab/gui/convergence_view.hpp"
#include "ddplab/gui/curve_loader.hpp"
#include "ddplab/gui/main_window.hpp"
#include "ddplab/gui/run_data.hpp"

namespace {

void fill(const std::string& path, int runs, int steps, int ranks) {
  ddplab::Store store(path, 1 << 16);
  for (int r = 0; r < runs; ++r) {
    const auto id = store.begin_run({"bench", r % 2 ? "ring" : "overlap", "cpu", ranks, ddplab::RunSource::Measured,
                                     R"({"model":{"type":"mlp","layers":[784,256,10]}})", "{}", 32});
    for (int s = 0; s < steps; ++s) {
      for (int k = 0; k < ranks; ++k) {
        ddplab::StepMetrics m;
        m.step = s, m.rank = k, m.compute_s = 0.01, m.comm_s = 0.004, m.exposed_comm_s = 0.002, m.optimizer_s = 0.001;
        m.step_s = 0.015 + 0.0001 * k, m.samples = 32, m.bytes_sent = 1 << 20;
        m.loss = 2.3 * std::exp(-s / (0.3 * steps)) + 0.05 * std::sin(s + k + r);
        store.add_step(id, m);
      }
      if ((s + 1) % std::max(1, steps / 20) == 0)
        store.add_evaluation(id, {s + 1, 0.015 * (s + 1), 1.0, 0.5 + 0.4 * (s + 1) / steps, 0.8, 0.8, 0, {}});
    }
    store.finish_run(id, ddplab::RunStatus::Completed);
  }
}

void make_store(const std::string& path, int runs, int steps, int ranks) {
  fill(path + ".part", runs, steps, ranks);  // closed (its WAL checkpointed) before the rename
  std::rename((path + ".part").c_str(), path.c_str());
}

int arg(int argc, char** argv, const char* name, int def) {
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], name) == 0) return std::atoi(argv[i + 1]);
  return def;
}

}  // namespace

int main(int argc, char** argv) {
  if (qEnvironmentVariableIsEmpty("QT_QPA_PLATFORM")) qputenv("QT_QPA_PLATFORM", "offscreen");
  const int runs = arg(argc, argv, "--runs", 100), steps = arg(argc, argv, "--steps", 1000),
            ranks = arg(argc, argv, "--ranks", 8);
  std::string db = "/tmp/ddplab-gui-bench-" + std::to_string(runs) + "-" + std::to_string(steps) + "-" +
                   std::to_string(ranks) + ".db";
  for (int i = 1; i + 1 < argc; ++i)
    if (std::strcmp(argv[i], "--db") == 0) db = argv[i + 1];
  QApplication app(argc, argv);
  QElapsedTimer t;
  if (!QFileInfo::exists(QString::fromStdString(db))) {
    t.start();
    make_store(db, runs, steps, ranks);
    std::printf("made %s: %d runs x %d steps x %d ranks in %.1f s\n", db.c_str(), runs, steps, ranks,
                t.elapsed() / 1e3);
  }
  std::printf("store %s, %.1f MB\n", db.c_str(), QFileInfo(QString::fromStdString(db)).size() / 1e6);
  t.start();
  const auto snap = ddplab::gui::load_snapshot(db);
  std::printf("load_snapshot (summaries)  %8.3f s  (%zu runs)\n", t.elapsed() / 1e3, snap.runs.size());
  ddplab::gui::MainWindow w;
  w.resize(1400, 900);
  w.show();
  QApplication::processEvents();
  w.showView("convergence");
  QElapsedTimer sinceOpen;
  sinceOpen.start();
  t.start();
  if (!w.openStore(QString::fromStdString(db))) return 1;
  QApplication::processEvents();
  std::printf("open (read + every view)   %8.3f s\n", t.elapsed() / 1e3);
  // Convergence as a user opening on it (`--view convergence`) sees it: until every run it draws has its curve.
  auto* conv = w.convergenceView();
  while (conv->curvesToCome() > 0 || conv->drawnRuns().empty()) {
    QApplication::processEvents(QEventLoop::WaitForMoreEvents);
    if (w.curves()->idle() && conv->curvesToCome() == 0) break;
  }
  (void)w.grab();
  std::printf(
      "convergence complete       %8.3f s after open  (%zu runs drawn; %zu of the store's curves still being read)\n",
      sinceOpen.elapsed() / 1e3, conv->drawnRuns().size(), w.curves()->pending());
  for (const QString& key : ddplab::gui::MainWindow::viewKeys()) {
    t.start();
    w.showView(key);
    QApplication::processEvents();
    const QPixmap pix = w.grab();  // the draw
    std::printf("draw %-22s %8.3f s\n", qPrintable(key), t.elapsed() / 1e3);
    (void)pix;
  }
  if (!w.waitForCurves(600000)) return 1;
  std::printf("every curve read           %8.3f s after open  (%zu runs)\n", sinceOpen.elapsed() / 1e3,
              w.curves()->readCount());
  w.showView("convergence");
  QApplication::processEvents();
  t.start();
  w.convergenceView()->setSmoothing(0.5);  // a redraw with every curve in
  const QPixmap pix = w.grab();
  std::printf("redraw convergence (all)   %8.3f s\n", t.elapsed() / 1e3);
  (void)pix;
  return 0;
}
