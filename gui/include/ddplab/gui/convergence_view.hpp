// The "Convergence" view: how the shown measured runs learn, TensorBoard-style.
//   - metric: train loss (mean over ranks per step), test loss, test accuracy, macro precision or recall;
//   - x: step, samples (all ranks) or training time (the slowest rank's step times, evaluation excluded);
//   - smoothing: TensorBoard's debiased EMA (default 0.6), the raw curve faint behind; log y;
//   - a target accuracy: a horizontal line on accuracy charts and each run's time to accuracy marked where
//     it first reaches it (interpolated between evaluations, as `ddplab predict` counts it);
//   - the selected runs if any are selected, else every shown run, at most kMaxRuns of them (the newest,
//     as W&B draws its first runs only; a note says how many are left out: Qt Charts adds and removes
//     series in quadratic time); simulated runs have no loss.
// Long curves are downsampled for drawing (LTTB, 2000 points, fewer when over 200k points in all); hover a
// point for its run and value. Drawn when the tab is shown; curves still being read in the background
// (curve_loader.hpp) are counted under the chart and drawn as they arrive: at most every kRedrawMs, and at
// once when the last of them is in.
#pragma once
#include <optional>
#include <vector>

#include "ddplab/gui/charts.hpp"
#include "ddplab/gui/series_math.hpp"
#include "ddplab/gui/view.hpp"

class QCheckBox;
class QComboBox;
class QDoubleSpinBox;
class QLabel;
class QSlider;
class QTimer;

namespace ddplab::gui {

enum class CurveMetric { TrainLoss, TestLoss, TestAccuracy, MacroPrecision, MacroRecall };
struct CurveMetricInfo {
  CurveMetric metric;
  const char* key;    // "train_loss", ...
  const char* title;  // "train loss (mean over ranks)"
  bool evaluation;    // from the evaluations (sparse), not the steps
};
const std::vector<CurveMetricInfo>& curve_metrics();

struct Curve {
  std::vector<double> x, y;  // y raw, x on the chosen axis
  std::vector<double> smoothed;
};
// A run's curve of `metric` against `axis` (the loss of the step stored as s is at s + 1 completed steps, an
// evaluation at its stored step), smoothed with TensorBoard's EMA at `smoothing`.
Curve run_curve(const RunCurves& run, CurveMetric metric, XAxis axis, double smoothing);
// Where a run first reaches test accuracy `target`, on `axis` (steps_to_accuracy, then RunProgress).
std::optional<double> time_to_accuracy(const RunCurves& run, double target, XAxis axis);

class ConvergenceView : public View {
  Q_OBJECT
 public:
  static constexpr std::size_t kMaxPoints = 2000;      // per drawn series (LTTB)
  static constexpr std::size_t kPointBudget = 200000;  // over all of them: many runs get fewer points each
  static constexpr std::size_t kMaxRuns = 100;         // drawn at once
  static constexpr std::size_t kMaxLegend = 30;        // entries that fit at 1400x900; more: no legend
  static constexpr int kRedrawMs = 300;                // while curves arrive

  explicit ConvergenceView(QWidget* parent = nullptr);
  QString title() const override { return tr("Convergence"); }
  void setContext(const ViewContext& context) override;
  void curvesArrived(bool complete) override;
  QList<QChartView*> chartViews() const override { return {chart_}; }

  void setMetric(CurveMetric m);
  CurveMetric metric() const;
  void setXAxis(XAxis a);
  XAxis xAxis() const;
  void setSmoothing(double w);  // 0..0.99
  double smoothing() const;
  void setLogY(bool on);
  void setTarget(double accuracy);  // 0: no target
  double target() const;

  // Runs drawn at the last refresh, in legend order, and the summary line under the chart.
  const std::vector<const RunRecord*>& drawnRuns() const { return drawn_; }
  std::size_t curvesToCome() const { return waiting_.size(); }  // runs to draw whose curves were not read yet
  QLabel* summaryLabel() const { return summary_; }

 private:
  void refresh();
  void redraw() override { refresh(); }

  ViewContext ctx_;
  std::vector<const RunRecord*> drawn_;
  QTimer* redrawSoon_ = nullptr;
  std::vector<std::int64_t> waiting_;  // runs to draw whose curves were not read at the last refresh
  ChartView* chart_ = nullptr;
  QComboBox* metric_ = nullptr;
  QComboBox* x_ = nullptr;
  QSlider* smooth_ = nullptr;
  QLabel* smoothLabel_ = nullptr;
  QCheckBox* logY_ = nullptr;
  QDoubleSpinBox* target_ = nullptr;
  QLabel* summary_ = nullptr;
};

}  // namespace ddplab::gui
