// MainWindow and saveScreenshot: see main_window.hpp.
#include "ddplab/gui/main_window.hpp"

#include <QAction>
#include <QApplication>
#include <QFileDialog>
#include <QFileInfo>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QKeySequence>
#include <QLabel>
#include <QLineEdit>
#include <QMenuBar>
#include <QMessageBox>
#include <QPixmap>
#include <QSortFilterProxyModel>
#include <QSplitter>
#include <QStatusBar>
#include <QTabWidget>
#include <QTableView>
#include <QToolBar>
#include <QVBoxLayout>
#include <set>
#include <unordered_map>

#include "ddplab/gui/charts.hpp"
#include "ddplab/gui/runs_model.hpp"
#include "ddplab/gui/validation_view.hpp"

namespace ddplab::gui {

MainWindow::MainWindow(QWidget* parent) : QMainWindow(parent) {
  setWindowTitle(tr("ddplab"));

  model_ = new RunsTableModel(this);
  proxy_ = new QSortFilterProxyModel(this);
  proxy_->setSourceModel(model_);
  proxy_->setFilterKeyColumn(-1);  // match the filter text against every column
  proxy_->setFilterCaseSensitivity(Qt::CaseInsensitive);
  proxy_->setSortRole(RunsTableModel::SortRole);

  // Top: filter line and runs table.
  filter_ = new QLineEdit;
  filter_->setPlaceholderText(tr("Filter runs (any column, e.g. \"simulated\", \"ring\", \"failed\")"));
  filter_->setClearButtonEnabled(true);
  auto* filterRow = new QHBoxLayout;
  filterRow->addWidget(new QLabel(tr("Filter:")));
  filterRow->addWidget(filter_);

  table_ = new QTableView;
  table_->setModel(proxy_);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::ExtendedSelection);  // ctrl/shift-click for several runs
  table_->setSortingEnabled(true);
  table_->sortByColumn(RunsTableModel::Id, Qt::AscendingOrder);
  table_->setAlternatingRowColors(true);
  table_->verticalHeader()->setVisible(false);
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->setToolTip(tr("Select runs to plot their loss; with no selection every measured run in view is plotted."));

  auto* top = new QWidget;
  auto* topLayout = new QVBoxLayout(top);
  topLayout->setContentsMargins(6, 6, 6, 0);
  topLayout->addLayout(filterRow);
  topLayout->addWidget(table_);

  // Bottom: the two charts side by side.
  loss_ = new LossChartView;
  throughput_ = new ThroughputChartView;
  auto* charts = new QSplitter(Qt::Horizontal);
  charts->addWidget(loss_);
  charts->addWidget(throughput_);

  auto* split = new QSplitter(Qt::Vertical);
  split->addWidget(top);
  split->addWidget(charts);
  split->setStretchFactor(0, 1);
  split->setStretchFactor(1, 2);
  split->setSizes({300, 600});  // charts get two thirds of the height; rescaled to the window

  validation_ = new ValidationView;
  tabs_ = new QTabWidget;
  tabs_->setDocumentMode(true);
  tabs_->addTab(split, tr("Runs"));
  tabs_->addTab(validation_, tr("Validation"));
  tabs_->setTabToolTip(1, tr("Predicted vs measured, from `ddplab validate`"));
  setCentralWidget(tabs_);

  statusLabel_ = new QLabel;
  statusBar()->addWidget(statusLabel_, 1);

  connect(filter_, &QLineEdit::textChanged, this, [this](const QString& text) {
    proxy_->setFilterFixedString(text);
    refreshCharts();
  });
  connect(table_->selectionModel(), &QItemSelectionModel::selectionChanged, this, &MainWindow::refreshCharts);

  buildActions();
  updateStatus();
}

void MainWindow::buildActions() {
  auto* open = new QAction(tr("&Open results..."), this);
  open->setShortcut(QKeySequence::Open);
  connect(open, &QAction::triggered, this, &MainWindow::openFileDialog);

  auto* reloadAct = new QAction(tr("&Reload"), this);
  reloadAct->setShortcut(QKeySequence(Qt::Key_F5));
  reloadAct->setToolTip(tr("Reread the results store (F5)"));
  connect(reloadAct, &QAction::triggered, this, &MainWindow::reload);

  auto* quit = new QAction(tr("&Quit"), this);
  quit->setShortcut(QKeySequence::Quit);
  connect(quit, &QAction::triggered, this, &QWidget::close);

  QMenu* file = menuBar()->addMenu(tr("&File"));
  file->addAction(open);
  file->addAction(reloadAct);
  file->addSeparator();
  file->addAction(quit);

  auto* logY = logYAction_ = new QAction(tr("&Log scale for throughput"), this);
  logY->setCheckable(true);
  logY->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_L));
  connect(logY, &QAction::toggled, this, [this](bool on) {
    throughput_->setLogScaleY(on);
    refreshCharts();
  });
  auto* runsTab = new QAction(tr("&Runs"), this);
  runsTab->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_1));
  connect(runsTab, &QAction::triggered, this, [this] { showValidation(false); });
  auto* validationTab = new QAction(tr("&Validation: predicted vs measured"), this);
  validationTab->setShortcut(QKeySequence(Qt::CTRL | Qt::Key_2));
  connect(validationTab, &QAction::triggered, this, [this] { showValidation(true); });

  QMenu* view = menuBar()->addMenu(tr("&View"));
  view->addAction(runsTab);
  view->addAction(validationTab);
  view->addSeparator();
  view->addAction(logY);

  QToolBar* bar = addToolBar(tr("Main"));
  bar->setMovable(false);
  bar->addAction(open);
  bar->addAction(reloadAct);
  bar->addSeparator();
  bar->addAction(logY);
}

bool MainWindow::openStore(const QString& path, QString* error) {
  StoreSnapshot snap;
  try {
    snap = load_snapshot(path.toStdString());
  } catch (const std::exception& e) {
    if (error) *error = QString::fromStdString(e.what());
    return false;
  }

  // Keep the selection across a reload (same file, runs identified by id).
  const bool sameFile = QFileInfo(path) == QFileInfo(path_);
  const std::vector<std::int64_t> keep = sameFile ? selectedRunIds() : std::vector<std::int64_t>{};

  path_ = path;
  model_->setSnapshot(std::move(snap));
  table_->resizeColumnsToContents();
  if (!keep.empty()) {
    const std::set<std::int64_t> ids(keep.begin(), keep.end());
    QItemSelection sel;
    for (int row = 0; row < proxy_->rowCount(); ++row) {
      const QModelIndex idx = proxy_->index(row, 0);
      if (ids.count(idx.data(RunsTableModel::RunIdRole).toLongLong()))
        sel.select(idx, proxy_->index(row, proxy_->columnCount() - 1));
    }
    table_->selectionModel()->select(sel, QItemSelectionModel::ClearAndSelect);
  }
  validation_->setValidations(model_->snapshot().validations);
  const auto n = model_->snapshot().validations.size();
  tabs_->setTabText(1, n ? tr("Validation (%1)").arg(n) : tr("Validation"));
  setWindowTitle(tr("ddplab - %1").arg(QFileInfo(path).fileName()));
  refreshCharts();
  return true;
}

bool MainWindow::loadInteractive(const QString& path) {
  QString error;
  if (openStore(path, &error)) return true;
  QMessageBox::warning(this, tr("ddplab: cannot open results"), error);
  return false;
}

void MainWindow::reload() {
  if (path_.isEmpty()) {
    openFileDialog();
    return;
  }
  loadInteractive(path_);
}

void MainWindow::openFileDialog() {
  const QString dir = path_.isEmpty() ? QStringLiteral("results") : QFileInfo(path_).absolutePath();
  const QString file = QFileDialog::getOpenFileName(
      this, tr("Open ddplab results"), dir, tr("ddplab results (*.db *.sqlite *.sqlite3);;All files (*)"));
  if (!file.isEmpty()) loadInteractive(file);
}

void MainWindow::showValidation(bool on) { tabs_->setCurrentIndex(on ? 1 : 0); }

void MainWindow::setThroughputLogScale(bool on) { logYAction_->setChecked(on); }  // toggled() replots

std::vector<std::int64_t> MainWindow::selectedRunIds() const {
  std::vector<std::int64_t> ids;
  for (const QModelIndex& idx : table_->selectionModel()->selectedRows())
    ids.push_back(idx.data(RunsTableModel::RunIdRole).toLongLong());
  return ids;
}

std::vector<std::int64_t> MainWindow::visibleRunIds() const {
  std::vector<std::int64_t> ids;
  ids.reserve(static_cast<std::size_t>(proxy_->rowCount()));
  for (int row = 0; row < proxy_->rowCount(); ++row)
    ids.push_back(proxy_->index(row, 0).data(RunsTableModel::RunIdRole).toLongLong());
  return ids;
}

void MainWindow::refreshCharts() {
  std::unordered_map<std::int64_t, const RunRecord*> byId;
  for (const RunRecord& r : model_->snapshot().runs) byId[r.id()] = &r;
  auto records = [&](const std::vector<std::int64_t>& ids) {
    std::vector<const RunRecord*> out;
    for (auto id : ids)
      if (auto it = byId.find(id); it != byId.end()) out.push_back(it->second);
    return out;
  };
  const auto visible = records(visibleRunIds());
  const auto selected = records(selectedRunIds());
  loss_->plot(selected.empty() ? visible : selected);
  throughput_->plot(visible);
  updateStatus();
}

void MainWindow::updateStatus() {
  if (path_.isEmpty()) {
    statusLabel_->setText(tr("No results store open (File > Open, Ctrl+O)"));
    return;
  }
  const int total = model_->rowCount();
  const int shown = proxy_->rowCount();
  const int selected = static_cast<int>(table_->selectionModel()->selectedRows().size());
  statusLabel_->setText(tr("%1  |  %2 runs, %3 shown, %4 selected  |  %5 validations  |  F5 reloads")
                            .arg(QFileInfo(path_).absoluteFilePath())
                            .arg(total).arg(shown).arg(selected)
                            .arg(model_->snapshot().validations.size()));
}

bool saveScreenshot(MainWindow& window, const QString& file, QSize size, QString* error) {
  window.resize(size);
  window.show();
  // Let layouts and the chart scenes settle before grabbing.
  for (int i = 0; i < 3; ++i) QApplication::processEvents();
  const QPixmap pix = window.grab();
  if (pix.isNull() || !pix.save(file, "PNG")) {
    if (error) *error = QObject::tr("cannot write screenshot %1").arg(file);
    return false;
  }
  return true;
}

}  // namespace ddplab::gui
