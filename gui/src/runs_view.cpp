// RunsView: see runs_view.hpp.
#include "ddplab/gui/runs_view.hpp"

#include <QCheckBox>
#include <QComboBox>
#include <QHBoxLayout>
#include <QHeaderView>
#include <QItemSelectionModel>
#include <QLabel>
#include <QLineEdit>
#include <QPushButton>
#include <QRegularExpression>
#include <QTableView>
#include <QVBoxLayout>
#include <algorithm>
#include <set>

#include "ddplab/gui/runs_model.hpp"

namespace ddplab::gui {

RunsView::RunsView(QWidget* parent) : View(parent) {
  model_ = new RunsTableModel(this);
  proxy_ = new QSortFilterProxyModel(this);
  proxy_->setSourceModel(model_);
  proxy_->setSortRole(RunsTableModel::SortRole);
  proxy_->setFilterKeyColumn(-1);  // any column
  proxy_->setFilterCaseSensitivity(Qt::CaseInsensitive);

  filter_ = new QLineEdit;
  filter_->setPlaceholderText(tr("Filter runs (scenario, strategy, backend, status, ...)"));
  filter_->setClearButtonEnabled(true);
  regex_ = new QCheckBox(tr("regex"));
  regex_->setToolTip(tr("Match the filter as a regular expression, e.g. ^(ring|tree)$"));
  group_ = new QComboBox;
  for (const auto& [by, name] : group_names()) group_->addItem(name, static_cast<int>(by));
  group_->setToolTip(tr("One colour and one legend entry per group, in every chart"));
  auto* showAll = new QPushButton(tr("Show all"));
  auto* hideAll = new QPushButton(tr("Hide all"));
  delete_ = new QPushButton(tr("Delete..."));
  delete_->setToolTip(tr("Delete the selected runs from the store (Del); asks first"));
  delete_->setEnabled(false);
  count_ = new QLabel;

  auto* bar = new QHBoxLayout;
  bar->addWidget(filter_, 1);
  bar->addWidget(regex_);
  bar->addSpacing(12);
  bar->addWidget(new QLabel(tr("group by")));
  bar->addWidget(group_);
  bar->addSpacing(12);
  bar->addWidget(showAll);
  bar->addWidget(hideAll);
  bar->addWidget(delete_);

  table_ = new QTableView;
  table_->setModel(proxy_);
  table_->setSortingEnabled(true);
  table_->sortByColumn(RunsTableModel::Id, Qt::AscendingOrder);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::ExtendedSelection);
  table_->verticalHeader()->setVisible(false);
  table_->horizontalHeader()->setSectionResizeMode(QHeaderView::ResizeToContents);
  table_->horizontalHeader()->setStretchLastSection(false);
  table_->setAlternatingRowColors(true);

  auto* layout = new QVBoxLayout(this);
  layout->addLayout(bar);
  layout->addWidget(table_, 1);
  layout->addWidget(count_);

  connect(filter_, &QLineEdit::textChanged, this, &RunsView::applyFilter);
  connect(regex_, &QCheckBox::toggled, this, &RunsView::applyFilter);
  connect(group_, &QComboBox::currentIndexChanged, this, &RunsView::changed);
  connect(showAll, &QPushButton::clicked, this, [this] { model_->setAllShown(true); });
  connect(hideAll, &QPushButton::clicked, this, [this] { model_->setAllShown(false); });
  connect(model_, &RunsTableModel::shownChanged, this, [this] {
    updateCount();
    emit changed();
  });
  connect(table_->selectionModel(), &QItemSelectionModel::selectionChanged, this, [this] {
    delete_->setEnabled(table_->selectionModel()->hasSelection());
    emit changed();
  });
  connect(delete_, &QPushButton::clicked, this, [this] {
    const std::vector<std::int64_t> ids = selectedIds();
    if (!ids.empty()) emit deleteRequested(ids);
  });
  updateCount();
}

void RunsView::setSnapshot(StoreSnapshot snapshot, bool sameStore) {
  std::vector<std::int64_t> selected;
  for (const RunRecord* r : selectedRuns()) selected.push_back(r->id());
  {
    const QSignalBlocker block(table_->selectionModel());
    model_->setSnapshot(std::move(snapshot), sameStore);
    table_->resizeColumnsToContents();
  }
  selectRuns(selected);
  updateCount();
}

const StoreSnapshot& RunsView::snapshot() const { return model_->snapshot(); }

void RunsView::selectRuns(const std::vector<std::int64_t>& ids) {
  const std::set<std::int64_t> want(ids.begin(), ids.end());
  QItemSelection sel;
  for (int row = 0; row < proxy_->rowCount(); ++row) {
    const QModelIndex i = proxy_->index(row, 0);
    if (want.count(proxy_->data(i, RunsTableModel::RunIdRole).toLongLong()))
      sel.select(i, proxy_->index(row, proxy_->columnCount() - 1));
  }
  table_->selectionModel()->select(sel, QItemSelectionModel::ClearAndSelect);
}

std::vector<const RunRecord*> RunsView::shownRuns() const {
  std::vector<const RunRecord*> out;
  for (int row = 0; row < proxy_->rowCount(); ++row) {
    const RunRecord* r = model_->recordAt(proxy_->mapToSource(proxy_->index(row, 0)).row());
    if (r && model_->isShown(r->id())) out.push_back(r);
  }
  std::sort(out.begin(), out.end(), [](const RunRecord* a, const RunRecord* b) { return a->id() < b->id(); });
  return out;
}

std::vector<const RunRecord*> RunsView::selectedRuns() const {
  std::vector<const RunRecord*> out;
  for (const QModelIndex& i : table_->selectionModel()->selectedRows()) {
    const RunRecord* r = model_->recordAt(proxy_->mapToSource(i).row());
    if (r && model_->isShown(r->id())) out.push_back(r);
  }
  std::sort(out.begin(), out.end(), [](const RunRecord* a, const RunRecord* b) { return a->id() < b->id(); });
  return out;
}

std::vector<std::int64_t> RunsView::selectedIds() const {
  std::vector<std::int64_t> out;
  for (const QModelIndex& i : table_->selectionModel()->selectedRows())
    if (const RunRecord* r = model_->recordAt(proxy_->mapToSource(i).row())) out.push_back(r->id());
  std::sort(out.begin(), out.end());
  return out;
}

GroupBy RunsView::groupBy() const { return static_cast<GroupBy>(group_->currentData().toInt()); }

void RunsView::setGroupBy(GroupBy by) { group_->setCurrentIndex(std::max(0, group_->findData(static_cast<int>(by)))); }

bool RunsView::setFilter(const QString& text, bool regex) {
  const QSignalBlocker a(filter_), b(regex_);
  filter_->setText(text);
  regex_->setChecked(regex);
  applyFilter();
  return filterError_.isEmpty();
}

void RunsView::applyFilter() {
  const QString text = filter_->text();
  QRegularExpression re(regex_->isChecked() ? text : QRegularExpression::escape(text),
                        QRegularExpression::CaseInsensitiveOption);
  if (!re.isValid()) {
    filterError_ = tr("invalid regular expression at %1: %2").arg(re.patternErrorOffset()).arg(re.errorString());
    filter_->setStyleSheet(QStringLiteral("QLineEdit { background: #fbe3e3; }"));
    filter_->setToolTip(filterError_);
    return;
  }
  filterError_.clear();
  filter_->setStyleSheet({});
  filter_->setToolTip({});
  proxy_->setFilterRegularExpression(re);
  updateCount();
  emit changed();
}

void RunsView::updateCount() {
  const std::size_t shown = shownRuns().size();
  count_->setText(tr("%1 of %2 runs in the charts (filter and check boxes); select rows for the per-run views")
                      .arg(shown)
                      .arg(model_->rowCount()));
}

}  // namespace ddplab::gui
