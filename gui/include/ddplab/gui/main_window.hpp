// The ddplab-gui main window, two tabs:
//   - Runs: runs table with a text filter above, the loss and throughput charts below;
//   - Validation: what `ddplab validate` stored, predicted vs measured (validation_view.hpp).
// What the Runs charts show:
//   - Loss vs step: the selected measured runs, or, when nothing is selected, every measured
//     run that passes the filter;
//   - Throughput vs world size: every run that passes the filter (selection does not narrow it,
//     so picking one run for its loss curve keeps its scaling context in view).
#pragma once
#include <QMainWindow>
#include <QSize>
#include <QString>
#include <cstdint>
#include <vector>

#include "ddplab/gui/run_data.hpp"

class QLineEdit;
class QSortFilterProxyModel;
class QTableView;
class QAction;
class QLabel;
class QTabWidget;

namespace ddplab::gui {

class RunsTableModel;
class LossChartView;
class ThroughputChartView;
class ValidationView;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(QWidget* parent = nullptr);

  // Reads the store at `path` and shows it. On failure the window keeps what it showed,
  // `*error` (if given) gets a user-facing message, and false is returned.
  bool openStore(const QString& path, QString* error = nullptr);
  QString storePath() const { return path_; }

  // Widgets, exposed for tests and for the screenshot mode.
  RunsTableModel* runsModel() const { return model_; }
  QSortFilterProxyModel* proxyModel() const { return proxy_; }
  QTableView* runsTable() const { return table_; }
  QLineEdit* filterEdit() const { return filter_; }
  LossChartView* lossChart() const { return loss_; }
  ThroughputChartView* throughputChart() const { return throughput_; }
  ValidationView* validationView() const { return validation_; }
  QTabWidget* tabs() const { return tabs_; }
  void showValidation(bool on = true);  // selects the Validation tab (or Runs)

  // Ids of the runs the charts currently use (see the header comment).
  std::vector<std::int64_t> selectedRunIds() const;
  std::vector<std::int64_t> visibleRunIds() const;

 public slots:
  void reload();        // F5: reread the current file
  void openFileDialog();  // Ctrl+O
  void refreshCharts();
  void setThroughputLogScale(bool on);  // same as View > Log scale for throughput

 private:
  void buildActions();
  void updateStatus();
  bool loadInteractive(const QString& path);  // openStore + message box on failure

  QString path_;
  RunsTableModel* model_ = nullptr;
  QSortFilterProxyModel* proxy_ = nullptr;
  QTableView* table_ = nullptr;
  QLineEdit* filter_ = nullptr;
  LossChartView* loss_ = nullptr;
  ThroughputChartView* throughput_ = nullptr;
  ValidationView* validation_ = nullptr;
  QTabWidget* tabs_ = nullptr;
  QLabel* statusLabel_ = nullptr;
  QAction* logYAction_ = nullptr;
};

// Renders `window` at `size` into a PNG (meant for QT_QPA_PLATFORM=offscreen).
// Returns false with `*error` set when the image cannot be written.
bool saveScreenshot(MainWindow& window, const QString& file, QSize size, QString* error = nullptr);

}  // namespace ddplab::gui
