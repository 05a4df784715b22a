// ConvergenceView: see convergence_view.hpp.
#include "ddplab/gui/convergence_view.hpp"

#include <QCheckBox>
#include <QComboBox>
#include <QDoubleSpinBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLegend>
#include <QLegendMarker>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QScatterSeries>
#include <QSlider>
#include <QTimer>
#include <QValueAxis>
#include <QVBoxLayout>
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>

#include "ddplab/gui/curve_loader.hpp"
#include "ddplab/simulator/statistical_efficiency.hpp"

namespace ddplab::gui {

const std::vector<CurveMetricInfo>& curve_metrics() {
  static const std::vector<CurveMetricInfo> m{
      {CurveMetric::TrainLoss, "train_loss", "train loss (mean over ranks)", false},
      {CurveMetric::TestLoss, "test_loss", "test loss", true},
      {CurveMetric::TestAccuracy, "test_accuracy", "test accuracy", true},
      {CurveMetric::MacroPrecision, "macro_precision", "macro precision", true},
      {CurveMetric::MacroRecall, "macro_recall", "macro recall", true}};
  return m;
}

namespace {
const CurveMetricInfo& info_of(CurveMetric m) {
  for (const auto& i : curve_metrics())
    if (i.metric == m) return i;
  return curve_metrics().front();
}

double eval_value(const Evaluation& e, CurveMetric m) {
  switch (m) {
    case CurveMetric::TestLoss:
      return e.test_loss;
    case CurveMetric::TestAccuracy:
      return e.test_accuracy;
    case CurveMetric::MacroPrecision:
      return e.macro_precision;
    case CurveMetric::MacroRecall:
      return e.macro_recall;
    case CurveMetric::TrainLoss:
      break;
  }
  return std::numeric_limits<double>::quiet_NaN();
}

QString xText(XAxis a, double x) {
  return a == XAxis::Time ? QString::number(x, 'g', 4) + " s" : QString::number(x, 'f', a == XAxis::Step ? 1 : 0);
}
}  // namespace

Curve run_curve(const RunCurves& run, CurveMetric metric, XAxis axis, double smoothing) {
  Curve c;
  const RunProgress progress(run.totals);
  if (metric == CurveMetric::TrainLoss) {
    for (const StepTotals& t : run.totals) {
      if (!std::isfinite(t.mean_loss)) continue;  // no rank reported a loss
      c.x.push_back(progress.at(axis, static_cast<double>(t.step + 1)));
      c.y.push_back(t.mean_loss);
    }
  } else {
    for (const Evaluation& e : run.evaluations) {
      const double v = eval_value(e, metric);
      if (!std::isfinite(v)) continue;
      c.x.push_back(progress.at(axis, static_cast<double>(e.step)));
      c.y.push_back(v);
    }
  }
  c.smoothed = ema_smooth(c.y, smoothing);
  return c;
}

std::optional<double> time_to_accuracy(const RunCurves& run, double target, XAxis axis) {
  const std::optional<double> steps = steps_to_accuracy(run.evaluations, target);
  if (!steps) return std::nullopt;
  return RunProgress(run.totals).at(axis, *steps);
}

ConvergenceView::ConvergenceView(QWidget* parent) : View(parent) {
  metric_ = new QComboBox;
  for (const auto& m : curve_metrics()) metric_->addItem(tr(m.title), static_cast<int>(m.metric));
  x_ = new QComboBox;
  for (XAxis a : {XAxis::Step, XAxis::Samples, XAxis::Time}) x_->addItem(tr(x_axis_title(a)), static_cast<int>(a));
  smooth_ = new QSlider(Qt::Horizontal);
  smooth_->setRange(0, 99);
  smooth_->setValue(60);
  smooth_->setFixedWidth(140);
  smooth_->setToolTip(tr("TensorBoard's smoothing: a debiased exponential moving average; the raw curve stays faint"));
  smoothLabel_ = new QLabel;
  logY_ = new QCheckBox(tr("log y"));
  target_ = new QDoubleSpinBox;
  target_->setRange(0, 1);
  target_->setDecimals(3);
  target_->setSingleStep(0.01);
  target_->setSpecialValueText(tr("none"));
  target_->setToolTip(tr("Target test accuracy: each run's time to accuracy is marked where it first reaches it"));

  auto* bar = new QHBoxLayout;
  bar->addWidget(new QLabel(tr("metric")));
  bar->addWidget(metric_);
  bar->addSpacing(12);
  bar->addWidget(new QLabel(tr("x")));
  bar->addWidget(x_);
  bar->addSpacing(12);
  bar->addWidget(new QLabel(tr("smoothing")));
  bar->addWidget(smooth_);
  bar->addWidget(smoothLabel_);
  bar->addSpacing(12);
  bar->addWidget(logY_);
  bar->addSpacing(12);
  bar->addWidget(new QLabel(tr("target accuracy")));
  bar->addWidget(target_);
  bar->addStretch(1);

  chart_ = new ChartView(tr("Convergence"));
  summary_ = new QLabel;
  summary_->setWordWrap(true);
  summary_->setTextInteractionFlags(Qt::TextSelectableByMouse);
  auto* layout = new QVBoxLayout(this);
  layout->addLayout(bar);
  layout->addWidget(chart_, 1);
  layout->addWidget(summary_);

  redrawSoon_ = new QTimer(this);
  redrawSoon_->setSingleShot(true);
  redrawSoon_->setInterval(kRedrawMs);
  connect(redrawSoon_, &QTimer::timeout, this, [this] {
    if (!deferDraw()) refresh();
  });

  for (QComboBox* box : {metric_, x_}) connect(box, &QComboBox::currentIndexChanged, this, &ConvergenceView::refresh);
  connect(smooth_, &QSlider::valueChanged, this, &ConvergenceView::refresh);
  connect(logY_, &QCheckBox::toggled, this, &ConvergenceView::refresh);
  connect(target_, &QDoubleSpinBox::valueChanged, this, &ConvergenceView::refresh);
  refresh();
}

void ConvergenceView::setContext(const ViewContext& context) {
  ctx_ = context;
  if (!deferDraw()) refresh();
}

void ConvergenceView::curvesArrived(bool complete) {
  if (waiting_.empty()) return;  // every drawn run's curve is in
  bool all = true;
  for (std::int64_t id : waiting_) all = all && ctx_.curves && ctx_.curves->find(id);
  if (!complete && !all) {
    if (!redrawSoon_->isActive()) redrawSoon_->start();
    return;
  }
  redrawSoon_->stop();
  if (!deferDraw()) refresh();
}

void ConvergenceView::setMetric(CurveMetric m) { metric_->setCurrentIndex(metric_->findData(static_cast<int>(m))); }
CurveMetric ConvergenceView::metric() const { return static_cast<CurveMetric>(metric_->currentData().toInt()); }
void ConvergenceView::setXAxis(XAxis a) { x_->setCurrentIndex(x_->findData(static_cast<int>(a))); }
XAxis ConvergenceView::xAxis() const { return static_cast<XAxis>(x_->currentData().toInt()); }
void ConvergenceView::setSmoothing(double w) {
  smooth_->setValue(static_cast<int>(std::lround(std::clamp(w, 0.0, 0.99) * 100)));
}
double ConvergenceView::smoothing() const { return smooth_->value() / 100.0; }
void ConvergenceView::setLogY(bool on) { logY_->setChecked(on); }
void ConvergenceView::setTarget(double accuracy) { target_->setValue(accuracy); }
double ConvergenceView::target() const { return target_->value(); }

void ConvergenceView::refresh() {
  smoothLabel_->setText(QString::number(smoothing(), 'f', 2));
  QChart* c = makeChart(tr("Convergence"));  // filled off screen, then swapped in (ChartView::swapChart)
  drawn_.clear();
  waiting_.clear();
  const CurveMetricInfo& mi = info_of(metric());
  const XAxis axis = xAxis();
  const double w = smoothing();
  const std::vector<const RunRecord*>& pool = ctx_.selected.empty() ? ctx_.runs : ctx_.selected;

  double xmin = std::numeric_limits<double>::infinity(), xmax = -xmin, ymin = xmin, ymax = -xmin;
  bool positive = true;
  struct Drawn {
    QLineSeries* raw = nullptr;
    QLineSeries* smooth = nullptr;
    QScatterSeries* reached = nullptr;
    bool legend = true;
  };
  std::vector<Drawn> drawn;
  std::set<QString> labels;
  QStringList missedText;
  struct Reached {
    double x;
    QString text, group;
  };
  std::vector<Reached> reached;
  // Points per drawn curve: kMaxPoints, fewer when many runs share the chart (kPointBudget in all).
  // The newest kMaxRuns measured runs, drawn oldest first.
  std::vector<const RunRecord*> runs;
  std::size_t measured = 0;
  for (auto it = pool.rbegin(); it != pool.rend(); ++it) {
    if (!*it || !(*it)->measured() || !ctx_.colors) continue;
    ++measured;
    if (runs.size() < kMaxRuns) runs.push_back(*it);
  }
  std::reverse(runs.begin(), runs.end());
  const std::size_t curves = runs.size() * (w > 0 ? 2 : 1);
  const std::size_t perCurve =
      std::clamp<std::size_t>(kPointBudget / std::max<std::size_t>(curves, 1), 200, kMaxPoints);
  for (const RunRecord* run : runs) {
    const RunCurves* read = ctx_.curves ? ctx_.curves->find(run->id()) : nullptr;
    if (!read) {
      waiting_.push_back(run->id());
      continue;
    }
    const Curve curve = run_curve(*read, mi.metric, axis, w);
    if (curve.x.empty()) continue;
    drawn_.push_back(run);
    const QString label = ctx_.colors->label(*run);
    QColor color = ctx_.colors->color(*run);
    const bool partial = !run->finished();
    Drawn d;
    d.legend = labels.insert(label).second;
    auto toSeries = [&](const std::vector<double>& ys) {
      auto* s = new QLineSeries;
      QList<QPointF> pts;
      for (std::size_t i : lttb(curve.x, ys, perCurve)) pts.append(QPointF(curve.x[i], ys[i]));
      s->replace(pts);
      return s;
    };
    for (std::size_t i = 0; i < curve.x.size(); ++i) {
      xmin = std::min(xmin, curve.x[i]), xmax = std::max(xmax, curve.x[i]);
      for (double v : {curve.y[i], curve.smoothed[i]}) {
        if (!std::isfinite(v)) continue;
        ymin = std::min(ymin, v), ymax = std::max(ymax, v);
        positive = positive && v > 0;
      }
    }
    if (w > 0) {
      d.raw = toSeries(curve.y);
      QColor faint = color;
      faint.setAlpha(60);
      QPen pen(faint);
      pen.setWidthF(1.0);
      d.raw->setPen(pen);
      d.raw->setName(label + tr(" (raw)"));
    }
    d.smooth = toSeries(curve.smoothed);
    QPen pen(partial ? color.lighter(130) : color);
    pen.setWidthF(2.0);
    if (partial) pen.setStyle(Qt::DashLine);
    d.smooth->setPen(pen);
    d.smooth->setName(partial ? label + tr(" [%1]").arg(QString::fromStdString(to_string(run->summary.run.status)))
                              : label);
    if (mi.evaluation) d.smooth->setPointsVisible(true);
    const QString who = tr("run #%1 %2 (%3 ranks)")
                            .arg(run->id())
                            .arg(QString::fromStdString(run->info().strategy))
                            .arg(run->info().world_size);
    pointTooltips(d.smooth, [who, axis, title = QString(mi.title)](const QPointF& p) {
      return QStringLiteral("%1\n%2: %3\n%4 = %5")
          .arg(who, QString(x_axis_title(axis)), xText(axis, p.x()), title)
          .arg(p.y(), 0, 'g', 5);
    });
    if (target() > 0) {
      if (const auto tta = time_to_accuracy(*read, target(), axis)) {
        reached.push_back({*tta, QStringLiteral("#%1 %2").arg(run->id()).arg(xText(axis, *tta)), label});
        if (mi.metric == CurveMetric::TestAccuracy) {
          d.reached = new QScatterSeries;
          d.reached->append(*tta, target());
          d.reached->setMarkerShape(QScatterSeries::MarkerShapeRectangle);
          d.reached->setMarkerSize(11);
          d.reached->setColor(color);
          d.reached->setBorderColor(Qt::black);
          d.reached->setName(label + tr(" reached target"));
          const QString tip =
              tr("%1 reached %2 at %3 = %4").arg(who).arg(target()).arg(x_axis_title(axis), xText(axis, *tta));
          pointTooltips(d.reached, [tip](const QPointF&) { return tip; });
        }
      } else {
        missedText << QStringLiteral("#%1").arg(run->id());
      }
    }
    drawn.push_back(d);
  }

  const bool logY = logY_->isChecked() && positive;
  QAbstractAxis* x = valueAxis(tr(x_axis_title(axis)), drawn.empty() ? 0 : xmin, drawn.empty() ? 10 : xmax, true);
  QAbstractAxis* y =
      logY ? static_cast<QAbstractAxis*>(logAxis(tr(mi.title) + tr(" (log)"), ymin, ymax))
           : static_cast<QAbstractAxis*>(valueAxis(tr(mi.title), drawn.empty() ? 0 : ymin, drawn.empty() ? 1 : ymax));
  c->addAxis(x, Qt::AlignBottom);
  c->addAxis(y, Qt::AlignLeft);
  auto add = [&](QAbstractSeries* s, bool legend) {
    if (!s) return;
    c->addSeries(s);
    s->attachAxis(x);
    s->attachAxis(y);
    for (QLegendMarker* m : c->legend()->markers(s)) m->setVisible(legend);
  };
  for (const Drawn& d : drawn) add(d.raw, false);  // faint, behind every smoothed curve
  for (const Drawn& d : drawn) add(d.smooth, d.legend);
  if (target() > 0 && mi.metric == CurveMetric::TestAccuracy && !drawn.empty()) {
    auto* line = new QLineSeries;
    line->append(xmin, target());
    line->append(xmax, target());
    QPen pen(QColor(0x55, 0x55, 0x55));
    pen.setStyle(Qt::DotLine);
    pen.setWidthF(1.5);
    line->setPen(pen);
    line->setName(tr("target %1").arg(target()));
    add(line, true);
  }
  for (const Drawn& d : drawn) add(d.reached, false);
  elideLegend(c);
  // More entries than fit would be cut off without a word: then no legend, and the note says so.
  const bool legend = labels.size() <= kMaxLegend;
  c->legend()->setVisible(legend);

  const QString readError = ctx_.curves ? ctx_.curves->error() : QString();
  const std::size_t unread = waiting_.size();
  if (drawn.empty() && unread > 0) {
    c->setTitle(readError.isEmpty() ? tr("Convergence: reading curves") : tr("Convergence: curves could not be read"));
  } else if (drawn.empty()) {
    c->setTitle(pool.empty() ? tr("Convergence: no runs shown")
                             : tr("Convergence: no measured %1 in the runs shown").arg(tr(mi.title)));
  } else {
    c->setTitle(tr("Convergence: %1").arg(tr(mi.title)));
  }
  QString text;
  if (target() > 0 && !drawn.empty()) {
    // Fastest first; grouped runs are summarised per group (median of those that reached it).
    std::sort(reached.begin(), reached.end(), [](const Reached& a, const Reached& b) { return a.x < b.x; });
    QStringList parts;
    if (ctx_.colors->group() == GroupBy::Run) {
      for (std::size_t i = 0; i < reached.size() && i < 10; ++i) parts << reached[i].text;
      if (reached.size() > 10) parts << tr("%1 more (hover the markers)").arg(reached.size() - 10);
    } else {
      std::map<QString, std::pair<std::vector<double>, int>> groups;  // label -> (times reached, runs)
      for (const Reached& r : reached) groups[r.group].first.push_back(r.x);
      for (const RunRecord* run : drawn_) groups[ctx_.colors->label(*run)].second += 1;
      std::vector<std::pair<double, QString>> lines;
      for (auto& [label, g] : groups) {
        if (g.first.empty()) {
          lines.emplace_back(std::numeric_limits<double>::infinity(), tr("%1 none of %2").arg(label).arg(g.second));
          continue;
        }
        std::sort(g.first.begin(), g.first.end());
        const std::size_t n = g.first.size();
        const double median = n % 2 ? g.first[n / 2] : 0.5 * (g.first[n / 2 - 1] + g.first[n / 2]);
        lines.emplace_back(median,
                           tr("%1 median %2 (%3 of %4 runs)").arg(label, xText(axis, median)).arg(n).arg(g.second));
      }
      std::sort(lines.begin(), lines.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
      for (const auto& l : lines) parts << l.second;
    }
    text = tr("Time to accuracy %1 (%2; first evaluation at or above it, interpolated): %3")
               .arg(target())
               .arg(x_axis_title(axis))
               .arg(parts.isEmpty() ? tr("none reached it") : parts.join(QStringLiteral("; ")));
    if (!missedText.isEmpty() && ctx_.colors->group() == GroupBy::Run)
      text += tr("; not reached: %1")
                  .arg(missedText.mid(0, 10).join(QStringLiteral(", ")) +
                       (missedText.size() > 10 ? QStringLiteral(", ...") : QString()));
  }
  QStringList notes;
  if (!legend)
    notes << tr("No legend for %1 curves: hover a curve for its run, or group the runs in the Runs view.")
                 .arg(labels.size());
  if (measured > runs.size())
    notes << tr("Drawing the newest %1 of the %2 measured runs shown: filter, hide or select runs in the Runs view to "
                "choose others.")
                 .arg(runs.size())
                 .arg(measured);
  if (unread > 0)
    notes << (readError.isEmpty()
                  ? tr("Reading curves from the store: %1 of these %2 runs still to come, drawn as they arrive.")
                        .arg(unread)
                        .arg(runs.size())
                  : tr("The curves of %1 of these %2 runs could not be read: %3")
                        .arg(unread)
                        .arg(runs.size())
                        .arg(readError));
  if (!text.isEmpty()) notes << text;
  text = notes.join('\n');
  if (!readError.isEmpty()) waiting_.clear();
  if (logY_->isChecked() && !positive)
    text += (text.isEmpty() ? QString() : QStringLiteral("\n")) + tr("log y needs positive values: linear axis shown");
  summary_->setText(text);
  summary_->setVisible(!text.isEmpty());
  chart_->swapChart(c);
}

}  // namespace ddplab::gui
