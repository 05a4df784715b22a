// RunsTableModel: see runs_model.hpp.
#include "ddplab/gui/runs_model.hpp"

#include <QBrush>
#include <QColor>
#include <QString>
#include <cmath>

namespace ddplab::gui {

namespace {
QString qs(const std::string& s) { return QString::fromStdString(s); }
}  // namespace

RunsTableModel::RunsTableModel(QObject* parent) : QAbstractTableModel(parent) {}

void RunsTableModel::setSnapshot(StoreSnapshot snapshot) {
  beginResetModel();
  snapshot_ = std::move(snapshot);
  endResetModel();
}

const RunRecord* RunsTableModel::recordAt(int row) const {
  if (row < 0 || row >= static_cast<int>(snapshot_.runs.size())) return nullptr;
  return &snapshot_.runs[static_cast<std::size_t>(row)];
}

int RunsTableModel::rowCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : static_cast<int>(snapshot_.runs.size());
}

int RunsTableModel::columnCount(const QModelIndex& parent) const { return parent.isValid() ? 0 : ColumnCount; }

QVariant RunsTableModel::data(const QModelIndex& index, int role) const {
  const RunRecord* rec = index.isValid() ? recordAt(index.row()) : nullptr;
  if (!rec) return {};
  const RunSummary& s = rec->summary;
  const RunInfo& info = s.run.info;
  if (role == RunIdRole) return QVariant::fromValue<qlonglong>(s.run.id);

  if (role == Qt::DisplayRole || role == SortRole) {
    const bool sort = role == SortRole;
    switch (index.column()) {
      case Id: return QVariant::fromValue<qlonglong>(s.run.id);
      case Scenario: return qs(info.scenario);
      case Strategy: return qs(info.strategy);
      case Source: return qs(info.source);
      case Backend: return qs(info.backend);
      case World: return info.world_size;
      case Status: return qs(s.run.status);
      case SamplesPerS:
        if (sort) return s.samples_per_s;
        return s.samples_per_s > 0 ? QString::number(s.samples_per_s, 'f', 1) : QString();
      case FinalAccuracy:
        if (!s.final_accuracy || !std::isfinite(*s.final_accuracy)) return sort ? QVariant(-1.0) : QVariant(QString());
        if (sort) return *s.final_accuracy;
        return QString::number(*s.final_accuracy, 'f', 4);
      default: return {};
    }
  }
  if (role == Qt::TextAlignmentRole) {
    switch (index.column()) {
      case Id: case World: case SamplesPerS: case FinalAccuracy:
        return QVariant::fromValue(Qt::AlignRight | Qt::AlignVCenter);
      default: return QVariant::fromValue(Qt::AlignLeft | Qt::AlignVCenter);
    }
  }
  if (role == Qt::ForegroundRole && index.column() == Status && s.run.status == "failed")
    return QBrush(QColor(0xc0, 0x30, 0x30));
  if (role == Qt::ToolTipRole) {
    return QStringLiteral("run #%1, %2 steps, started %3, ddplab %4")
        .arg(s.run.id).arg(s.steps).arg(qs(s.run.started_at), qs(s.run.version));
  }
  return {};
}

QVariant RunsTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (orientation != Qt::Horizontal || role != Qt::DisplayRole) return QAbstractTableModel::headerData(section, orientation, role);
  switch (section) {
    case Id: return tr("id");
    case Scenario: return tr("scenario");
    case Strategy: return tr("strategy");
    case Source: return tr("source");
    case Backend: return tr("backend");
    case World: return tr("world");
    case Status: return tr("status");
    case SamplesPerS: return tr("samples/s");
    case FinalAccuracy: return tr("final accuracy");
    default: return {};
  }
}

}  // namespace ddplab::gui
