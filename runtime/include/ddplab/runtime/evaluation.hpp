// Test-set evaluation split across ranks: each rank scores a disjoint slice, the confusion matrix and the
// loss sum are summed with one allreduce, and every rank gets the same result.
#pragma once
#include "ddplab/core/store.hpp"
#include "ddplab/runtime/communicator.hpp"
#include "ddplab/runtime/data.hpp"
#include "ddplab/runtime/model.hpp"

namespace ddplab {

// The confusion matrix, with accuracy and macro precision and recall from it (class_metrics.hpp); step and
// wall_s are left for the caller to fill.
Evaluation evaluate(Model& model, Ops& ops, const Dataset& test, Communicator& comm, int batch);

}  // namespace ddplab
