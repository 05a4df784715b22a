// Per-class metrics of an evaluation, from its confusion matrix (row = true class, column = prediction):
// the one definition of accuracy, precision, recall and F1 that the runtime stores and `ddplab report
// --classes RUN` prints. A class never predicted has precision 0 and one absent from the test set recall 0
// (scikit-learn's zero_division = 0); F1 is 2PR / (P + R), 0 when both are 0. Macro values are the
// unweighted means over classes.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "ddplab/core/store.hpp"

namespace ddplab {

struct ClassMetrics {
  int classes = 0;
  std::vector<std::int64_t> support, predicted;  // per class: its test samples, and the predictions of it
  std::vector<double> precision, recall, f1;
  double accuracy = 0, macro_precision = 0, macro_recall = 0, macro_f1 = 0;
};

// An evaluation's confusion matrix as rows (row = true class), as stored and exported.
std::vector<std::vector<std::int64_t>> confusion_rows(const Evaluation& e);

// Throws InputError unless confusion holds classes x classes non-negative counts.
ClassMetrics class_metrics(const std::vector<std::int64_t>& confusion, int classes);

// The class names of a dataset ("fashion-mnist": T-shirt/top ... Ankle boot), or none.
std::vector<std::string> class_names(const std::string& dataset, int classes);

// The evaluation of `run` at its step `step` (the last one when unset): its per-class table and its
// confusion matrix. Throws InputError when the run has no such evaluation, or none with a
// confusion matrix (stores older than schema version 5).
std::string class_report_text(const RunRow& run, const std::vector<Evaluation>& evaluations,
                              std::optional<std::int64_t> step);
std::string class_report_csv(const RunRow& run, const std::vector<Evaluation>& evaluations,
                             std::optional<std::int64_t> step);

}  // namespace ddplab
