// See view.hpp.
#include "ddplab/gui/view.hpp"

#include "ddplab/gui/charts.hpp"

#include <QShowEvent>

namespace ddplab::gui {

const std::vector<std::pair<GroupBy, QString>>& group_names() {
  static const std::vector<std::pair<GroupBy, QString>> names{
      {GroupBy::Run, QObject::tr("run")},           {GroupBy::Scenario, QObject::tr("scenario")},
      {GroupBy::Strategy, QObject::tr("strategy")}, {GroupBy::World, QObject::tr("world size")},
      {GroupBy::Source, QObject::tr("source")},     {GroupBy::Backend, QObject::tr("backend")}};
  return names;
}

std::string group_key(const RunRecord& run, GroupBy by) {
  const RunInfo& i = run.info();
  switch (by) {
    case GroupBy::Run:
      return std::string("#").append(std::to_string(run.id()));
    case GroupBy::Scenario:
      return i.scenario;
    case GroupBy::Strategy:
      return i.strategy;
    case GroupBy::World:
      return std::to_string(i.world_size).append(i.world_size == 1 ? " rank" : " ranks");
    case GroupBy::Source:
      return to_string(i.source);
    case GroupBy::Backend:
      return i.backend;
  }
  return {};
}

void RunColors::assign(const std::vector<RunRecord>& runs, GroupBy by) {
  by_ = by;
  slot_.clear();
  strategy_slot_.clear();
  for (const RunRecord& r : runs) {
    slot_.emplace(group_key(r, by), slot_.size());
    strategy_slot_.emplace(r.info().strategy, strategy_slot_.size());
  }
}

QColor RunColors::color(const RunRecord& run) const {
  const auto it = slot_.find(group_key(run, by_));
  return paletteColor(it == slot_.end() ? 0 : it->second);
}

QString RunColors::label(const RunRecord& run) const {
  if (by_ != GroupBy::Run) return QString::fromStdString(group_key(run, by_));
  const RunInfo& i = run.info();
  return QStringLiteral("#%1 %2 (%3 %4)")
      .arg(run.id())
      .arg(QString::fromStdString(i.strategy))
      .arg(i.world_size)
      .arg(i.world_size == 1 ? QStringLiteral("rank") : QStringLiteral("ranks"));
}

QColor RunColors::strategyColor(const std::string& strategy) const {
  const auto& table = by_ == GroupBy::Strategy ? slot_ : strategy_slot_;
  const auto it = table.find(strategy);
  return paletteColor(it == table.end() ? 0 : it->second);
}

QWidget* View::exportWidget() {
  const auto views = chartViews();
  if (views.isEmpty()) return nullptr;
  return views.size() == 1 ? static_cast<QWidget*>(views.front()) : this;
}

QString View::csv() const { return chartViews().isEmpty() ? QString() : chartsCsv(charts()); }

bool View::deferDraw() {
  stale_ = window()->isVisible() && !isVisible();
  return stale_;
}

void View::showEvent(QShowEvent* e) {
  QWidget::showEvent(e);
  if (stale_) {
    stale_ = false;
    redraw();
  }
}

QList<QChart*> View::charts() const {
  QList<QChart*> out;
  for (QChartView* v : chartViews()) out.append(v->chart());
  return out;
}

}  // namespace ddplab::gui
