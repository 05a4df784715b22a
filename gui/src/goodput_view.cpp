// GoodputView: see goodput_view.hpp.
#include "ddplab/gui/goodput_view.hpp"

#include <QComboBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLegend>
#include <QLegendMarker>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QValueAxis>
#include <QScatterSeries>
#include <QVBoxLayout>
#include <algorithm>
#include <limits>
#include <map>
#include <set>

namespace ddplab::gui {

std::vector<PredictionBatch> prediction_batches(const std::vector<PredictionRow>& rows) {
  // `predict` stores each strategy's rows as it finishes it, seconds apart: an invocation ends where the
  // scenario or the target changes, or where a (strategy, world size) repeats.
  std::vector<PredictionBatch> out;
  std::set<std::pair<std::string, int>> seen;
  for (const PredictionRow& r : rows) {
    std::pair<std::string, int> key{r.strategy, r.world_size};
    if (out.empty() || out.back().scenario != r.scenario || out.back().target != r.target_accuracy || seen.count(key)) {
      out.push_back({r.created_at, r.scenario, r.target_accuracy, {}});
      seen.clear();
    }
    seen.insert(std::move(key));
    out.back().rows.push_back(r);
  }
  return out;
}

std::vector<std::pair<int, std::size_t>> best_per_world(const PredictionBatch& batch) {
  std::map<int, std::size_t> best;
  for (std::size_t i = 0; i < batch.rows.size(); ++i) {
    const PredictionRow& r = batch.rows[i];
    auto it = best.find(r.world_size);
    if (it == best.end() || r.time_s < batch.rows[it->second].time_s) best[r.world_size] = i;
  }
  return {best.begin(), best.end()};
}

GoodputView::GoodputView(QWidget* parent) : View(parent) {
  batch_ = new QComboBox;
  batch_->setSizeAdjustPolicy(QComboBox::AdjustToContents);
  auto* bar = new QHBoxLayout;
  bar->addWidget(new QLabel(tr("prediction")));
  bar->addWidget(batch_);
  bar->addStretch(1);
  chart_ = new ChartView(tr("Time to accuracy"));
  summary_ = new QLabel;
  summary_->setWordWrap(true);
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(bar);
  layout->addWidget(chart_, 1);
  layout->addWidget(summary_);
  connect(batch_, &QComboBox::currentIndexChanged, this, &GoodputView::refresh);
  refresh();
}

void GoodputView::setContext(const ViewContext& context) {
  const bool fresh = context.generation != ctx_.generation || context.generation == 0;
  ctx_ = context;
  if (!fresh) return refresh();
  const int keep = batch_->currentIndex();
  const std::size_t before = batches_.size();
  batches_ = prediction_batches(ctx_.snapshot ? ctx_.snapshot->predictions : std::vector<PredictionRow>{});
  const QSignalBlocker block(batch_);
  batch_->clear();
  for (auto it = batches_.rbegin(); it != batches_.rend(); ++it)
    batch_->addItem(tr("%1, target %2, %3 (%4 rows)")
                        .arg(QString::fromStdString(it->scenario))
                        .arg(it->target)
                        .arg(QString::fromStdString(it->created_at))
                        .arg(it->rows.size()));
  // Keep the user's choice across reloads unless new predictions arrived (then show the newest).
  batch_->setCurrentIndex(keep >= 0 && batches_.size() == before && keep < batch_->count() ? keep : 0);
  refresh();
}

void GoodputView::refresh() {
  QChart* c = chart_->chart();
  clearChart(c);
  const int i = batch_->currentIndex();
  if (i < 0 || batches_.empty()) {
    c->setTitle(tr("Time to accuracy: no predictions"));
    summary_->setText(
        tr("No predictions in this store. `ddplab predict SCENARIO --target-accuracy 0.8 --world 4,64,512` "
           "fits the statistical efficiency to measured runs and simulates each world size."));
    c->addAxis(valueAxis(tr("world size"), 0, 1), Qt::AlignBottom);
    c->addAxis(valueAxis(tr("training time (s)"), 0, 1), Qt::AlignLeft);
    return;
  }
  const PredictionBatch& b = batches_[batches_.size() - 1 - static_cast<std::size_t>(i)];
  std::map<std::string, std::vector<const PredictionRow*>> by_strategy;
  double wmin = std::numeric_limits<double>::infinity(), wmax = 0, tmin = wmin, tmax = 0;
  for (const PredictionRow& r : b.rows) {
    by_strategy[r.strategy].push_back(&r);
    wmin = std::min<double>(wmin, r.world_size), wmax = std::max<double>(wmax, r.world_size);
    for (double t : {r.time_s, r.measured_s.value_or(r.time_s)})
      if (t > 0) tmin = std::min(tmin, t), tmax = std::max(tmax, t);
  }
  auto* x = logAxis(tr("world size (ranks, log2)"), wmin / 1.2, wmax * 1.2, 2);
  auto* y = logAxis(tr("training time to %1 accuracy (s, log)").arg(b.target), tmin, tmax);
  c->addAxis(x, Qt::AlignBottom);
  c->addAxis(y, Qt::AlignLeft);
  auto add = [&](QXYSeries* s, bool legend = true) {
    c->addSeries(s);
    s->attachAxis(x);
    s->attachAxis(y);
    for (QLegendMarker* m : c->legend()->markers(s)) m->setVisible(legend);
  };
  for (auto& [strategy, rows] : by_strategy) {
    std::sort(rows.begin(), rows.end(),
              [](const PredictionRow* a, const PredictionRow* b) { return a->world_size < b->world_size; });
    const QColor col = ctx_.colors ? ctx_.colors->strategyColor(strategy) : paletteColor(0);
    const QString name = QString::fromStdString(strategy);
    auto* line = new QLineSeries;
    auto* measured = new QScatterSeries;
    for (const PredictionRow* r : rows) {
      line->append(r->world_size, r->time_s);
      if (r->measured_s && *r->measured_s > 0) measured->append(r->world_size, *r->measured_s);
    }
    line->setName(name + tr(" predicted"));
    QPen pen(col);
    pen.setWidthF(2.0);
    line->setPen(pen);
    line->setPointsVisible(true);
    pointTooltips(line, [name, rows](const QPointF& p) {
      for (const PredictionRow* r : rows)
        if (r->world_size == static_cast<int>(std::lround(p.x())))
          return QObject::tr("%1 at %2 ranks: %3 s predicted\n%4 updates x %5 ms per step (global batch %6)")
              .arg(name)
              .arg(r->world_size)
              .arg(r->time_s, 0, 'g', 4)
              .arg(r->updates, 0, 'f', 0)
              .arg(r->step_s * 1e3, 0, 'f', 2)
              .arg(r->global_batch, 0, 'f', 0);
      return name;
    });
    add(line);
    measured->setName(name + tr(" measured"));
    measured->setMarkerShape(QScatterSeries::MarkerShapeCircle);
    measured->setMarkerSize(11);
    measured->setColor(col.lighter(140));
    measured->setBorderColor(col.darker(150));
    if (measured->count() > 0)
      add(measured);
    else
      delete measured;
  }
  auto* best = new QScatterSeries;
  best->setName(tr("best at each size"));
  best->setMarkerShape(QScatterSeries::MarkerShapeStar);
  best->setMarkerSize(22);
  best->setColor(QColor(0xff, 0xd7, 0x00));
  best->setBorderColor(Qt::black);
  QStringList text;
  for (const auto& [world, idx] : best_per_world(b)) {
    const PredictionRow& r = b.rows[idx];
    best->append(world, r.time_s);
    text << tr("%1 ranks: %2 (%3 s)").arg(world).arg(QString::fromStdString(r.strategy)).arg(r.time_s, 0, 'g', 3);
  }
  add(best);
  elideLegend(c);
  c->setTitle(tr("%1: predicted time to %2 accuracy").arg(QString::fromStdString(b.scenario)).arg(b.target));
  summary_->setText(
      tr("Best strategy per world size: %1. Predicted = updates to the target (noise-scale fit to measured runs) "
         "x simulated step time; points: measured runs the fit did not use.")
          .arg(text.join(QStringLiteral("; "))));
}

}  // namespace ddplab::gui
