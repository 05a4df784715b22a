// Test-set evaluation split across ranks: each rank scores a disjoint slice, the confusion matrix and the
// loss sum are summed with one allreduce, and every rank gets the same result.
#pragma once
#include "ddplab/core/store.hpp"
#include "ddplab/runtime/communicator.hpp"
#include "ddplab/runtime/data.hpp"
#include "ddplab/runtime/mlp.hpp"

namespace ddplab {

// step and wall_s are left for the caller to fill.
Evaluation evaluate(Mlp& model, Ops& ops, const Dataset& test, Communicator& comm, int batch);

// From a classes x classes confusion matrix (row = true label, column = prediction): accuracy and the
// unweighted means over classes of precision and recall (a class never predicted has precision 0).
void confusion_metrics(const std::vector<double>& confusion, int classes, Evaluation& out);

}  // namespace ddplab
