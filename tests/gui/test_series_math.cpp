// The charts' arithmetic against reference figures: TensorBoard's smoothing worked by hand, the x axes of a
// curve against core's training_time_through, LTTB's guarantees, and log-axis ranges.
#include <QtTest>
#include <cmath>
#include <limits>

#include "ddplab/core/step_totals.hpp"
#include "ddplab/gui/series_math.hpp"

using namespace ddplab;
using namespace ddplab::gui;

class SeriesMathTest : public QObject {
  Q_OBJECT
 private slots:
  void smoothingIsTensorBoardsDebiasedEma() {
    // w = 0.6 on 1, 2, 3: last = 0.4, 1.04, 1.824; debiased by 1 - 0.6^n = 0.4, 0.64, 0.784.
    const auto s = ema_smooth({1, 2, 3}, 0.6);
    QCOMPARE(s.size(), std::size_t(3));
    QVERIFY(std::abs(s[0] - 1.0) < 1e-12);
    QVERIFY(std::abs(s[1] - 1.04 / 0.64) < 1e-12);
    QVERIFY(std::abs(s[2] - 1.824 / 0.784) < 1e-12);
    // A NaN passes through and is not counted: the next value continues from the last finite one.
    const double nan = std::numeric_limits<double>::quiet_NaN();
    const auto t = ema_smooth({1, nan, 2, 3}, 0.6);
    QVERIFY(std::isnan(t[1]));
    QVERIFY(std::abs(t[2] - s[1]) < 1e-12 && std::abs(t[3] - s[2]) < 1e-12);
    // Weight 0 and constant series are returned unchanged.
    QCOMPARE(ema_smooth({3, 1, 2}, 0.0), (std::vector<double>{3, 1, 2}));
    QCOMPARE(ema_smooth({5, 5, 5}, 0.9), (std::vector<double>{5, 5, 5}));
  }

  void progressAxesMatchTrainingTimeThrough() {
    // Steps 0..3 (step 2 missing, as after a gap), samples and slowest times known.
    std::vector<StepTotals> steps(3);
    steps[0].step = 0, steps[0].samples = 128, steps[0].slowest_s = 0.5;
    steps[1].step = 1, steps[1].samples = 128, steps[1].slowest_s = 0.25;
    steps[2].step = 3, steps[2].samples = 64, steps[2].slowest_s = 1.0;
    const RunProgress p(steps);
    for (double n : {0.0, 0.5, 1.0, 1.5, 2.0, 3.0, 3.25, 4.0, 9.0}) {
      QVERIFY2(std::abs(p.time_through(n) - training_time_through(steps, n)) < 1e-12, qPrintable(QString::number(n)));
      QCOMPARE(p.at(XAxis::Step, n), n);
    }
    QCOMPARE(p.samples_through(1.5), 128 + 64.0);
    QCOMPARE(p.samples_through(4), 320.0);
    QCOMPARE(p.at(XAxis::Time, 2), 0.75);
    QCOMPARE(p.at(XAxis::Samples, 0), 0.0);
  }

  void lttbKeepsEndsCountAndPeaks() {
    std::vector<double> x, y;
    for (int i = 0; i < 10000; ++i) {
      x.push_back(i);
      y.push_back(i == 5000 ? 100.0 : std::sin(i / 100.0));
    }
    const auto keep = lttb(x, y, 500);
    QCOMPARE(keep.size(), std::size_t(500));
    QCOMPARE(keep.front(), std::size_t(0));
    QCOMPARE(keep.back(), std::size_t(9999));
    QVERIFY(std::is_sorted(keep.begin(), keep.end()));
    QVERIFY(std::find(keep.begin(), keep.end(), std::size_t(5000)) != keep.end());  // the spike survives
    QCOMPARE(lttb(x, y, 20000).size(), std::size_t(10000));                         // nothing to drop
    QCOMPARE(lttb({0, 1}, {1, 2}, 3).size(), std::size_t(2));
  }

  void logRangesEndOutsideWholePowers() {
    auto [lo, hi] = log_decade_range(0.3, 7, 10);  // within one decade either side of 1
    QVERIFY(lo < 0.1 && lo > 0.099 && hi > 10 && hi < 10.1);
    std::tie(lo, hi) = log_decade_range(2, 8, 2);  // powers of two themselves
    QVERIFY(lo < 2 && lo > 1.99 && hi > 8 && hi < 8.01);
    std::tie(lo, hi) = log_decade_range(5, 5, 10);  // one value: still two labelled powers
    QVERIFY(lo < 1 && hi > 10);
  }
};

QTEST_APPLESS_MAIN(SeriesMathTest)
#include "test_series_math.moc"
