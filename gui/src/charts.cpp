// LossChartView and ThroughputChartView: see charts.hpp.
#include "ddplab/gui/charts.hpp"

#include <QChart>
#include <QFont>
#include <QLegend>
#include <QLineSeries>
#include <QLogValueAxis>
#include <QPen>
#include <QScatterSeries>
#include <QValueAxis>
#include <algorithm>
#include <cmath>
#include <limits>
#include <map>
#include <set>
#include <string>
#include <utility>

namespace ddplab::gui {

// Tableau-10: distinct, print-friendly colours; series of one strategy share one colour.
QColor paletteColor(std::size_t i) {
  static const QRgb colors[] = {0x1f77b4, 0xff7f0e, 0x2ca02c, 0xd62728, 0x9467bd,
                                0x8c564b, 0xe377c2, 0x7f7f7f, 0xbcbd22, 0x17becf};
  return QColor(colors[i % (sizeof(colors) / sizeof(colors[0]))]);
}

namespace {
QString qs(const std::string& s) { return QString::fromStdString(s); }
}  // namespace

// Common look: bold title, legend on the right (a bottom legend truncates names once a few
// runs are shown), no animation (screenshots must be final).
QChart* makeChart(const QString& title) {
  auto* chart = new QChart;
  QFont f = chart->titleFont();
  f.setPointSizeF(f.pointSizeF() * 1.3);
  f.setBold(true);
  chart->setTitleFont(f);
  chart->setTitle(title);
  chart->legend()->setAlignment(Qt::AlignRight);
  chart->legend()->setMarkerShape(QLegend::MarkerShapeFromSeries);  // dots for measured, lines for simulated
  chart->setAnimationOptions(QChart::NoAnimation);
  chart->setMargins(QMargins(6, 6, 6, 6));
  return chart;
}

// Empties a chart: series and axes are deleted (they are owned by the chart).
void clearChart(QChart* chart) {
  chart->removeAllSeries();
  for (QAbstractAxis* axis : chart->axes()) {
    chart->removeAxis(axis);
    delete axis;
  }
}

namespace {

// [lo, hi] padded by 5% of the span (or of the value, for a single value).
std::pair<double, double> padded(double lo, double hi) {
  if (!(lo <= hi)) return {0.0, 1.0};
  double span = hi - lo;
  if (span <= 0) span = std::abs(hi) > 0 ? std::abs(hi) : 1.0;
  return {lo - 0.05 * span, hi + 0.05 * span};
}

}  // namespace

// ---------------------------------------------------------------------------------------
LossChartView::LossChartView(QWidget* parent) : QChartView(makeChart(tr("Loss vs step")), parent) {
  setRenderHint(QPainter::Antialiasing);
  setMinimumSize(320, 240);
  plot({});
}

void LossChartView::plot(const std::vector<const RunRecord*>& runs) {
  QChart* c = chart();
  clearChart(c);

  auto* x = new QValueAxis;
  x->setTitleText(tr("step"));
  auto* y = new QValueAxis;
  y->setTitleText(tr("loss (mean over ranks)"));
  c->addAxis(x, Qt::AlignBottom);
  c->addAxis(y, Qt::AlignLeft);

  double xmin = std::numeric_limits<double>::infinity(), xmax = -xmin;
  double ymin = xmin, ymax = -xmin;
  std::size_t color = 0;
  for (const RunRecord* rec : runs) {
    if (!rec || !rec->measured() || rec->mean_loss.empty()) continue;
    const RunInfo& info = rec->summary.run.info;
    auto* s = new QLineSeries;
    s->setName(QStringLiteral("#%1 %2 (%3 %4)")
                   .arg(rec->id())
                   .arg(qs(info.strategy))
                   .arg(info.world_size)
                   .arg(info.world_size == 1 ? QStringLiteral("rank") : QStringLiteral("ranks")));
    QList<QPointF> pts;
    pts.reserve(static_cast<qsizetype>(rec->mean_loss.size()));
    for (const auto& [step, loss] : rec->mean_loss) {
      pts.append(QPointF(static_cast<double>(step), loss));
      xmin = std::min(xmin, static_cast<double>(step));
      xmax = std::max(xmax, static_cast<double>(step));
      ymin = std::min(ymin, loss);
      ymax = std::max(ymax, loss);
    }
    s->replace(pts);
    QPen pen(paletteColor(color++));
    pen.setWidthF(2.0);
    s->setPen(pen);
    c->addSeries(s);
    s->attachAxis(x);
    s->attachAxis(y);
  }

  if (c->series().isEmpty()) {
    c->setTitle(tr("Loss vs step: none measured"));  // short: the chart can be narrow
    x->setRange(0, 10);
    y->setRange(0, 1);
    return;
  }
  c->setTitle(tr("Loss vs step"));
  if (xmax <= xmin) xmax = xmin + 1;  // a single step still gets a readable axis
  x->setRange(xmin, xmax);
  x->applyNiceNumbers();
  x->setLabelFormat(x->max() - x->min() >= x->tickCount() - 1 ? "%d" : "%.1f");
  auto [ylo, yhi] = padded(ymin, ymax);
  y->setRange(ylo, yhi);
  y->applyNiceNumbers();
  y->setLabelFormat("%.3g");
}

// ---------------------------------------------------------------------------------------
ThroughputChartView::ThroughputChartView(QWidget* parent)
    : QChartView(makeChart(tr("Throughput vs world size")), parent) {
  setRenderHint(QPainter::Antialiasing);
  setMinimumSize(320, 240);
  plot({});
}

void ThroughputChartView::plot(const std::vector<const RunRecord*>& runs) {
  QChart* c = chart();
  clearChart(c);

  auto* x = new QLogValueAxis;
  x->setBase(2.0);
  x->setTitleText(tr("world size (ranks, log2)"));
  x->setLabelFormat("%d");
  x->setMinorTickCount(0);
  QAbstractAxis* y = nullptr;
  if (logY_) {
    auto* ly = new QLogValueAxis;
    ly->setBase(10.0);
    ly->setLabelFormat("%g");
    ly->setMinorTickCount(8);
    y = ly;
  } else {
    auto* vy = new QValueAxis;
    vy->setLabelFormat("%.0f");
    y = vy;
  }
  y->setTitleText(logY_ ? tr("samples/s (log)") : tr("samples/s"));
  c->addAxis(x, Qt::AlignBottom);
  c->addAxis(y, Qt::AlignLeft);

  // Group by scenario+strategy; std::map keeps the legend order stable across reloads.
  struct Group {
    QList<QPointF> measured, simulated;
  };
  std::map<std::pair<std::string, std::string>, Group> groups;
  std::set<std::string> scenarios;
  for (const RunRecord* rec : runs) {
    if (!rec) continue;
    const RunSummary& s = rec->summary;
    if (s.run.info.world_size < 1 || !std::isfinite(s.samples_per_s) || s.samples_per_s <= 0) continue;
    if (!rec->measured() && !rec->simulated()) continue;
    QPointF p(s.run.info.world_size, s.samples_per_s);
    Group& g = groups[{s.run.info.scenario, s.run.info.strategy}];
    (rec->measured() ? g.measured : g.simulated).append(p);
    scenarios.insert(s.run.info.scenario);
  }

  double xmin = std::numeric_limits<double>::infinity(), xmax = -xmin, ymax = 0, ymin = xmin;
  std::size_t color = 0;
  for (auto& [key, g] : groups) {
    const QString prefix = scenarios.size() > 1 ? qs(key.first) + QStringLiteral(": ") : QString();
    const QString strategy = qs(key.second);
    const QColor col = paletteColor(color++);
    for (const QPointF& p : g.measured + g.simulated) {
      xmin = std::min(xmin, p.x());
      xmax = std::max(xmax, p.x());
      ymax = std::max(ymax, p.y());
      ymin = std::min(ymin, p.y());
    }
    if (!g.simulated.isEmpty()) {
      std::stable_sort(g.simulated.begin(), g.simulated.end(),
                       [](const QPointF& a, const QPointF& b) { return a.x() < b.x(); });
      auto* line = new QLineSeries;
      line->setName(prefix + strategy + tr(" simulated"));
      line->replace(g.simulated);
      QPen pen(col);
      pen.setWidthF(2.0);
      pen.setStyle(Qt::DashLine);
      line->setPen(pen);
      line->setPointsVisible(true);
      c->addSeries(line);
      line->attachAxis(x);
      line->attachAxis(y);
    }
    if (!g.measured.isEmpty()) {
      auto* scatter = new QScatterSeries;
      scatter->setName(prefix + strategy + tr(" measured"));
      scatter->replace(g.measured);
      scatter->setMarkerShape(QScatterSeries::MarkerShapeCircle);
      scatter->setMarkerSize(12);
      scatter->setColor(col);
      scatter->setBorderColor(col.darker(150));
      c->addSeries(scatter);
      scatter->attachAxis(x);
      scatter->attachAxis(y);
    }
  }

  if (c->series().isEmpty()) {
    c->setTitle(tr("Throughput vs world size: no runs"));
    x->setRange(1, 16);
    y->setRange(logY_ ? 1 : 0, logY_ ? 10 : 4);  // whole-number ticks under the "%.0f" labels
    return;
  }
  c->setTitle(tr("Throughput vs world size"));
  // Pad by a factor of 1.5 either side: QLogValueAxis only labels powers of the base that lie
  // strictly inside the range, so an exact power at an end would lose its label.
  x->setRange(std::max(xmin / 1.5, 0.5), xmax * 1.5);
  if (auto* ly = qobject_cast<QLogValueAxis*>(y)) {
    ly->setRange(ymin / 1.5, ymax * 1.5);
  } else if (auto* vy = qobject_cast<QValueAxis*>(y)) {
    vy->setRange(0, ymax * 1.1);
    vy->applyNiceNumbers();
  }
}

void ThroughputChartView::setLogScaleY(bool on) { logY_ = on; }

}  // namespace ddplab::gui
