// The "Validation" tab: what `ddplab validate` stored (table validations), predicted against measured.
//   - one `ddplab validate` invocation at a time (a combo box, newest first), since each run of it
//     replays every measured configuration again;
//   - one metric at a time: step time and comm time (ms) of measured training runs, bus bandwidth (GB/s)
//     of collective benches;
//   - a scatter of predicted (y) against measured (x), one series per strategy or schedule, with the
//     y = x line and a +-10% band; log10 axes when the values span more than a decade;
//   - a sortable table of the comparisons, error % = 100 (predicted - measured) / measured, coloured by
//     size (|error| <= 5% green, <= 10% amber, above red);
//   - a summary line: comparisons, median and max |error| for each metric of the invocation.
// With no validations in the store, a message says how to make some.
#pragma once
#include <QAbstractTableModel>
#include <QChartView>
#include <QString>
#include <QWidget>
#include <vector>

#include "ddplab/gui/run_data.hpp"
#include "ddplab/gui/view.hpp"

class QComboBox;
class QLabel;
class QSortFilterProxyModel;
class QStackedWidget;
class QTableView;

namespace ddplab::gui {

// The metrics ddplab validate stores (and step metrics it may add), in display order, with unit and scale.
struct ValidationMetric {
  const char* key;    // "step_s" | "comm_s" | "busbw_gbs" | "compute_s" | "exposed_comm_s" | "optimizer_s"
  const char* title;  // "Step time"
  const char* unit;   // "ms" | "GB/s"
  double scale;       // stored value x scale = displayed value
};
const std::vector<ValidationMetric>& validation_metrics();
const ValidationMetric* find_validation_metric(const std::string& key);  // nullptr if unknown

// One row per comparison of the rows given (one batch, one metric). The view hides Kind and Metric (the
// id column reads "run #3" / "bench #1") and Size when no row has one.
class ValidationTableModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Kind, Ref, Label, World, Size, Metric, Measured, Predicted, ErrorPct, ColumnCount };
  static constexpr int SortRole = Qt::UserRole;  // raw numbers (values in display units, error in %)

  explicit ValidationTableModel(QObject* parent = nullptr);
  void setRows(std::vector<ValidationRow> rows);
  const std::vector<ValidationRow>& rows() const { return rows_; }

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  std::vector<ValidationRow> rows_;
};

// Predicted vs measured of one metric: a QScatterSeries per label (named after it, "run"/"bench"
// prefixed when both kinds are shown), points (measured, predicted) in display units; a QLineSeries
// "y = x" and a "±10%" band (two QLineSeries, the second without a legend marker). Both axes share one
// range, zoomed on the points.
class ValidationChartView : public QChartView {
  Q_OBJECT
 public:
  explicit ValidationChartView(QWidget* parent = nullptr);
  void plot(const std::vector<ValidationRow>& rows, const ValidationMetric& metric);
  bool logScale() const { return log_; }
  void setColors(const RunColors* colors) { colors_ = colors; }  // strategies in their colours elsewhere

 private:
  bool log_ = false;
  const RunColors* colors_ = nullptr;
};

class ValidationView : public View {
  Q_OBJECT
 public:
  explicit ValidationView(QWidget* parent = nullptr);
  QString title() const override { return tr("Validation"); }
  // Shows the snapshot's validations (the runs shown do not narrow them: each row names its own run).
  void setContext(const ViewContext& context) override;
  QList<QChartView*> chartViews() const override;

  // Shows the store's validations: the newest invocation, its first metric (step time if present).
  void setValidations(const std::vector<ValidationRow>& rows);

  // Widgets and state, for tests and the screenshot mode.
  bool isEmptyState() const;
  QLabel* emptyLabel() const { return empty_; }
  QComboBox* batchCombo() const { return batch_; }    // item i = batches()[size - 1 - i] (newest first)
  QComboBox* metricCombo() const { return metric_; }  // item data: the metric key
  QLabel* summaryLabel() const { return summary_; }
  ValidationChartView* chartView() const { return chart_; }
  ValidationTableModel* tableModel() const { return model_; }
  QTableView* table() const { return table_; }
  const std::vector<ValidationBatch>& batches() const { return batches_; }
  const ValidationBatch* currentBatch() const;
  QString currentMetric() const;  // "" when there is none

  bool setCurrentMetric(const QString& key);  // false if the current batch has no such metric

 private slots:
  void batchChanged();
  void refresh();

 private:
  std::vector<ValidationBatch> batches_;
  std::uint64_t generation_ = 0;
  const RunColors* colors_ = nullptr;
  GroupBy group_ = GroupBy::Run;
  QStackedWidget* stack_ = nullptr;
  QLabel* empty_ = nullptr;
  QComboBox* batch_ = nullptr;
  QComboBox* metric_ = nullptr;
  QLabel* summary_ = nullptr;
  ValidationChartView* chart_ = nullptr;
  ValidationTableModel* model_ = nullptr;
  QSortFilterProxyModel* proxy_ = nullptr;
  QTableView* table_ = nullptr;
};

}  // namespace ddplab::gui
