// The ddplab-gui main window: one tab per view (Ctrl+1..9), all fed by the Runs view's choice of runs.
//   Runs · Convergence · Scaling · Breakdown · Timeline · Collectives · Validation · What-if · Goodput
// File: open (Ctrl+O, or drop a file on the window), reload (F5), follow live (poll the store, new steps
// within 2 s), export the current view as PNG, SVG or CSV. Edit: delete the selected runs (Del).
// The store is read read-only; deleting runs is the one write, in one transaction, after a confirmation.
// Opening reads the runs' summaries; their curves follow in the background (CurveLoader), the shown runs'
// first.
// The last store, the window layout and the current view are remembered (QSettings).
#pragma once
#include <QMainWindow>
#include <QSize>
#include <QString>
#include <QStringList>
#include <cstdint>
#include <vector>

#include "ddplab/gui/run_data.hpp"
#include "ddplab/gui/view.hpp"

class QAction;
class QMimeData;
class QLabel;
class QTabWidget;
class QTimer;

namespace ddplab::gui {

class RunsView;
class ConvergenceView;
class ScalingView;
class BreakdownView;
class TimelineView;
class CurveLoader;
class CollectivesView;
class ValidationView;
class WhatIfView;
class GoodputView;

class MainWindow : public QMainWindow {
  Q_OBJECT
 public:
  explicit MainWindow(QWidget* parent = nullptr);

  // Reads the store at `path` and shows it. On failure the window keeps what it showed,
  // `*error` (if given) gets a user-facing message, and false is returned.
  bool openStore(const QString& path, QString* error = nullptr);
  QString storePath() const { return path_; }
  const CurveLoader* curves() const { return curves_; }
  // Processes events until every curve of the open store is read (or could not be); false on timeout.
  bool waitForCurves(int timeout_ms = 30000);

  // Views, in tab order, and their keys ("runs", "convergence", ...): --view and --screenshot-all names.
  const QList<View*>& views() const { return views_; }
  static QStringList viewKeys();
  View* view(const QString& key) const;  // nullptr if unknown
  bool showView(const QString& key);     // false if unknown
  QString currentViewKey() const;
  RunsView* runsView() const { return runs_; }
  ConvergenceView* convergenceView() const { return convergence_; }
  ScalingView* scalingView() const { return scaling_; }
  BreakdownView* breakdownView() const { return breakdown_; }
  TimelineView* timelineView() const { return timeline_; }
  CollectivesView* collectivesView() const { return collectives_; }
  ValidationView* validationView() const { return validation_; }
  WhatIfView* whatIfView() const { return whatIf_; }
  GoodputView* goodputView() const { return goodput_; }
  QTabWidget* tabs() const { return tabs_; }
  const RunColors& colors() const { return colors_; }

  // Deletes runs from the store (one transaction) and reloads. Refuses runs still marked running (their
  // launcher may be writing). With confirm, asks first; returns false when refused, declined or failed.
  bool deleteRuns(const std::vector<std::int64_t>& ids, bool confirm = true, QString* error = nullptr);

  // Export of the current view: PNG or SVG by the file's suffix, CSV of its charts' data.
  bool exportImage(const QString& file, QString* error = nullptr);
  bool exportCsv(const QString& file, QString* error = nullptr);

  // Live follow: poll the store file and its WAL every `interval_ms`, reload when either changed.
  void setFollow(bool on, int interval_ms = 1000);
  bool following() const;
  bool pollStore();  // one poll: true if it reloaded

  // Drag and drop: one local file is accepted, and opened when dropped.
  static bool acceptsDrop(const QMimeData* mime);
  bool openDropped(const QMimeData* mime);

  void restoreSettings();  // last store, geometry, view
  void saveSettings() const;

 public slots:
  void reload();          // F5: reread the current file
  void openFileDialog();  // Ctrl+O
  void refreshViews();    // after the runs' filter, show/hide, selection or grouping changed

 protected:
  void dragEnterEvent(QDragEnterEvent* e) override;
  void dropEvent(QDropEvent* e) override;
  void closeEvent(QCloseEvent* e) override;

 private:
  void buildActions();
  void updateStatus();
  bool loadInteractive(const QString& path);         // openStore + message box on failure
  std::vector<const RunRecord*> drawnFirst() const;  // the runs whose curves to read first: selected, then shown
  static QString fileStamp(const QString& path);     // size and mtime of the store and its WAL

  QString path_;
  QString stamp_;
  std::uint64_t generation_ = 0;
  RunColors colors_;
  QList<View*> views_;
  RunsView* runs_ = nullptr;
  ConvergenceView* convergence_ = nullptr;
  ScalingView* scaling_ = nullptr;
  BreakdownView* breakdown_ = nullptr;
  TimelineView* timeline_ = nullptr;
  CollectivesView* collectives_ = nullptr;
  ValidationView* validation_ = nullptr;
  WhatIfView* whatIf_ = nullptr;
  GoodputView* goodput_ = nullptr;
  QTabWidget* tabs_ = nullptr;
  QLabel* statusLabel_ = nullptr;
  QAction* followAction_ = nullptr;
  QTimer* poll_ = nullptr;
  CurveLoader* curves_ = nullptr;
};

// Renders `window` at `size` into a PNG (meant for QT_QPA_PLATFORM=offscreen), once its curves are read.
// Returns false with `*error` set when the image cannot be written.
bool saveScreenshot(MainWindow& window, const QString& file, QSize size, QString* error = nullptr);
// Renders every view into DIR/<key>.png; the window ends on the view it started on.
bool saveAllScreenshots(MainWindow& window, const QString& dir, QSize size, QString* error = nullptr);

}  // namespace ddplab::gui
