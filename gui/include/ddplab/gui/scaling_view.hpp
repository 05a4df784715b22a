// The "Scaling" view: throughput and scaling efficiency against world size, one panel per scenario and
// model (an MLP on CPU and ResNet-50 on GPUs never share an axis).
//   - samples/s per strategy and per-rank batch: measured runs as points, simulated runs as a dashed line through the
//   newest
//     simulation at each world size; log2 x, log y by default (simulated lines at scale span decades);
//   - efficiency = samples/s at n / (samples/s at n0 x n / n0), n0 the line's smallest world size (measured:
//     the mean of the runs at a size);
//   - a simulated line's tooltip names its compute source and network model.
// Completed runs only: a failed or unfinished run's throughput is partial.
#pragma once
#include <string>
#include <vector>

#include "ddplab/gui/charts.hpp"
#include "ddplab/gui/view.hpp"

class QCheckBox;
class QScrollArea;
class QVBoxLayout;

namespace ddplab::gui {

struct ScalingPoint {
  int world = 0;
  double samples_per_s = 0;
  std::int64_t run = 0;
};
struct ScalingLine {
  std::string strategy;
  int batch = 0;  // per rank: throughput depends on it, so each batch is a line of its own
  bool simulated = false;
  std::vector<ScalingPoint> points;                // measured: every run; simulated: newest per world; by world
  std::vector<std::pair<int, double>> efficiency;  // per world size, ascending
  std::string compute_origin, network_model;       // simulated: from the newest run's config
};
struct ScalingPanel {
  std::string scenario, model;
  std::vector<ScalingLine> lines;  // by strategy, then batch, measured before simulated
  bool batches_differ = false;     // lines are then named with their batch
};
std::vector<ScalingPanel> scaling_panels(const std::vector<const RunRecord*>& runs);

class ScalingView : public View {
  Q_OBJECT
 public:
  explicit ScalingView(QWidget* parent = nullptr);
  QString title() const override { return tr("Scaling"); }
  void setContext(const ViewContext& context) override;
  QList<QChartView*> chartViews() const override { return views_; }
  QWidget* exportWidget() override;

  void setLogY(bool on);
  const std::vector<ScalingPanel>& panels() const { return panels_; }

 private:
  void refresh();
  void redraw() override { refresh(); }

  ViewContext ctx_;
  std::vector<ScalingPanel> panels_;
  QList<QChartView*> views_;  // throughput, efficiency per panel
  QCheckBox* logY_ = nullptr;
  QScrollArea* scroll_ = nullptr;
  QWidget* panelsWidget_ = nullptr;
};

}  // namespace ddplab::gui
