// The "Collectives" view: bus bandwidth against message size per schedule, log-log, as nccl-tests reports it,
// for one benchmark at a time (`ddplab bench collectives`, or a log brought in by `ddplab import nccl-tests`),
// newest first. Measured rows as solid lines; where `ddplab validate` predicted the same bench, the newest
// prediction as a dashed line of the same colour.
#pragma once
#include <string>
#include <vector>

#include "ddplab/gui/charts.hpp"
#include "ddplab/gui/view.hpp"

class QComboBox;
class QLabel;

namespace ddplab::gui {

struct BusbwLine {
  std::string schedule;
  bool simulated = false;
  std::vector<std::pair<std::int64_t, double>> points;  // (bytes, busbw GB/s), ascending bytes
};
// The measured lines of a bench (allreduce rows with a positive busbw), and the newest validation's
// predictions for it.
std::vector<BusbwLine> busbw_lines(const BenchRecord& bench, const std::vector<ValidationRow>& validations);

class CollectivesView : public View {
  Q_OBJECT
 public:
  explicit CollectivesView(QWidget* parent = nullptr);
  QString title() const override { return tr("Collectives"); }
  void setContext(const ViewContext& context) override;
  QList<QChartView*> chartViews() const override { return {chart_}; }

  QComboBox* benchCombo() const { return bench_; }  // item data: bench id, newest first
  const std::vector<BusbwLine>& lines() const { return lines_; }

 private:
  void refresh();

  ViewContext ctx_;
  std::vector<BusbwLine> lines_;
  QComboBox* bench_ = nullptr;
  ChartView* chart_ = nullptr;
  QLabel* note_ = nullptr;
};

}  // namespace ddplab::gui
