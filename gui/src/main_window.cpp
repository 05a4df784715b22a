// MainWindow and the screenshot helpers: see main_window.hpp.
#include "ddplab/gui/main_window.hpp"

#include <QAction>
#include <QApplication>
#include <QCloseEvent>
#include <QDateTime>
#include <QDir>
#include <QDragEnterEvent>
#include <QDropEvent>
#include <QFile>
#include <QFileDialog>
#include <QFileInfo>
#include <QKeySequence>
#include <QLabel>
#include <QLineEdit>
#include <QMenuBar>
#include <QMessageBox>
#include <QMimeData>
#include <QPixmap>
#include <QSettings>
#include <QStatusBar>
#include <QTabWidget>
#include <QTimer>
#include <algorithm>
#include <set>

#include "ddplab/core/run_admin.hpp"
#include "ddplab/gui/breakdown_view.hpp"
#include "ddplab/gui/charts.hpp"
#include "ddplab/gui/collectives_view.hpp"
#include "ddplab/gui/convergence_view.hpp"
#include "ddplab/gui/curve_loader.hpp"
#include "ddplab/gui/goodput_view.hpp"
#include "ddplab/gui/runs_model.hpp"
#include "ddplab/gui/runs_view.hpp"
#include "ddplab/gui/scaling_view.hpp"
#include "ddplab/gui/timeline_view.hpp"
#include "ddplab/gui/validation_view.hpp"
#include "ddplab/gui/what_if_view.hpp"

namespace ddplab::gui {

QStringList MainWindow::viewKeys() {
  return {"runs", "convergence", "scaling", "breakdown", "timeline", "collectives", "validation", "what-if", "goodput"};
}

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
  setWindowTitle(tr("ddplab"));
  setAcceptDrops(true);
  runs_ = new RunsView;
  convergence_ = new ConvergenceView;
  scaling_ = new ScalingView;
  breakdown_ = new BreakdownView;
  timeline_ = new TimelineView;
  collectives_ = new CollectivesView;
  validation_ = new ValidationView;
  whatIf_ = new WhatIfView;
  goodput_ = new GoodputView;
  views_ = {runs_, convergence_, scaling_, breakdown_, timeline_, collectives_, validation_, whatIf_, goodput_};
  tabs_ = new QTabWidget;
  for (View* v : views_) tabs_->addTab(v, v->title());
  setCentralWidget(tabs_);

  statusLabel_ = new QLabel;
  statusBar()->addWidget(statusLabel_, 1);
  poll_ = new QTimer(this);
  connect(poll_, &QTimer::timeout, this, &MainWindow::pollStore);
  curves_ = new CurveLoader(this);
  connect(curves_, &CurveLoader::arrived, this, [this] {
    for (View* v : views_) v->curvesArrived(curves_->idle());
    updateStatus();
  });

  connect(runs_, &RunsView::changed, this, &MainWindow::refreshViews);
  connect(runs_, &RunsView::deleteRequested, this, [this](std::vector<std::int64_t> ids) { deleteRuns(ids); });
  buildActions();
  refreshViews();
  updateStatus();
}

void MainWindow::buildActions() {
  QMenu* file = menuBar()->addMenu(tr("&File"));
  QAction* open = file->addAction(tr("&Open results..."), this, &MainWindow::openFileDialog);
  open->setShortcut(QKeySequence::Open);
  QAction* reloadAct = file->addAction(tr("&Reload"), this, &MainWindow::reload);
  reloadAct->setShortcut(QKeySequence(Qt::Key_F5));
  followAction_ = file->addAction(tr("&Follow live (poll the store)"));
  followAction_->setCheckable(true);
  followAction_->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_L));
  connect(followAction_, &QAction::toggled, this, [this](bool on) { setFollow(on); });
  file->addSeparator();
  auto exportAs = [this](const QString& filter, const QString& suffix, bool csv) {
    const QString key = currentViewKey();
    const QString file = QFileDialog::getSaveFileName(this, tr("Export %1").arg(key), key + '.' + suffix, filter);
    if (file.isEmpty()) return;
    QString error;
    if (!(csv ? exportCsv(file, &error) : exportImage(file, &error)))
      QMessageBox::warning(this, tr("ddplab: export failed"), error);
  };
  file->addAction(tr("Export view as &PNG..."), this, [exportAs] { exportAs(tr("PNG image (*.png)"), "png", false); })
      ->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_P));
  file->addAction(tr("Export view as &SVG..."), this, [exportAs] { exportAs(tr("SVG image (*.svg)"), "svg", false); })
      ->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_S));
  file->addAction(tr("Export view data as &CSV..."), this, [exportAs] { exportAs(tr("CSV (*.csv)"), "csv", true); })
      ->setShortcut(QKeySequence(Qt::CTRL | Qt::SHIFT | Qt::Key_C));
  file->addSeparator();
  file->addAction(tr("&Quit"), this, &QWidget::close)->setShortcut(QKeySequence::Quit);

  QMenu* edit = menuBar()->addMenu(tr("&Edit"));
  edit->addAction(tr("&Filter runs"), this,
                  [this] {
                    showView("runs");
                    runs_->filterEdit()->setFocus();
                    runs_->filterEdit()->selectAll();
                  })
      ->setShortcut(QKeySequence::Find);
  edit->addAction(tr("&Delete selected runs..."), this,
                  [this] {
                    const std::vector<std::int64_t> ids = runs_->selectedIds();
                    if (!ids.empty()) deleteRuns(ids);
                  })
      ->setShortcut(QKeySequence::Delete);

  QMenu* viewMenu = menuBar()->addMenu(tr("&View"));
  for (int i = 0; i < views_.size(); ++i) {
    QAction* a = viewMenu->addAction(views_[i]->title(), this, [this, i] { tabs_->setCurrentIndex(i); });
    a->setShortcut(QKeySequence(Qt::CTRL | static_cast<Qt::Key>(Qt::Key_1 + i)));
  }
}

View* MainWindow::view(const QString& key) const {
  const int i = viewKeys().indexOf(key);
  return i < 0 ? nullptr : views_[i];
}

bool MainWindow::showView(const QString& key) {
  View* v = view(key);
  if (!v) return false;
  tabs_->setCurrentWidget(v);
  return true;
}

QString MainWindow::currentViewKey() const { return viewKeys().value(tabs_->currentIndex()); }

bool MainWindow::openStore(const QString& path, QString* error) {
  // The file's stamp before reading it: a write landing during the read is then seen by the next poll.
  const QString stamp = fileStamp(path);
  StoreSnapshot snap;
  try {
    snap = load_snapshot(path.toStdString());
  } catch (const std::exception& e) {  // LoadError, and anything unexpected: the window stays usable
    if (error) *error = QString::fromStdString(e.what());
    return false;
  }
  const bool sameFile = QFileInfo(path) == QFileInfo(path_);
  path_ = path;
  stamp_ = stamp;
  ++generation_;
  runs_->setSnapshot(std::move(snap), sameFile);
  if (!sameFile) runs_->selectRuns({});
  curves_->load(runs_->snapshot(), drawnFirst());
  setWindowTitle(tr("ddplab - %1").arg(QFileInfo(path).fileName()));
  refreshViews();
  updateStatus();
  return true;
}

void MainWindow::refreshViews() {
  const StoreSnapshot& snap = runs_->snapshot();
  colors_.assign(snap.runs, runs_->groupBy());
  runs_->model()->setColors(&colors_);
  ViewContext ctx;
  ctx.snapshot = &snap;
  ctx.runs = runs_->shownRuns();
  ctx.selected = runs_->selectedRuns();
  ctx.colors = &colors_;
  ctx.curves = curves_;
  ctx.generation = generation_;
  curves_->prioritize(drawnFirst());
  // Every view is refreshed, not only the visible one: a view must never keep pointers into a snapshot
  // that a reload replaced.
  for (View* v : views_)
    if (v != runs_) v->setContext(ctx);
  const int runs = static_cast<int>(snap.runs.size());
  tabs_->setTabText(tabs_->indexOf(runs_), runs ? tr("Runs (%1)").arg(runs) : tr("Runs"));
  const int validations = static_cast<int>(snap.validations.size());
  tabs_->setTabText(tabs_->indexOf(validation_),
                    validations ? tr("Validation (%1)").arg(validations) : tr("Validation"));
  updateStatus();
}

std::vector<const RunRecord*> MainWindow::drawnFirst() const {
  // Newest first, as Convergence picks the runs it draws.
  std::vector<const RunRecord*> out = runs_->selectedRuns(), shown = runs_->shownRuns();
  std::reverse(out.begin(), out.end());
  out.insert(out.end(), shown.rbegin(), shown.rend());
  return out;
}

bool MainWindow::waitForCurves(int timeout_ms) { return curves_->waitUntilIdle(timeout_ms); }

void MainWindow::updateStatus() {
  if (path_.isEmpty()) {
    statusLabel_->setText(tr("No results open - File > Open (Ctrl+O), or drop a results .db here"));
    return;
  }
  const StoreSnapshot& snap = runs_->snapshot();
  std::size_t measured = 0, simulated = 0;
  for (const auto& r : snap.runs) (r.measured() ? measured : simulated) += 1;
  statusLabel_->setText(
      tr("%1 - %2 runs (%3 measured, %4 simulated), %5 in the charts, %6 benchmarks, %7 validations, %8 "
         "predictions%9")
          .arg(path_)
          .arg(snap.runs.size())
          .arg(measured)
          .arg(simulated)
          .arg(runs_->shownRuns().size())
          .arg(snap.benches.size())
          .arg(snap.validations.size())
          .arg(snap.predictions.size())
          .arg(following() ? tr(" - following live") : QString()) +
      (curves_->pending() ? tr(" - reading curves: %1 runs to go").arg(curves_->pending()) : QString()) +
      (curves_->error().isEmpty() ? QString() : tr(" - %1").arg(curves_->error())));
}

bool MainWindow::loadInteractive(const QString& path) {
  QString error;
  if (openStore(path, &error)) return true;
  QMessageBox::warning(this, tr("ddplab: cannot open results"), error);
  return false;
}

void MainWindow::reload() {
  if (path_.isEmpty()) return openFileDialog();
  loadInteractive(path_);
}

void MainWindow::openFileDialog() {
  const QString start = path_.isEmpty() ? QStringLiteral("results") : QFileInfo(path_).absolutePath();
  const QString file = QFileDialog::getOpenFileName(this, tr("Open ddplab results"), start,
                                                    tr("ddplab results (*.db *.sqlite);;All files (*)"));
  if (!file.isEmpty()) loadInteractive(file);
}

bool MainWindow::deleteRuns(const std::vector<std::int64_t>& ids, bool confirm, QString* error) {
  auto fail = [&](const QString& msg) {
    if (error) *error = msg;
    if (confirm) QMessageBox::warning(this, tr("ddplab: cannot delete"), msg);
    return false;
  };
  if (ids.empty() || path_.isEmpty()) return fail(tr("no runs to delete"));
  if (runs_->snapshot().schema < Store::kSchemaVersion)
    return fail(
        tr("%1 is at schema version %2: deleting would upgrade it to %3, which older ddplab builds cannot open. "
           "Upgrade it first with `ddplab report --db %1`, then delete.")
            .arg(path_)
            .arg(runs_->snapshot().schema)
            .arg(Store::kSchemaVersion));
  QStringList names;
  for (std::int64_t id : ids) {
    const RunRecord* r = runs_->snapshot().find(id);
    if (!r) return fail(tr("run #%1 is not in %2 (reload?)").arg(id).arg(path_));
    if (r->summary.run.status == RunStatus::Running)
      return fail(tr("run #%1 is still marked running: its launcher may be writing it. Stop it first.").arg(id));
    names << tr("#%1 %2 %3 (%4 ranks, %5)")
                 .arg(id)
                 .arg(QString::fromStdString(r->info().scenario), QString::fromStdString(r->info().strategy))
                 .arg(r->info().world_size)
                 .arg(QString::fromStdString(to_string(r->summary.run.status)));
  }
  if (confirm && QMessageBox::question(
                     this, tr("Delete runs"),
                     tr("Delete %n run(s) from %1, with their steps and evaluations?\n\n%2\n\nThis cannot be undone.",
                        nullptr, static_cast<int>(ids.size()))
                         .arg(path_, names.join('\n'))) != QMessageBox::Yes)
    return false;
  try {
    Store store(path_.toStdString());
    delete_runs_checked(store, ids);  // checks again against the file: a run may have started since
  } catch (const std::exception& e) {
    return fail(QString::fromStdString(e.what()));
  }
  QString reloadError;
  if (!openStore(path_, &reloadError)) return fail(reloadError);
  return true;
}

bool MainWindow::exportImage(const QString& file, QString* error) {
  auto* v = qobject_cast<View*>(tabs_->currentWidget());
  QWidget* w = v ? v->exportWidget() : nullptr;
  if (!w) {
    if (error) *error = tr("the %1 view has no chart to export").arg(currentViewKey());
    return false;
  }
  return saveImage(w, file, error);
}

bool MainWindow::exportCsv(const QString& file, QString* error) {
  auto* v = qobject_cast<View*>(tabs_->currentWidget());
  const QString text = v ? v->csv() : QString();
  if (text.isEmpty()) {
    if (error) *error = tr("the %1 view has no chart to export").arg(currentViewKey());
    return false;
  }
  QFile out(file);
  if (!out.open(QIODevice::WriteOnly | QIODevice::Truncate | QIODevice::Text) || out.write(text.toUtf8()) < 0) {
    if (error) *error = tr("cannot write %1: %2").arg(file, out.errorString());
    return false;
  }
  return true;
}

QString MainWindow::fileStamp(const QString& path) {
  // A WAL that is missing or empty means the same (opening a store may create an empty one).
  const QFileInfo db(path), wal(path + "-wal");
  const bool walEmpty = !wal.exists() || wal.size() == 0;
  return QStringLiteral("%1:%2;%3")
      .arg(db.exists() ? db.size() : -1)
      .arg(db.exists() ? db.lastModified().toMSecsSinceEpoch() : 0)
      .arg(walEmpty ? QStringLiteral("-")
                    : QStringLiteral("%1:%2").arg(wal.size()).arg(wal.lastModified().toMSecsSinceEpoch()));
}

void MainWindow::setFollow(bool on, int interval_ms) {
  if (on)
    poll_->start(interval_ms);
  else
    poll_->stop();
  if (followAction_->isChecked() != on) {
    const QSignalBlocker block(followAction_);
    followAction_->setChecked(on);
  }
  updateStatus();
}

bool MainWindow::following() const { return poll_->isActive(); }

bool MainWindow::pollStore() {
  if (path_.isEmpty()) return false;
  const QString now = fileStamp(path_);
  if (now == stamp_) return false;
  QString error;
  if (!openStore(path_, &error)) {  // e.g. mid-checkpoint: keep what is shown, try again next poll
    statusLabel_->setText(tr("%1 - reload failed, retrying: %2").arg(path_, error));
    return false;
  }
  return true;
}

bool MainWindow::acceptsDrop(const QMimeData* mime) {
  return mime && mime->urls().size() == 1 && mime->urls().front().isLocalFile();
}

bool MainWindow::openDropped(const QMimeData* mime) {
  return acceptsDrop(mime) && loadInteractive(mime->urls().front().toLocalFile());
}

void MainWindow::dragEnterEvent(QDragEnterEvent* e) {
  if (acceptsDrop(e->mimeData())) e->acceptProposedAction();
}

void MainWindow::dropEvent(QDropEvent* e) {
  if (openDropped(e->mimeData())) e->acceptProposedAction();
}

void MainWindow::closeEvent(QCloseEvent* e) {
  saveSettings();
  QMainWindow::closeEvent(e);
}

void MainWindow::restoreSettings() {
  QSettings s;
  restoreGeometry(s.value("window/geometry").toByteArray());
  restoreState(s.value("window/state").toByteArray());
  showView(s.value("window/view", "runs").toString());
}

void MainWindow::saveSettings() const {
  QSettings s;
  s.setValue("window/geometry", saveGeometry());
  s.setValue("window/state", saveState());
  s.setValue("window/view", currentViewKey());
  if (!path_.isEmpty()) s.setValue("store/last", QFileInfo(path_).absoluteFilePath());
}

// ---------------------------------------------------------------------------------------
bool saveScreenshot(MainWindow& window, const QString& file, QSize size, QString* error) {
  window.resize(size);
  window.show();
  if (!window.waitForCurves(60000)) {
    if (error) *error = QObject::tr("the runs' curves were not read within 60 s");
    return false;
  }
  if (window.currentViewKey() == "what-if" && !window.whatIfView()->waitForResult(60000)) {
    if (error) *error = QObject::tr("the What-if simulation did not finish within 60 s");
    return false;
  }
  // Let layouts and the chart scenes settle before grabbing.
  for (int i = 0; i < 3; ++i) QApplication::processEvents();
  const QPixmap pix = window.grab();
  if (pix.isNull() || !pix.save(file, "PNG")) {
    if (error) *error = QObject::tr("cannot write screenshot %1").arg(file);
    return false;
  }
  return true;
}

bool saveAllScreenshots(MainWindow& window, const QString& dir, QSize size, QString* error) {
  if (!QDir().mkpath(dir)) {
    if (error) *error = QObject::tr("cannot create folder %1").arg(dir);
    return false;
  }
  const QString start = window.currentViewKey();
  for (const QString& key : MainWindow::viewKeys()) {
    window.showView(key);
    if (!saveScreenshot(window, QDir(dir).filePath(key + ".png"), size, error)) return false;
  }
  window.showView(start);
  return true;
}

}  // namespace ddplab::gui
