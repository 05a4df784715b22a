// Table model over the runs of a StoreSnapshot: one row per run.
// DisplayRole gives formatted text (what the filter matches); SortRole gives raw numbers so
// that sorting by samples/s or world size is numeric, not lexical.
#pragma once
#include <QAbstractTableModel>
#include <cstdint>

#include "ddplab/gui/run_data.hpp"

namespace ddplab::gui {

class RunsTableModel : public QAbstractTableModel {
  Q_OBJECT
 public:
  enum Column { Id, Scenario, Strategy, Source, Backend, World, Status, SamplesPerS, FinalAccuracy, ColumnCount };
  static constexpr int SortRole = Qt::UserRole;     // raw value for sorting
  static constexpr int RunIdRole = Qt::UserRole + 1;  // run id, whatever the column

  explicit RunsTableModel(QObject* parent = nullptr);

  void setSnapshot(StoreSnapshot snapshot);  // resets the model
  const StoreSnapshot& snapshot() const { return snapshot_; }
  const RunRecord* recordAt(int row) const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role = Qt::DisplayRole) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role = Qt::DisplayRole) const override;

 private:
  StoreSnapshot snapshot_;
};

}  // namespace ddplab::gui
