#include "ddplab/runtime/evaluation.hpp"

#include <algorithm>

namespace ddplab {

void confusion_metrics(const std::vector<double>& m, int classes, Evaluation& out) {
  double total = 0, correct = 0, precision = 0, recall = 0;
  for (int t = 0; t < classes; ++t)
    for (int p = 0; p < classes; ++p) total += m[static_cast<std::size_t>(t * classes + p)];
  for (int c = 0; c < classes; ++c) {
    double tp = m[static_cast<std::size_t>(c * classes + c)], predicted = 0, actual = 0;
    for (int k = 0; k < classes; ++k) {
      predicted += m[static_cast<std::size_t>(k * classes + c)];
      actual += m[static_cast<std::size_t>(c * classes + k)];
    }
    correct += tp;
    precision += predicted > 0 ? tp / predicted : 0.0;
    recall += actual > 0 ? tp / actual : 0.0;
  }
  out.test_accuracy = total > 0 ? correct / total : 0.0;
  out.macro_precision = precision / classes;
  out.macro_recall = recall / classes;
}

Evaluation evaluate(Mlp& model, Ops& ops, const Dataset& test, Communicator& comm, int batch) {
  const int classes = model.classes();
  const std::size_t n = test.size(), r = static_cast<std::size_t>(comm.rank()), w = static_cast<std::size_t>(comm.size());
  const std::size_t first = n * r / w, last = n * (r + 1) / w;
  // Accumulator layout: confusion (classes^2), then loss sum, then sample count.
  std::vector<double> acc(static_cast<std::size_t>(classes * classes) + 2, 0.0);
  DeviceBuffer x(ops, static_cast<std::size_t>(batch) * test.features);
  std::int32_t* y = ops.alloc_labels(static_cast<std::size_t>(batch));
  std::vector<float> host_x(static_cast<std::size_t>(batch) * test.features), logits(static_cast<std::size_t>(batch) * classes);
  std::vector<std::int32_t> host_y(static_cast<std::size_t>(batch));
  std::vector<std::size_t> idx(last - first);
  for (std::size_t i = 0; i < idx.size(); ++i) idx[i] = first + i;
  for (std::size_t at = 0; at < idx.size(); at += static_cast<std::size_t>(batch)) {
    const int b = static_cast<int>(std::min<std::size_t>(static_cast<std::size_t>(batch), idx.size() - at));
    gather_batch(test, idx, at, b, host_x.data(), host_y.data());
    ops.to_device(x.data(), host_x.data(), static_cast<std::size_t>(b) * test.features);
    ops.labels_to_device(y, host_y.data(), static_cast<std::size_t>(b));
    const float* out = model.forward(x.data(), b);
    acc[acc.size() - 2] += model.loss(y) * b;
    acc.back() += b;
    ops.to_host(logits.data(), out, static_cast<std::size_t>(b) * classes);
    for (int i = 0; i < b; ++i) {
      const float* row = logits.data() + static_cast<std::size_t>(i) * classes;
      const int pred = static_cast<int>(std::max_element(row, row + classes) - row);
      acc[static_cast<std::size_t>(host_y[static_cast<std::size_t>(i)] * classes + pred)] += 1;
    }
  }
  ops.free_labels(y);
  comm.allreduce_sum(acc.data(), acc.size());
  Evaluation e;
  e.test_loss = acc.back() > 0 ? acc[acc.size() - 2] / acc.back() : 0.0;
  confusion_metrics(std::vector<double>(acc.begin(), acc.end() - 2), classes, e);
  return e;
}

}  // namespace ddplab
