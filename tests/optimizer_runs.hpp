// Test helpers shared by the executor tests: every registry optimizer at a learning rate that trains the
// tests' small MLPs, and a model's parameters in PyTorch's order whatever layout an executor gave them.
#pragma once
#include <initializer_list>
#include <string>
#include <vector>

#include "ddplab/runtime/model.hpp"
#include "ddplab/runtime/ops.hpp"
#include "ddplab/strategies/optimizer.hpp"

namespace ddplab::test {

// Every registry optimizer (SGD-like ones at lr 0.05, the adaptive ones at 1e-3), then each of `clipped`
// again with global-norm clipping at 0.05, small enough to clip.
inline std::vector<OptimizerConfig> optimizer_runs(std::initializer_list<const char*> clipped) {
  std::vector<OptimizerConfig> runs;
  for (const OptimizerInfo& o : optimizers()) {
    OptimizerConfig oc;
    oc.name = o.name;
    oc.lr = LrPlan::constant(o.name == "sgd" || o.name == "lars" ? 0.05 : 1e-3);
    runs.push_back(oc);
  }
  for (const char* name : clipped)
    for (std::size_t i = 0; i < optimizers().size(); ++i)
      if (runs[i].name == name) {
        runs.push_back(runs[i]);
        runs.back().clip_grad_norm = 0.05;
      }
  return runs;
}

inline std::vector<float> params_in_order(Ops& ops, Model& model) {
  std::vector<float> flat(model.num_params()), out;
  ops.to_host(flat.data(), model.params(), flat.size());
  for (const ParamInfo& p : model.param_info())
    out.insert(out.end(), flat.begin() + static_cast<std::ptrdiff_t>(p.offset),
               flat.begin() + static_cast<std::ptrdiff_t>(p.offset + p.count));
  return out;
}

}  // namespace ddplab::test
