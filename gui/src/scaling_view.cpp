// ScalingView: see scaling_view.hpp.
#include "ddplab/gui/scaling_view.hpp"

#include <QCheckBox>
#include <QGridLayout>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QScatterSeries>
#include <QScrollArea>
#include <QValueAxis>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <tuple>

#include <nlohmann/json.hpp>

namespace ddplab::gui {

std::vector<ScalingPanel> scaling_panels(const std::vector<const RunRecord*>& runs) {
  // (scenario, model) -> (strategy, batch, simulated) -> line; std::map keeps panels and legends in a stable order.
  std::map<std::pair<std::string, std::string>, std::map<std::tuple<std::string, int, bool>, ScalingLine>> by;
  for (const RunRecord* r : runs) {
    if (!r || !r->finished() || !(r->measured() || r->simulated())) continue;
    const RunSummary& s = r->summary;
    if (!(s.samples_per_s > 0) || s.run.info.world_size < 1) continue;
    ScalingLine& line =
        by[{s.run.info.scenario, r->model()}][{s.run.info.strategy, s.run.info.batch_size, r->simulated()}];
    line.strategy = s.run.info.strategy;
    line.batch = s.run.info.batch_size;
    line.simulated = r->simulated();
    const ScalingPoint p{s.run.info.world_size, s.samples_per_s, r->id()};
    if (line.simulated) {
      // Newest simulation per world size: runs come oldest first, so a later one replaces an earlier one.
      auto it = std::find_if(line.points.begin(), line.points.end(),
                             [&](const ScalingPoint& q) { return q.world == p.world; });
      if (it != line.points.end())
        *it = p;
      else
        line.points.push_back(p);
      const auto cfg = nlohmann::json::parse(s.run.info.config_json, nullptr, false);
      if (cfg.is_object() && cfg.contains("simulation") && cfg["simulation"].is_object()) {
        line.compute_origin = cfg["simulation"].value("compute_origin", "");
        line.network_model = cfg["simulation"].value("network_model", "");
      }
    } else {
      line.points.push_back(p);
    }
  }
  std::vector<ScalingPanel> out;
  for (auto& [key, lines] : by) {
    ScalingPanel panel{key.first, key.second, {}, false};
    for (auto& [k, line] : lines) {
      panel.batches_differ = panel.batches_differ || line.batch != lines.begin()->second.batch;
      std::stable_sort(line.points.begin(), line.points.end(),
                       [](const ScalingPoint& a, const ScalingPoint& b) { return a.world < b.world; });
      std::map<int, std::pair<double, int>> mean;  // world -> (sum, count)
      for (const ScalingPoint& p : line.points) mean[p.world].first += p.samples_per_s, mean[p.world].second += 1;
      const int n0 = mean.begin()->first;
      const double base = mean.begin()->second.first / mean.begin()->second.second;
      for (const auto& [n, m] : mean) line.efficiency.emplace_back(n, (m.first / m.second) / (base * n / n0));
      panel.lines.push_back(std::move(line));
    }
    out.push_back(std::move(panel));
  }
  return out;
}

ScalingView::ScalingView(QWidget* parent) : View(parent) {
  logY_ = new QCheckBox(tr("log y (samples/s)"));
  logY_->setChecked(true);  // simulated lines at scale span decades above the measured points
  auto* bar = new QHBoxLayout;
  bar->addWidget(logY_);
  bar->addStretch(1);
  scroll_ = new QScrollArea;
  scroll_->setWidgetResizable(true);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(bar);
  layout->addWidget(scroll_, 1);
  connect(logY_, &QCheckBox::toggled, this, &ScalingView::refresh);
  refresh();
}

void ScalingView::setContext(const ViewContext& context) {
  ctx_ = context;
  if (!deferDraw()) refresh();
}

void ScalingView::setLogY(bool on) { logY_->setChecked(on); }

QWidget* ScalingView::exportWidget() { return panelsWidget_ ? panelsWidget_ : this; }

void ScalingView::refresh() {
  panels_ = scaling_panels(ctx_.runs);
  views_.clear();
  panelsWidget_ = new QWidget;
  auto* grid = new QGridLayout(panelsWidget_);
  grid->setContentsMargins(0, 0, 0, 0);
  if (panels_.empty()) {
    auto* empty =
        new QLabel(tr("No completed runs with a throughput among the runs shown.\n"
                      "`ddplab run` measures one; `ddplab simulate --world 2,4,...,256` predicts a line."));
    empty->setAlignment(Qt::AlignCenter);
    grid->addWidget(empty, 0, 0);
  }
  const bool logY = logY_->isChecked();
  int row = 0;
  for (const ScalingPanel& panel : panels_) {
    const QString name =
        QString::fromStdString(panel.scenario) + QStringLiteral(" (") + QString::fromStdString(panel.model) + ')';
    auto* tput = new ChartView(tr("%1: samples/s").arg(name));
    auto* eff = new ChartView(tr("%1: efficiency").arg(name));
    eff->setToolTip(tr("samples/s at n / (samples/s at n0 x n / n0), n0 the line's smallest world size"));
    // Tall enough for every legend entry (Qt clips a legend that does not fit); the efficiency chart shares
    // the colours and names of its neighbour, so it goes without a legend and gives its width to the plot.
    const int entries = static_cast<int>(panel.lines.size());
    for (ChartView* v : {tput, eff}) v->setMinimumHeight(std::max(330, 120 + 21 * entries));
    eff->chart()->legend()->hide();
    double wmin = std::numeric_limits<double>::infinity(), wmax = 0, ymin = wmin, ymax = 0, emax = 1;
    for (const ScalingLine& l : panel.lines) {
      for (const ScalingPoint& p : l.points) {
        wmin = std::min<double>(wmin, p.world), wmax = std::max<double>(wmax, p.world);
        ymin = std::min(ymin, p.samples_per_s), ymax = std::max(ymax, p.samples_per_s);
      }
      for (const auto& [n, e] : l.efficiency) emax = std::max(emax, e);
    }
    QChart* tc = tput->chart();
    QChart* ec = eff->chart();
    QAbstractAxis* tx = logAxis(tr("world size (ranks, log2)"), wmin / 1.2, wmax * 1.2, 2);
    QAbstractAxis* ty = logY ? static_cast<QAbstractAxis*>(logAxis(tr("samples/s (log)"), ymin, ymax))
                             : static_cast<QAbstractAxis*>(valueAxis(tr("samples/s"), 0, ymax, true));
    QAbstractAxis* ex = logAxis(tr("world size (ranks, log2)"), wmin / 1.2, wmax * 1.2, 2);
    QAbstractAxis* ey = valueAxis(tr("efficiency"), 0, emax, true);
    tc->addAxis(tx, Qt::AlignBottom), tc->addAxis(ty, Qt::AlignLeft);
    ec->addAxis(ex, Qt::AlignBottom), ec->addAxis(ey, Qt::AlignLeft);
    for (const ScalingLine& l : panel.lines) {
      const QColor col = ctx_.colors ? ctx_.colors->strategyColor(l.strategy) : paletteColor(0);
      const QString strategy = QString::fromStdString(l.strategy);
      const QString who = tr("%1, batch %2 per rank").arg(strategy).arg(l.batch);
      const QString tip = l.simulated
                              ? tr("%1, simulated\ncompute: %2\nnetwork model: %3")
                                    .arg(who, QString::fromStdString(l.compute_origin.empty() ? "?" : l.compute_origin),
                                         QString::fromStdString(l.network_model.empty() ? "?" : l.network_model))
                              : tr("%1, measured").arg(who);
      auto style = [&](QXYSeries* s) {
        if (l.simulated) {
          QPen pen(col);
          pen.setWidthF(2.0);
          pen.setStyle(Qt::DashLine);
          s->setPen(pen);
          s->setPointsVisible(true);
        } else if (auto* sc = qobject_cast<QScatterSeries*>(s)) {
          sc->setMarkerShape(QScatterSeries::MarkerShapeCircle);
          sc->setMarkerSize(11);
          sc->setColor(col);
          sc->setBorderColor(col.darker(150));
        }
      };
      QXYSeries* t =
          l.simulated ? static_cast<QXYSeries*>(new QLineSeries) : static_cast<QXYSeries*>(new QScatterSeries);
      for (const ScalingPoint& p : l.points) t->append(p.world, p.samples_per_s);
      t->setName(strategy + (panel.batches_differ ? tr(" b%1").arg(l.batch) : QString()) +
                 (l.simulated ? tr(" simulated") : tr(" measured")));
      style(t);
      pointTooltips(t, [tip](const QPointF& p) {
        return tip + QObject::tr("\n%1 ranks: %2 samples/s").arg(p.x()).arg(p.y(), 0, 'f', 1);
      });
      tc->addSeries(t);
      t->attachAxis(tx), t->attachAxis(ty);
      QXYSeries* e =
          l.simulated ? static_cast<QXYSeries*>(new QLineSeries) : static_cast<QXYSeries*>(new QScatterSeries);
      for (const auto& [n, v] : l.efficiency) e->append(n, v);
      e->setName(t->name());
      style(e);
      pointTooltips(e, [tip](const QPointF& p) {
        return tip + QObject::tr("\n%1 ranks: efficiency %2").arg(p.x()).arg(p.y(), 0, 'f', 3);
      });
      ec->addSeries(e);
      e->attachAxis(ex), e->attachAxis(ey);
    }
    elideLegend(tc);
    elideLegend(ec);
    grid->addWidget(tput, row, 0);
    grid->addWidget(eff, row, 1);
    views_ << tput << eff;
    ++row;
  }
  grid->setColumnStretch(0, 3);
  grid->setColumnStretch(1, 2);
  grid->setRowStretch(row, 1);
  scroll_->setWidget(panelsWidget_);  // deletes the previous panels
}

}  // namespace ddplab::gui
