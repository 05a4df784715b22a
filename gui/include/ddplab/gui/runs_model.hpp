// Table model over the runs of a StoreSnapshot: one row per run, a check box per run (shown in the charts
// or not). DisplayRole gives formatted text (what the filter matches); SortRole gives raw numbers so that
// sorting by samples/s or world size is numeric, not lexical. Failed and unfinished runs are greyed.
#pragma once
#include <QAbstractTableModel>
#include <cstdint>
#include <set>

#include "ddplab/gui/run_data.hpp"
#include "ddplab/gui/view.hpp"

namespace ddplab::gui {

class RunsTableModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column {
    Id,
    Scenario,
    Strategy,
    Source,
    Backend,
    World,
    Status,
    Steps,
    StepMs,
    ComputeMs,
    CommMs,
    ExposedMs,
    SamplesPerS,
    FinalLoss,
    FinalAccuracy,
    ColumnCount
  };
  static constexpr int SortRole = Qt::UserRole;       // raw value for sorting
  static constexpr int RunIdRole = Qt::UserRole + 1;  // run id, whatever the column

  explicit RunsTableModel(QObject* parent = nullptr);

  void setSnapshot(StoreSnapshot snapshot, bool keepHidden = true);  // resets the model
  // The charts' colours, shown as a swatch beside each run's id (nullptr: none).
  void setColors(const RunColors* colors);
  const StoreSnapshot& snapshot() const { return snapshot_; }
  const RunRecord* recordAt(int row) const;

  // Show/hide: the check box of column Id. Hidden runs are left out of every chart.
  bool isShown(std::int64_t id) const { return !hidden_.count(id); }
  void setShown(const std::set<std::int64_t>& ids, bool shown);
  void setAllShown(bool shown);

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  bool setData(const QModelIndex& index, const QVariant& value, int role = Qt::EditRole) override;
  Qt::ItemFlags flags(const QModelIndex& index) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 signals:
  void shownChanged();

 private:
  StoreSnapshot snapshot_;
  std::set<std::int64_t> hidden_;
  const RunColors* colors_ = nullptr;
};

}  // namespace ddplab::gui
