// `ddplab report --classes RUN`: the per-class table and confusion matrix of a stored evaluation, checked
// against counts worked out by hand.
#include <gtest/gtest.h>

#include "ddplab/core/class_metrics.hpp"
#include "ddplab/core/error.hpp"

namespace ddplab {
namespace {

RunRow fashion_run() {
  RunRow r;
  r.id = 4;
  r.info.scenario = "study";
  r.info.strategy = "overlap";
  r.info.world_size = 2;
  r.info.config_json = R"({"data": {"dataset": "fashion-mnist"}})";
  return r;
}

// 10 classes with 10 samples each: every class right but Shirt (6), which is taken 4 times for T-shirt/top
// (0) and 2 times for Pullover (2), so 6 of its 10 samples are wrong.
Evaluation evaluation(std::int64_t step) {
  Evaluation e;
  e.step = step;
  e.wall_s = 3.5;
  e.classes = 10;
  e.confusion.assign(100, 0);
  for (int c = 0; c < 10; ++c) e.confusion[static_cast<std::size_t>(c * 10 + c)] = 10;
  e.confusion[6 * 10 + 6] = 4;
  e.confusion[6 * 10 + 0] = 4;
  e.confusion[6 * 10 + 2] = 2;
  return e;
}

TEST(ClassReport, TableMatrixAndTheWeakestClass) {
  const std::vector<Evaluation> evals = {evaluation(50), evaluation(100)};
  const std::string text = class_report_text(fashion_run(), evals, std::nullopt);
  EXPECT_NE(text.find("run 4 (study / overlap, 2 ranks), evaluation after step 100 (3.5 s): accuracy 0.9400"),
            std::string::npos)
      << text;
  // T-shirt/top: 10 right of 14 predicted; Shirt: 4 of 10 found, all its predictions right.
  EXPECT_NE(text.find("0 T-shirt/top          10     0.7143     1.0000   0.8333"), std::string::npos) << text;
  EXPECT_NE(text.find("6 Shirt                10     1.0000     0.4000   0.5714"), std::string::npos) << text;
  EXPECT_NE(text.find("    6     4     0     2     0     0     0     4     0     0     0"), std::string::npos) << text;
  EXPECT_NE(text.find("weakest: class 6 (Shirt), f1 0.5714; 4 of its 10 samples were taken for class 0 (T-shirt/top)"),
            std::string::npos)
      << text;
  // An earlier evaluation by its step; a step without one names those there are.
  EXPECT_NE(class_report_text(fashion_run(), evals, 50).find("after step 50"), std::string::npos);
  try {
    class_report_text(fashion_run(), evals, 70);
    FAIL() << "no exception";
  } catch (const ddplab::InputError& e) {
    EXPECT_STREQ(e.what(), "run 4 has no evaluation at step 70 (it has: 50, 100)");
  }
  EXPECT_THROW(class_report_text(fashion_run(), {}, std::nullopt), ddplab::InputError);
}

TEST(ClassReport, CsvHasARowPerClassWithItsConfusionRow) {
  const std::string csv = class_report_csv(fashion_run(), {evaluation(100)}, std::nullopt);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 11);
  EXPECT_EQ(csv.substr(0, csv.find('\n')),
            "run,step,class,name,support,predicted,precision,recall,f1,predicted_0,predicted_1,predicted_2,predicted_3,"
            "predicted_4,predicted_5,predicted_6,predicted_7,predicted_8,predicted_9");
  EXPECT_NE(csv.find("\n4,100,6,Shirt,10,4,1.000000,0.400000,0.571429,4,0,2,0,0,0,4,0,0,0\n"), std::string::npos)
      << csv;
  // A dataset without names leaves the column empty.
  RunRow other = fashion_run();
  other.info.config_json = R"({"data": {"dataset": "synthetic"}})";
  EXPECT_NE(class_report_csv(other, {evaluation(100)}, std::nullopt).find("\n4,100,0,,10,14,"), std::string::npos);
}

}  // namespace
}  // namespace ddplab
