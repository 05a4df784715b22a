// What every view of the main window shares: the runs the Runs view lets through, their colours, and
// the interface the window uses to refresh and export a view.
#pragma once
#include <QChartView>
#include <QList>
#include <QString>
#include <QWidget>
#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "ddplab/gui/run_data.hpp"

namespace ddplab::gui {

class CurveLoader;

// How runs are grouped: one colour, and one legend entry, per group.
enum class GroupBy { Run, Scenario, Strategy, World, Source, Backend };
const std::vector<std::pair<GroupBy, QString>>& group_names();  // in menu order, "run" first
std::string group_key(const RunRecord& run, GroupBy by);        // "#12", "demo", "ring", "4 ranks", ...

// One stable colour per run (or per group of runs) in every chart: keys get palette slots in the order
// they first appear among the store's runs, oldest first, so a new run never recolours the old ones.
// Per-strategy charts (scaling, breakdown, goodput) colour by strategy name with the same slots when
// grouping by strategy, and with slots of their own otherwise.
class RunColors {
 public:
  void assign(const std::vector<RunRecord>& runs, GroupBy by);
  GroupBy group() const { return by_; }
  QColor color(const RunRecord& run) const;
  QString label(const RunRecord& run) const;  // the run's legend name: "#id strategy (n ranks)" or the group key
  QColor strategyColor(const std::string& strategy) const;
  bool knowsStrategy(const std::string& strategy) const { return strategy_slot_.count(strategy) > 0; }

 private:
  GroupBy by_ = GroupBy::Run;
  std::map<std::string, std::size_t> slot_, strategy_slot_;
};

struct ViewContext {
  const StoreSnapshot* snapshot = nullptr;
  std::vector<const RunRecord*> runs;      // shown: passing the Runs view's filter and checked, oldest first
  std::vector<const RunRecord*> selected;  // of those, the rows selected in the Runs view
  const RunColors* colors = nullptr;
  // The measured runs' curves read so far (they come in the background: View::curvesArrived).
  const CurveLoader* curves = nullptr;
  // Bumped each time a new snapshot is read: views that list the store's benches, validations or
  // predictions rebuild their choosers only then, so a filter change keeps the user's choice.
  std::uint64_t generation = 0;
};

class View : public QWidget {
  Q_OBJECT
 public:
  using QWidget::QWidget;
  virtual QString title() const = 0;  // the tab's name
  virtual void setContext(const ViewContext& context) = 0;
  virtual QList<QChartView*> chartViews() const = 0;
  // What Export as PNG/SVG renders: the one chart, or the whole view when it has several panels; nullptr
  // when the view has nothing to export. csv(): the data drawn ("" when none), by default its charts' series.
  virtual QWidget* exportWidget();
  virtual QString csv() const;
  QList<QChart*> charts() const;
  // More curves were read (ViewContext::curves); `complete`: every requested curve is in.
  virtual void curvesArrived(bool complete) { (void)complete; }

 protected:
  // Views that take long to draw call this in setContext, after storing the context: true when the window
  // is on screen and this view is not (another tab), and the view should draw when it is shown (redraw()
  // from showEvent). The context is stored either way, so the view never holds an old snapshot's pointers.
  bool deferDraw();
  virtual void redraw() {}
  void showEvent(QShowEvent* e) override;

 private:
  bool stale_ = false;
};

}  // namespace ddplab::gui
