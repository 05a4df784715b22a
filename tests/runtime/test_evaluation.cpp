#include <gtest/gtest.h>

#include "ddplab/runtime/evaluation.hpp"

namespace ddplab {
namespace {

TEST(Evaluation, ConfusionMetricsMatchHandComputedValues) {
  // Rows are true labels, columns predictions.
  //   true 0: 3 right, 1 predicted as 1
  //   true 1: 2 right
  //   true 2: 1 predicted as 0, 0 right  (class 2 never predicted: precision 0)
  const std::vector<double> m{3, 1, 0, 0, 2, 0, 1, 0, 0};
  Evaluation e;
  confusion_metrics(m, 3, e);
  EXPECT_DOUBLE_EQ(e.test_accuracy, 5.0 / 7.0);
  EXPECT_DOUBLE_EQ(e.macro_precision, (3.0 / 4.0 + 2.0 / 3.0 + 0.0) / 3.0);
  EXPECT_DOUBLE_EQ(e.macro_recall, (3.0 / 4.0 + 1.0 + 0.0) / 3.0);
}

}  // namespace
}  // namespace ddplab
