// The "Timeline" view: a per-rank Gantt of one step (Perfetto-style) from the timelines in the store
// (table trace_events): each rank has a compute and a comm track, each op a bar coloured by kind.
//   - the run: the first selected run with a timeline, else the newest shown measured one (a choice box lists
//     every shown run that has one); the step: any of its traced steps (by default the last one with
//     communication: under local SGD the averaging step);
//   - under a measured run, the simulated step of the same strategy (the newest simulated run of its scenario
//     and strategy at its world size, else at the nearest), at the same place in the step pattern;
//   - both on one time scale from each step's first op: the wheel zooms around the pointer, dragging pans,
//     a double click shows the whole step again; hover a bar for its op, rank, start, duration and bytes.
#pragma once
#include <QWidget>
#include <string>
#include <vector>

#include "ddplab/gui/view.hpp"

class QComboBox;
class QLabel;

namespace ddplab::gui {

struct TimelineBar {
  int rank = 0;
  bool comm = false;  // the comm track, else compute
  std::string name;
  double start_ms = 0, dur_ms = 0;  // from the step's first op
  std::int64_t bytes = 0;
};
struct TimelineStep {
  std::int64_t step = -1;
  int ranks = 0;
  double span_ms = 0;  // first op's start to last op's end
  std::vector<TimelineBar> bars;
};
std::vector<std::int64_t> trace_steps(const std::vector<TraceEvent>& events);  // ascending, distinct
TimelineStep timeline_step(const std::vector<TraceEvent>& events, std::int64_t step);
// The simulated run to show under `run`: see the header comment. nullptr when the store has none.
const RunRecord* simulated_counterpart(const StoreSnapshot& snapshot, const RunRecord& run);
// Of `steps`, the one at the place of `step` in a pattern of `period` micro-steps (the last one when none is).
std::int64_t matching_step(std::int64_t step, std::int64_t period, const std::vector<std::int64_t>& steps);

// One step's Gantt. Several widgets can share one window (setWindow, windowChanged).
class TimelineWidget : public QWidget {
  Q_OBJECT
 public:
  explicit TimelineWidget(QWidget* parent = nullptr);
  void setStep(TimelineStep step, const QString& title);
  const TimelineStep& step() const { return step_; }
  double windowStart() const { return t0_; }
  double windowEnd() const { return t1_; }
  QSize sizeHint() const override { return {800, 300}; }

 public slots:
  void setWindow(double t0_ms, double t1_ms);
  void showAll();

 signals:
  void windowChanged(double t0_ms, double t1_ms);

 protected:
  void paintEvent(QPaintEvent*) override;
  void wheelEvent(QWheelEvent*) override;
  void mousePressEvent(QMouseEvent*) override;
  void mouseMoveEvent(QMouseEvent*) override;
  void mouseDoubleClickEvent(QMouseEvent*) override;
  bool event(QEvent*) override;  // tooltips

 private:
  QRectF plotRect() const;
  double xOf(double ms) const;
  const TimelineBar* barAt(QPointF p) const;

  TimelineStep step_;
  QString title_;
  double t0_ = 0, t1_ = 1;
  double dragFrom_ = -1, dragT0_ = 0;
};

class TimelineView : public View {
  Q_OBJECT
 public:
  explicit TimelineView(QWidget* parent = nullptr);
  QString title() const override { return tr("Timeline"); }
  void setContext(const ViewContext& context) override;
  QList<QChartView*> chartViews() const override { return {}; }
  QWidget* exportWidget() override;
  QString csv() const override;  // run, source, step, rank, track, name, start_ms, dur_ms, bytes

  QComboBox* runCombo() const { return run_; }    // item data: run id
  QComboBox* stepCombo() const { return step_; }  // item data: step
  TimelineWidget* measuredWidget() const { return top_; }
  TimelineWidget* simulatedWidget() const { return bottom_; }
  const RunRecord* shownRun() const { return shown_; }
  const RunRecord* counterpart() const { return counterpart_; }

 private:
  void runChanged();
  void stepChanged();

  ViewContext ctx_;
  std::uint64_t generation_ = 0;
  std::string path_;
  std::vector<TraceEvent> events_, counterEvents_;
  const RunRecord* shown_ = nullptr;
  const RunRecord* counterpart_ = nullptr;
  QComboBox* run_ = nullptr;
  QComboBox* step_ = nullptr;
  QLabel* note_ = nullptr;
  QWidget* panes_ = nullptr;
  TimelineWidget* top_ = nullptr;
  TimelineWidget* bottom_ = nullptr;
};

}  // namespace ddplab::gui
