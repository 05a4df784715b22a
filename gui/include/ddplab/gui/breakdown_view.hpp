// The "Breakdown" view: where a step's time goes (HTA's temporal breakdown), in ms per step.
//   - per strategy: the newest completed run of each (scenario, strategy, world size, source) among the runs
//     shown, measured and simulated side by side: compute, exposed communication, optimizer and other
//     (the rest of the slowest rank's step: data loading, hand-offs), stacked, in ms or as % of the step;
//   - per rank for one run (the first selected, else the newest shown measured run): the same parts for each
//     rank over the run's steady steps, and the straggler named (core/rank_report.hpp, as `ddplab report
//     --ranks`): the rank with the most compute + optimizer time, the one the others wait for (their wait
//     shows as exposed communication), when it is at least kStragglerPct over the other ranks' median.
#pragma once
#include <array>
#include <map>
#include <string>
#include <vector>

#include "ddplab/gui/charts.hpp"
#include "ddplab/gui/view.hpp"

class QCheckBox;
class QLabel;

namespace ddplab::gui {

struct BreakdownBar {
  std::string label;  // "ring 4r measured"
  const RunRecord* run = nullptr;
  double compute_s = 0, exposed_comm_s = 0, optimizer_s = 0, other_s = 0;  // per step, means over ranks
};
std::vector<BreakdownBar> strategy_breakdown(const std::vector<const RunRecord*>& runs);

// Draws rows of (compute, exposed comm, optimizer, other) ms as horizontal stacked bars from the top down,
// or each row's shares in % with `percent` (also the What-if view's breakdown).
void drawStepStack(QChart* chart, const QStringList& categories, std::vector<std::array<double, 4>> ms, bool percent);

class BreakdownView : public View {
  Q_OBJECT
 public:
  static constexpr double kStragglerPct = 5;

  explicit BreakdownView(QWidget* parent = nullptr);
  QString title() const override { return tr("Breakdown"); }
  void setContext(const ViewContext& context) override;
  QList<QChartView*> chartViews() const override { return {strategies_, ranks_}; }

  const std::vector<BreakdownBar>& bars() const { return bars_; }
  const RunRecord* rankRun() const { return rankRun_; }
  const RankReport* rankReport() const;  // of rankRun(), once read
  QLabel* stragglerLabel() const { return straggler_; }
  void setPercent(bool on);  // bars as shares of their step

 private:
  void refresh();
  void redraw() override { refresh(); }

  ViewContext ctx_;
  std::vector<BreakdownBar> bars_;
  const RunRecord* rankRun_ = nullptr;
  std::map<std::int64_t, RankReport> reports_;  // per run, of the snapshot of reportGeneration_
  std::uint64_t reportGeneration_ = 0;
  ChartView* strategies_ = nullptr;
  ChartView* ranks_ = nullptr;
  QLabel* straggler_ = nullptr;
  QCheckBox* percent_ = nullptr;
};

}  // namespace ddplab::gui
