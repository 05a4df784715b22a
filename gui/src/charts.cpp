// See charts.hpp.
#include "ddplab/gui/charts.hpp"

#include <QAbstractBarSeries>
#include <QBarCategoryAxis>
#include <QBarSet>
#include <QCursor>
#include <QFile>
#include <QFileInfo>
#include <QFont>
#include <QLegend>
#include <QLegendMarker>
#include <QLogValueAxis>
#include <QPainter>
#include <QPixmap>
#include <QSvgGenerator>
#include <QTextStream>
#include <QToolTip>
#include <QValueAxis>
#include <cmath>
#include <limits>

#include "ddplab/gui/series_math.hpp"

namespace ddplab::gui {

QColor paletteColor(std::size_t i) {
  static const QRgb colors[] = {0x1f77b4, 0xff7f0e, 0x2ca02c, 0xd62728, 0x9467bd, 0x8c564b, 0xe377c2,
                                0x7f7f7f, 0xbcbd22, 0x17becf, 0xaec7e8, 0xffbb78, 0x98df8a, 0xff9896,
                                0xc5b0d5, 0xc49c94, 0xf7b6d2, 0xc7c7c7, 0xdbdb8d, 0x9edae5};
  return QColor(colors[i % (sizeof(colors) / sizeof(colors[0]))]);
}

// Legend on the right: a bottom legend truncates names once a few runs are shown. No animation:
// screenshots must be final.
QChart* makeChart(const QString& title) {
  auto* chart = new QChart;
  QFont f = chart->titleFont();
  f.setPointSizeF(f.pointSizeF() * 1.3);
  f.setBold(true);
  chart->setTitleFont(f);
  chart->setTitle(title);
  chart->legend()->setAlignment(Qt::AlignRight);
  chart->legend()->setMarkerShape(QLegend::MarkerShapeFromSeries);
  chart->setAnimationOptions(QChart::NoAnimation);
  chart->setMargins(QMargins(6, 6, 6, 6));
  return chart;
}

void clearChart(QChart* chart) {
  chart->removeAllSeries();
  for (QAbstractAxis* axis : chart->axes()) {
    chart->removeAxis(axis);
    delete axis;
  }
}

void ChartView::swapChart(QChart* fresh) {
  QChart* old = chart();
  setChart(fresh);
  delete old;
}

ChartView::ChartView(const QString& title, QWidget* parent) : QChartView(makeChart(title), parent) {
  setRenderHint(QPainter::Antialiasing);
  setRubberBand(QChartView::RectangleRubberBand);
  setMinimumSize(320, 240);
}

namespace {
constexpr const char* kFullName = "ddplab_full_name";
}

QString fullName(const QAbstractSeries* s) {
  const QVariant v = s->property(kFullName);
  return v.isValid() ? v.toString() : s->name();
}

void elideLegend(QChart* chart, int max_chars) {
  for (QAbstractSeries* s : chart->series()) {
    const QString name = fullName(s);
    s->setProperty(kFullName, name);
    if (name.size() > max_chars) {
      const int keep = max_chars - 1;
      s->setName(name.left(keep - keep / 2) + QChar(0x2026) + name.right(keep / 2));
    }
  }
  for (QLegendMarker* m : chart->legend()->markers()) {
    QAbstractSeries* s = m->series();
    const QString name = fullName(s);
    QObject::connect(m, &QLegendMarker::hovered, m, [name](bool on) {
      if (on)
        QToolTip::showText(QCursor::pos(), name);
      else
        QToolTip::hideText();
    });
  }
}

void pointTooltips(QXYSeries* series, std::function<QString(const QPointF&)> text) {
  QObject::connect(series, &QXYSeries::hovered, series, [text = std::move(text)](const QPointF& p, bool on) {
    if (on)
      QToolTip::showText(QCursor::pos(), text(p));
    else
      QToolTip::hideText();
  });
}

QValueAxis* valueAxis(const QString& title, double lo, double hi, bool from_zero) {
  auto* a = new QValueAxis;
  a->setTitleText(title);
  if (!(lo <= hi) || !std::isfinite(lo) || !std::isfinite(hi)) lo = 0, hi = 1;
  if (from_zero) lo = std::min(0.0, lo);
  double span = hi - lo;
  if (span <= 0) span = std::abs(hi) > 0 ? std::abs(hi) : 1.0;
  // Padding never takes a non-negative quantity (a loss, a time) below 0.
  double l = from_zero && lo == 0 ? 0 : lo - 0.04 * span;
  if (lo >= 0 && l < 0) l = 0;
  // Nice numbers with the tick count that wastes least space: with Qt's default of 5, 0..1040 becomes
  // 0..1500 and a third of the plot is empty.
  int best = 5;
  double bestSpan = std::numeric_limits<double>::infinity();
  for (int ticks = 5; ticks <= 9; ++ticks) {
    a->setRange(l, hi + 0.04 * span);
    a->setTickCount(ticks);
    a->applyNiceNumbers();
    const double used = a->max() - std::max(a->min(), lo >= 0 ? 0.0 : a->min());
    if (used < bestSpan * 0.999) best = ticks, bestSpan = used;
  }
  a->setRange(l, hi + 0.04 * span);
  a->setTickCount(best);
  a->applyNiceNumbers();
  if (lo >= 0 && a->min() < 0) a->setMin(0);
  a->setLabelFormat(a->max() - a->min() >= 5 ? "%.0f" : "%.3g");
  return a;
}

QLogValueAxis* logAxis(const QString& title, double lo, double hi, double base) {
  auto* a = new QLogValueAxis;
  a->setTitleText(title);
  a->setBase(base);
  const auto [l, h] = log_decade_range(lo, hi, base);
  a->setRange(l, h);
  a->setLabelFormat("%g");
  a->setMinorTickCount(base == 10 ? 8 : 0);
  return a;
}

bool saveImage(QWidget* widget, const QString& file, QString* error) {
  const QString suffix = QFileInfo(file).suffix().toLower();
  if (suffix == "svg") {
    QSvgGenerator svg;
    svg.setFileName(file);
    svg.setSize(widget->size());
    svg.setViewBox(QRect(QPoint(0, 0), widget->size()));
    svg.setTitle(widget->windowTitle());
    QPainter p;
    if (!p.begin(&svg)) {
      if (error) *error = QObject::tr("cannot write %1").arg(file);
      return false;
    }
    widget->render(&p);
    p.end();
    if (!QFileInfo(file).exists()) {
      if (error) *error = QObject::tr("cannot write %1").arg(file);
      return false;
    }
    return true;
  }
  if (suffix != "png") {
    if (error) *error = QObject::tr("%1: export writes .png or .svg").arg(file);
    return false;
  }
  if (!widget->grab().save(file, "PNG")) {
    if (error) *error = QObject::tr("cannot write %1").arg(file);
    return false;
  }
  return true;
}

namespace {
QString csvField(const QString& s) {
  if (!s.contains(',') && !s.contains('"') && !s.contains('\n')) return s;
  return '"' + QString(s).replace('"', "\"\"") + '"';
}
QString num(double v) { return std::isfinite(v) ? QString::number(v, 'g', 10) : QString(); }
}  // namespace

QString chartsCsv(const QList<QChart*>& charts) {
  QString out;
  QTextStream ts(&out);
  ts << "chart,series,x,y\n";
  for (const QChart* c : charts) {
    const QString chart = csvField(c->title());
    for (QAbstractSeries* s : c->series()) {
      if (auto* xy = qobject_cast<QXYSeries*>(s)) {
        const QString name = csvField(fullName(s));
        for (const QPointF& p : xy->points())
          ts << chart << ',' << name << ',' << num(p.x()) << ',' << num(p.y()) << '\n';
      } else if (auto* bars = qobject_cast<QAbstractBarSeries*>(s)) {
        QStringList categories;
        for (QAbstractAxis* a : bars->attachedAxes())
          if (auto* cat = qobject_cast<QBarCategoryAxis*>(a)) categories = cat->categories();
        for (QBarSet* set : bars->barSets())
          for (int i = 0; i < set->count(); ++i)
            ts << chart << ',' << csvField(set->label()) << ','
               << csvField(i < categories.size() ? categories[i] : QString::number(i)) << ',' << num(set->at(i))
               << '\n';
      }
    }
  }
  return out;
}

}  // namespace ddplab::gui
