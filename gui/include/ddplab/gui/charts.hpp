// The two comparison charts. Each view owns one QChart that it refills on plot();
// axes are recreated and their ranges set explicitly, since Qt Charts axes do not follow
// points appended after attachAxis.
#pragma once
#include <QChart>
#include <QChartView>
#include <QColor>
#include <cstddef>
#include <vector>

#include "ddplab/gui/run_data.hpp"

namespace ddplab::gui {

// The look every ddplab chart shares (also used by validation_view.cpp).
QColor paletteColor(std::size_t i);       // Tableau-10, cycling
QChart* makeChart(const QString& title);  // bold title, legend on the right, no animation
void clearChart(QChart* chart);           // removes and deletes series and axes

// "Loss vs step": one QLineSeries per measured run, the mean loss over ranks at each step,
// named "#id strategy (n ranks)". Simulated runs are ignored (they have no loss).
class LossChartView : public QChartView {
  Q_OBJECT
 public:
  explicit LossChartView(QWidget* parent = nullptr);
  void plot(const std::vector<const RunRecord*>& runs);
};

// "Throughput vs world size": per scenario+strategy, measured runs as a QScatterSeries
// ("<strategy> measured") and simulated runs as a QLineSeries sorted by world size
// ("<strategy> simulated"), both in the same colour; log2 world-size axis, samples/s on y.
// When several scenarios are in view the names are prefixed with "<scenario>: ".
// The y axis is linear from 0 by default; a log scale keeps small worlds readable next to
// simulated worlds hundreds of times larger.
class ThroughputChartView : public QChartView {
  Q_OBJECT
 public:
  explicit ThroughputChartView(QWidget* parent = nullptr);
  void plot(const std::vector<const RunRecord*>& runs);
  // Log10 samples/s axis instead of linear from 0; takes effect on the next plot().
  void setLogScaleY(bool on);
  bool logScaleY() const { return logY_; }

 private:
  bool logY_ = false;
};

}  // namespace ddplab::gui
