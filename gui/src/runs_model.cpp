// RunsTableModel: see runs_model.hpp.
#include "ddplab/gui/runs_model.hpp"

#include <QBrush>
#include <QColor>
#include <QString>
#include <cmath>

namespace ddplab::gui {

namespace {
QString qs(const std::string& s) { return QString::fromStdString(s); }

// Milliseconds for display; empty when not measured.
QString ms(double s) { return std::isfinite(s) && s > 0 ? QString::number(s * 1e3, 'f', 2) : QString(); }
}  // namespace

RunsTableModel::RunsTableModel(QObject* parent) : QAbstractTableModel(parent) {}

void RunsTableModel::setSnapshot(StoreSnapshot snapshot, bool keepHidden) {
  beginResetModel();
  snapshot_ = std::move(snapshot);
  if (!keepHidden) hidden_.clear();  // ids of another store are other runs
  endResetModel();
}

void RunsTableModel::setColors(const RunColors* colors) {
  colors_ = colors;
  if (rowCount() > 0) emit dataChanged(index(0, Id), index(rowCount() - 1, Id), {Qt::DecorationRole});
}

const RunRecord* RunsTableModel::recordAt(int row) const {
  if (row < 0 || row >= static_cast<int>(snapshot_.runs.size())) return nullptr;
  return &snapshot_.runs[static_cast<std::size_t>(row)];
}

void RunsTableModel::setShown(const std::set<std::int64_t>& ids, bool shown) {
  for (std::int64_t id : ids) shown ? (void)hidden_.erase(id) : (void)hidden_.insert(id);
  if (rowCount() > 0) emit dataChanged(index(0, Id), index(rowCount() - 1, Id), {Qt::CheckStateRole});
  emit shownChanged();
}

void RunsTableModel::setAllShown(bool shown) {
  std::set<std::int64_t> ids;
  for (const RunRecord& r : snapshot_.runs) ids.insert(r.id());
  setShown(ids, shown);
}

int RunsTableModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(snapshot_.runs.size());
}

int RunsTableModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

Qt::ItemFlags RunsTableModel::flags(const QModelIndex& index) const {
  Qt::ItemFlags f = QAbstractTableModel::flags(index);
  if (index.column() == Id) f |= Qt::ItemIsUserCheckable;
  return f;
}

bool RunsTableModel::setData(const QModelIndex& index, const QVariant& value, int role) {
  const RunRecord* rec = index.isValid() ? recordAt(index.row()) : nullptr;
  if (!rec || index.column() != Id || role != Qt::CheckStateRole) return false;
  setShown({rec->id()}, value.toInt() == Qt::Checked);
  return true;
}

QVariant RunsTableModel::data(const QModelIndex& index, int role) const {
  const RunRecord* rec = index.isValid() ? recordAt(index.row()) : nullptr;
  if (!rec) return {};
  const RunSummary& s = rec->summary;
  const RunInfo& info = s.run.info;
  if (role == RunIdRole) return QVariant::fromValue<qlonglong>(s.run.id);
  if (role == Qt::CheckStateRole && index.column() == Id) return isShown(s.run.id) ? Qt::Checked : Qt::Unchecked;
  if (role == Qt::DecorationRole && index.column() == Id && colors_) return colors_->color(*rec);

  if (role == Qt::DisplayRole || role == SortRole) {
    const bool sort = role == SortRole;
    auto seconds = [&](double v) -> QVariant { return sort ? QVariant(v) : QVariant(ms(v)); };
    auto optional = [&](const std::optional<double>& v, int digits) -> QVariant {
      if (!v || !std::isfinite(*v)) return sort ? QVariant(-1.0) : QVariant(QString());
      return sort ? QVariant(*v) : QVariant(QString::number(*v, 'f', digits));
    };
    switch (index.column()) {
      case Id:
        return QVariant::fromValue<qlonglong>(s.run.id);
      case Scenario:
        return qs(info.scenario);
      case Strategy:
        return qs(info.strategy);
      case Source:
        return qs(to_string(info.source));
      case Backend:
        return qs(info.backend);
      case World:
        return info.world_size;
      case Status:
        return qs(to_string(s.run.status));
      case Steps:
        return QVariant::fromValue<qlonglong>(s.skipped + s.steps);
      case StepMs:
        return seconds(s.step_s);
      case ComputeMs:
        return seconds(s.compute_s);
      case CommMs:
        return seconds(s.comm_s);
      case ExposedMs:
        return seconds(s.exposed_comm_s);
      case SamplesPerS:
        if (sort) return s.samples_per_s;
        return s.samples_per_s > 0 ? QString::number(s.samples_per_s, 'f', 1) : QString();
      case FinalLoss:
        return optional(s.final_loss, 4);
      case FinalAccuracy:
        return optional(s.final_accuracy, 4);
      default:
        return {};
    }
  }
  if (role == Qt::TextAlignmentRole) {
    switch (index.column()) {
      case Scenario:
      case Strategy:
      case Source:
      case Backend:
      case Status:
        return QVariant::fromValue(Qt::AlignLeft | Qt::AlignVCenter);
      default:
        return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
    }
  }
  if (role == Qt::ForegroundRole && !rec->finished()) {
    if (index.column() == Status && (s.run.status == RunStatus::Failed || s.run.status == RunStatus::Abandoned))
      return QBrush(QColor(0xc0, 0x30, 0x30));
    return QBrush(QColor(0x90, 0x90, 0x90));  // partial figures: greyed
  }
  if (role == Qt::ToolTipRole) {
    QString tip = QStringLiteral("run #%1 (%2), %3 steps (%4 averaged), started %5, ddplab %6")
                      .arg(s.run.id)
                      .arg(qs(rec->model()))
                      .arg(s.skipped + s.steps)
                      .arg(s.steps)
                      .arg(qs(s.run.started_at), qs(s.run.version));
    if (s.run.status == RunStatus::Running)
      tip += tr("\nstill running (or run by a process on another machine): figures so far");
    if (s.run.status == RunStatus::Abandoned)
      tip +=
          tr("\nabandoned: the process writing it died without finishing it (SIGKILL, a crash, a reboot); figures up "
             "to its last flush");
    if (s.run.status == RunStatus::Failed) tip += tr("\nfailed: figures up to the failure");
    if (s.run.status == RunStatus::Interrupted)
      tip += tr("\ninterrupted (SIGINT or SIGTERM to its launcher): figures up to the stop");
    return tip;
  }
  return {};
}

QVariant RunsTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal) return QAbstractTableModel::headerData(section, orientation, role);
  if (role == Qt::ToolTipRole) {
    switch (section) {
      case Id:
        return tr("run id; the check box shows the run in the charts or hides it");
      case StepMs:
        return tr("mean step time of the slowest rank over the steady steps (ms)");
      case ComputeMs:
      case CommMs:
      case ExposedMs:
        return tr("mean per rank and step over the steady steps (ms); exposed comm is what compute did not hide");
      case SamplesPerS:
        return tr("samples over the steady steps / their slowest-rank time");
      default:
        return {};
    }
  }
  if (role != Qt::DisplayRole) return {};
  switch (section) {
    case Id:
      return tr("id");
    case Scenario:
      return tr("scenario");
    case Strategy:
      return tr("strategy");
    case Source:
      return tr("source");
    case Backend:
      return tr("backend");
    case World:
      return tr("world");
    case Status:
      return tr("status");
    case Steps:
      return tr("steps");
    case StepMs:
      return tr("step ms");
    case ComputeMs:
      return tr("compute ms");
    case CommMs:
      return tr("comm ms");
    case ExposedMs:
      return tr("exposed ms");
    case SamplesPerS:
      return tr("samples/s");
    case FinalLoss:
      return tr("final loss");
    case FinalAccuracy:
      return tr("final accuracy");
    default:
      return {};
  }
}

}  // namespace ddplab::gui
