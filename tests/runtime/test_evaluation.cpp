#include <gtest/gtest.h>

#include "ddplab/core/class_metrics.hpp"
#include "ddplab/core/error.hpp"

namespace ddplab {
namespace {

TEST(ClassMetrics, MatchHandComputedValues) {
  // Rows are true labels, columns predictions.
  //   true 0: 3 right, 1 predicted as 1
  //   true 1: 2 right
  //   true 2: 1 predicted as 0, 0 right  (class 2 never predicted: precision 0)
  const ClassMetrics m = class_metrics({3, 1, 0, 0, 2, 0, 1, 0, 0}, 3);
  EXPECT_DOUBLE_EQ(m.accuracy, 5.0 / 7.0);
  EXPECT_EQ(m.support, (std::vector<std::int64_t>{4, 2, 1}));
  EXPECT_EQ(m.predicted, (std::vector<std::int64_t>{4, 3, 0}));
  EXPECT_DOUBLE_EQ(m.precision[0], 3.0 / 4.0);
  EXPECT_DOUBLE_EQ(m.precision[1], 2.0 / 3.0);
  EXPECT_DOUBLE_EQ(m.precision[2], 0.0);
  EXPECT_DOUBLE_EQ(m.recall[1], 1.0);
  EXPECT_DOUBLE_EQ(m.f1[1], 2 * (2.0 / 3.0) * 1.0 / (2.0 / 3.0 + 1.0));  // 0.8
  EXPECT_DOUBLE_EQ(m.f1[2], 0.0);
  EXPECT_DOUBLE_EQ(m.macro_precision, (3.0 / 4.0 + 2.0 / 3.0 + 0.0) / 3.0);
  EXPECT_DOUBLE_EQ(m.macro_recall, (3.0 / 4.0 + 1.0 + 0.0) / 3.0);
  EXPECT_DOUBLE_EQ(m.macro_f1, (0.75 + 0.8 + 0.0) / 3.0);
  EXPECT_THROW(class_metrics({1, 2, 3}, 2), ddplab::InputError);
  EXPECT_THROW(class_metrics({1, -1, 0, 1}, 2), ddplab::InputError);
}

}  // namespace
}  // namespace ddplab
