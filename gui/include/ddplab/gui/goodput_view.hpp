// The "Goodput" view: what `ddplab predict` stored (table predictions), predicted training time to a
// target accuracy against world size, one line per strategy, the best strategy marked at each size, and the
// measured counterparts (held-out runs) as points. One invocation at a time (scenario, target, time),
// newest first.
#pragma once
#include <string>
#include <vector>

#include "ddplab/gui/charts.hpp"
#include "ddplab/gui/view.hpp"

class QComboBox;
class QLabel;

namespace ddplab::gui {

struct PredictionBatch {
  std::string created_at, scenario;  // created_at: the first row's
  double target = 0;
  std::vector<PredictionRow> rows;  // store order
};
// Rows grouped into the `ddplab predict` invocations that stored them, oldest first: a new one starts where
// the scenario or target changes or a (strategy, world size) repeats.
std::vector<PredictionBatch> prediction_batches(const std::vector<PredictionRow>& rows);
// The fastest strategy at each world size of a batch (ties: the first in store order): (world, row index).
std::vector<std::pair<int, std::size_t>> best_per_world(const PredictionBatch& batch);

class GoodputView : public View {
  Q_OBJECT
 public:
  explicit GoodputView(QWidget* parent = nullptr);
  QString title() const override { return tr("Goodput"); }
  void setContext(const ViewContext& context) override;
  QList<QChartView*> chartViews() const override { return {chart_}; }

  QComboBox* batchCombo() const { return batch_; }  // item i = batches()[size - 1 - i]
  const std::vector<PredictionBatch>& batches() const { return batches_; }
  QLabel* summaryLabel() const { return summary_; }

 private:
  void refresh();

  ViewContext ctx_;
  std::vector<PredictionBatch> batches_;
  QComboBox* batch_ = nullptr;
  ChartView* chart_ = nullptr;
  QLabel* summary_ = nullptr;
};

}  // namespace ddplab::gui
