#include "ddplab/runtime/evaluation.hpp"

#include <algorithm>
#include <cmath>

#include "ddplab/core/class_metrics.hpp"

namespace ddplab {

Evaluation evaluate(Model& model, Ops& ops, const Dataset& test, Communicator& comm, int batch) {
  const int classes = model.classes(), per = model.labels_per_sample();
  const std::size_t n = test.size(), r = static_cast<std::size_t>(comm.rank()),
                    w = static_cast<std::size_t>(comm.size());
  const std::size_t first = n * r / w, last = n * (r + 1) / w;
  // Accumulator layout: confusion (classes^2), then loss sum, then sample count.
  std::vector<double> acc(static_cast<std::size_t>(classes * classes) + 2, 0.0);
  DeviceBuffer x(ops, static_cast<std::size_t>(batch) * test.features);
  const std::size_t rows = static_cast<std::size_t>(batch) * static_cast<std::size_t>(per);
  std::int32_t* y = ops.alloc_labels(rows);
  std::vector<float> host_x(static_cast<std::size_t>(batch) * test.features), logits(rows * classes);
  std::vector<std::int32_t> host_y(rows);
  std::vector<std::size_t> idx(last - first);
  model.set_training(false);  // batch norm: running statistics
  for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = first + i;
  for (std::size_t at = 0; at < idx.size(); at += static_cast<std::size_t>(batch)) {
    const int b = static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(batch), idx.size() - at));
    gather_batch(test, idx, at, b, host_x.data(), host_y.data());
    ops.to_device(x.data(), host_x.data(), static_cast<std::size_t>(b) * test.features);
    const int n = b * per;  // loss rows: samples, or a language model's tokens
    ops.labels_to_device(y, host_y.data(), static_cast<std::size_t>(n));
    const float* out = model.forward(x.data(), b);
    acc[acc.size() - 2] += model.loss(y) * n;
    acc.back() += n;
    ops.to_host(logits.data(), out, static_cast<std::size_t>(n) * classes);
    for (int i = 0; i < n; ++i) {
      const float* row = logits.data() + static_cast<std::size_t>(i) * classes;
      const int pred = static_cast<int>(std::max_element(row, row + classes) - row);
      acc[static_cast<std::size_t>(host_y[static_cast<std::size_t>(i)] * classes + pred)] += 1;
    }
  }
  ops.free_labels(y);
  model.set_training(true);
  comm.allreduce_sum(acc.data(), acc.size());
  Evaluation e;
  e.test_loss = acc.back() > 0 ? acc[acc.size() - 2] / acc.back() : 0.0;
  e.classes = classes;
  for (auto it = acc.begin(); it != acc.end() - 2; ++it)
    e.confusion.push_back(std::llround(*it));  // counts, exact in double
  const ClassMetrics m = class_metrics(e.confusion, classes);
  e.test_accuracy = m.accuracy;
  e.macro_precision = m.macro_precision;
  e.macro_recall = m.macro_recall;
  if (per > 1) {  // a language model: next-token accuracy; its vocabulary-square confusion is not stored
    e.classes = 0;
    e.confusion.clear();
  }
  return e;
}

}  // namespace ddplab
