// The look and the tools every ddplab chart shares: palette, chart frame, axes that label readably,
// legends that elide long names (full name on hover), point tooltips, and export to PNG, SVG and CSV.
// Views own QCharts that they refill (or fill anew and swap in); axes are recreated with explicit ranges each time,
// since Qt Charts axes do not follow points appended after attachAxis.
#pragma once
#include <QChart>
#include <QChartView>
#include <QColor>
#include <QString>
#include <QXYSeries>
#include <cstddef>
#include <functional>

class QLogValueAxis;
class QValueAxis;

namespace ddplab::gui {

QColor paletteColor(std::size_t i);       // Tableau-20 order: ten distinct hues, then their light tints
QChart* makeChart(const QString& title);  // bold title, legend on the right, no animation
void clearChart(QChart* chart);           // removes and deletes series and axes

// A chart view with rubber-band zoom (drag a rectangle; right click zooms out) and antialiasing.
class ChartView : public QChartView {
  Q_OBJECT
 public:
  explicit ChartView(const QString& title, QWidget* parent = nullptr);
  // Shows `fresh` (makeChart, filled) and deletes the chart shown before. Charts with many series are
  // filled off screen and swapped in: Qt Charts lays the scene out again for each series added on screen.
  void swapChart(QChart* fresh);
};

// Legend names longer than `max_chars` are elided in the middle; hovering the legend entry shows the full
// name, and the full name stays the series' objectName (for CSV export and tests). Call after the series
// are added.
void elideLegend(QChart* chart, int max_chars = 34);
QString fullName(const QAbstractSeries* s);  // the name before eliding

// Shows `text(point)` as a tooltip while the mouse is over a point of `series`.
void pointTooltips(QXYSeries* series, std::function<QString(const QPointF&)> text);

// Axes with their range set and readable labels: a value axis rounded to nice numbers, and a log axis whose
// range ends just outside whole powers of its base so that every power is labelled (series_math.hpp).
QValueAxis* valueAxis(const QString& title, double lo, double hi, bool from_zero = false);
QLogValueAxis* logAxis(const QString& title, double lo, double hi, double base = 10);

// What "Export" writes: the widget as PNG or SVG (by the file's suffix), and the charts' data as CSV with
// columns chart, series, x, y (bar charts: chart, set, category, value). Return false with *error set.
bool saveImage(QWidget* widget, const QString& file, QString* error = nullptr);
QString chartsCsv(const QList<QChart*>& charts);

}  // namespace ddplab::gui
