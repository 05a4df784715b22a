#include "ddplab/core/class_metrics.hpp"

#include <algorithm>
#include <stdexcept>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "ddplab/core/error.hpp"

namespace ddplab {
namespace {

// The evaluation asked for, with its metrics, or a message naming what is missing.
const Evaluation& pick(const RunRow& run, const std::vector<Evaluation>& evals, std::optional<std::int64_t> step) {
  const Evaluation* found = nullptr;
  for (const Evaluation& e : evals)
    if (!step || e.step == *step) found = &e;
  if (!found) {
    std::string steps;
    for (const Evaluation& e : evals) steps += (steps.empty() ? "" : ", ") + std::to_string(e.step);
    throw InputError(step ? fmt::format("run {} has no evaluation at step {} (it has: {})", run.id, *step,
                                        steps.empty() ? "none" : steps)
                          : fmt::format("run {} has no evaluation", run.id));
  }
  if (found->confusion.empty())
    throw InputError(
        fmt::format("run {}'s evaluation at step {} has no confusion matrix (stored before schema "
                    "version 5); run it again for per-class metrics",
                    run.id, found->step));
  return *found;
}

std::string dataset_of(const RunRow& run) {
  const auto cfg = nlohmann::json::parse(run.info.config_json, nullptr, false);
  const auto* data = cfg.is_object() && cfg.contains("data") ? &cfg["data"] : nullptr;
  return data && data->contains("dataset") && (*data)["dataset"].is_string() ? (*data)["dataset"].get<std::string>()
                                                                             : "";
}

}  // namespace

std::vector<std::vector<std::int64_t>> confusion_rows(const Evaluation& e) {
  std::vector<std::vector<std::int64_t>> rows;
  for (int t = 0; t < e.classes; ++t)
    rows.emplace_back(e.confusion.begin() + t * e.classes, e.confusion.begin() + (t + 1) * e.classes);
  return rows;
}

ClassMetrics class_metrics(const std::vector<std::int64_t>& m, int classes) {
  if (classes < 1 || m.size() != static_cast<std::size_t>(classes) * static_cast<std::size_t>(classes))
    throw InputError(
        fmt::format("a confusion matrix of {} classes needs {} counts, got {}", classes, classes * classes, m.size()));
  if (std::any_of(m.begin(), m.end(), [](std::int64_t v) { return v < 0; }))
    throw InputError("a confusion matrix holds counts: a negative entry");
  ClassMetrics out;
  out.classes = classes;
  const auto at = [&](int t, int p) { return m[static_cast<std::size_t>(t * classes + p)]; };
  std::int64_t total = 0, correct = 0;
  for (int c = 0; c < classes; ++c) {
    std::int64_t support = 0, predicted = 0;
    for (int k = 0; k < classes; ++k) support += at(c, k), predicted += at(k, c);
    const double tp = static_cast<double>(at(c, c));
    const double p = predicted > 0 ? tp / static_cast<double>(predicted) : 0.0;
    const double r = support > 0 ? tp / static_cast<double>(support) : 0.0;
    out.support.push_back(support);
    out.predicted.push_back(predicted);
    out.precision.push_back(p);
    out.recall.push_back(r);
    out.f1.push_back(p + r > 0 ? 2 * p * r / (p + r) : 0.0);
    total += support;
    correct += at(c, c);
  }
  out.accuracy = total > 0 ? static_cast<double>(correct) / static_cast<double>(total) : 0.0;
  for (int c = 0; c < classes; ++c) {
    out.macro_precision += out.precision[static_cast<std::size_t>(c)] / classes;
    out.macro_recall += out.recall[static_cast<std::size_t>(c)] / classes;
    out.macro_f1 += out.f1[static_cast<std::size_t>(c)] / classes;
  }
  return out;
}

std::vector<std::string> class_names(const std::string& dataset, int classes) {
  if (dataset == "fashion-mnist" && classes == 10)
    return {"T-shirt/top", "Trouser", "Pullover", "Dress", "Coat", "Sandal", "Shirt", "Sneaker", "Bag", "Ankle boot"};
  return {};
}

std::string class_report_text(const RunRow& run, const std::vector<Evaluation>& evals,
                              std::optional<std::int64_t> step) {
  const Evaluation& e = pick(run, evals, step);
  const ClassMetrics m = class_metrics(e.confusion, e.classes);
  const auto names = class_names(dataset_of(run), e.classes);
  std::string out =
      fmt::format("run {} ({} / {}, {} ranks), evaluation after step {} ({:.1f} s): accuracy {:.4f}\n", run.id,
                  run.info.scenario, run.info.strategy, run.info.world_size, e.step, e.wall_s, m.accuracy);
  out += fmt::format("{:<16} {:>8} {:>10} {:>10} {:>8}\n", "class", "support", "precision", "recall", "f1");
  for (int c = 0; c < m.classes; ++c) {
    const auto i = static_cast<std::size_t>(c);
    const std::string label = names.empty() ? std::to_string(c) : fmt::format("{} {}", c, names[i]);
    out += fmt::format("{:<16} {:>8} {:>10.4f} {:>10.4f} {:>8.4f}\n", label, m.support[i], m.precision[i], m.recall[i],
                       m.f1[i]);
  }
  out += fmt::format("{:<16} {:>8} {:>10.4f} {:>10.4f} {:>8.4f}\n", "macro", "", m.macro_precision, m.macro_recall,
                     m.macro_f1);
  out += "confusion (rows: true class, columns: predicted class)\n     ";
  for (int p = 0; p < m.classes; ++p) out += fmt::format(" {:>5}", p);
  out += "\n";
  for (int t = 0; t < m.classes; ++t) {
    out += fmt::format("{:>5}", t);
    for (int p = 0; p < m.classes; ++p)
      out += fmt::format(" {:>5}", e.confusion[static_cast<std::size_t>(t * m.classes + p)]);
    out += "\n";
  }
  int worst = 0;
  for (int c = 1; c < m.classes; ++c)
    if (m.f1[static_cast<std::size_t>(c)] < m.f1[static_cast<std::size_t>(worst)]) worst = c;
  std::int64_t confused = -1;
  int with = -1;
  for (int p = 0; p < m.classes; ++p)
    if (p != worst && e.confusion[static_cast<std::size_t>(worst * m.classes + p)] > confused)
      confused = e.confusion[static_cast<std::size_t>(worst * m.classes + p)], with = p;
  const auto name = [&](int c) {
    return names.empty() ? std::to_string(c) : fmt::format("{} ({})", c, names[static_cast<std::size_t>(c)]);
  };
  if (m.classes > 1)
    out += fmt::format("weakest: class {}, f1 {:.4f}; {} of its {} samples were taken for class {}\n", name(worst),
                       m.f1[static_cast<std::size_t>(worst)], confused, m.support[static_cast<std::size_t>(worst)],
                       name(with));
  return out;
}

std::string class_report_csv(const RunRow& run, const std::vector<Evaluation>& evals,
                             std::optional<std::int64_t> step) {
  const Evaluation& e = pick(run, evals, step);
  const ClassMetrics m = class_metrics(e.confusion, e.classes);
  const auto names = class_names(dataset_of(run), e.classes);
  std::string out = "run,step,class,name,support,predicted,precision,recall,f1";
  for (int p = 0; p < m.classes; ++p) out += fmt::format(",predicted_{}", p);
  out += "\n";
  for (int c = 0; c < m.classes; ++c) {
    const auto i = static_cast<std::size_t>(c);
    out += fmt::format("{},{},{},{},{},{},{:.6f},{:.6f},{:.6f}", run.id, e.step, c, names.empty() ? "" : names[i],
                       m.support[i], m.predicted[i], m.precision[i], m.recall[i], m.f1[i]);
    for (int p = 0; p < m.classes; ++p)
      out += fmt::format(",{}", e.confusion[static_cast<std::size_t>(c * m.classes + p)]);
    out += "\n";
  }
  return out;
}

}  // namespace ddplab
