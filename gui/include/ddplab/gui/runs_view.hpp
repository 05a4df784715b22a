// The "Runs" view: every run of the store in a sortable table, and the choice of what the other views show.
//   - filter by text (any column) or by regular expression; an invalid expression is marked, not applied;
//   - group by run, scenario, strategy, world size, source or backend: one colour and one legend entry
//     per group in every chart;
//   - a check box per run to show or hide it in the charts (Show all / Hide all);
//   - failed and unfinished runs greyed, with the reason in the tooltip;
//   - Delete... removes the selected runs from the store after a confirmation (the window does the write).
// The other views draw the runs that pass the filter and are checked; views about one run (breakdown per
// rank) take the selected one.
#pragma once
#include <QSortFilterProxyModel>
#include <cstdint>
#include <vector>

#include "ddplab/gui/view.hpp"

class QCheckBox;
class QComboBox;
class QLabel;
class QLineEdit;
class QPushButton;
class QTableView;

namespace ddplab::gui {

class RunsTableModel;

class RunsView : public View {
  Q_OBJECT
 public:
  explicit RunsView(QWidget* parent = nullptr);
  QString title() const override { return tr("Runs"); }
  void setContext(const ViewContext&) override {}
  QList<QChartView*> chartViews() const override { return {}; }  // a table: nothing to export

  // Keeps the filter and the selection (by id); hidden runs stay hidden when it is the same store.
  void setSnapshot(StoreSnapshot snapshot, bool sameStore = true);
  const StoreSnapshot& snapshot() const;

  // Runs that pass the filter and are shown, oldest first; of those, the selected ones.
  std::vector<const RunRecord*> shownRuns() const;
  std::vector<const RunRecord*> selectedRuns() const;
  std::vector<std::int64_t> selectedIds() const;  // every selected row, hidden or not (what Delete takes)
  GroupBy groupBy() const;
  void setGroupBy(GroupBy by);
  void selectRuns(const std::vector<std::int64_t>& ids);

  // Filter: plain text matched case-insensitively against every column, or a regular expression.
  // Returns false (and leaves the last valid filter applied) for an invalid expression.
  bool setFilter(const QString& text, bool regex);
  QString filterError() const { return filterError_; }

  RunsTableModel* model() const { return model_; }
  QSortFilterProxyModel* proxy() const { return proxy_; }
  QTableView* table() const { return table_; }
  QLineEdit* filterEdit() const { return filter_; }
  QCheckBox* regexBox() const { return regex_; }
  QComboBox* groupCombo() const { return group_; }
  QPushButton* deleteButton() const { return delete_; }

 signals:
  void changed();                                           // filter, show/hide, selection or grouping
  void deleteRequested(std::vector<std::int64_t> run_ids);  // the selected runs

 private:
  void applyFilter();
  void updateCount();

  RunsTableModel* model_ = nullptr;
  QSortFilterProxyModel* proxy_ = nullptr;
  QTableView* table_ = nullptr;
  QLineEdit* filter_ = nullptr;
  QCheckBox* regex_ = nullptr;
  QComboBox* group_ = nullptr;
  QPushButton* delete_ = nullptr;
  QLabel* count_ = nullptr;
  QString filterError_;
};

}  // namespace ddplab::gui
