// Central finite differences of a model's loss, one parameter tensor at a time, against the gradients
// backward gave (host-memory backends: parameters are perturbed in place).
#pragma once
#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

#include "ddplab/runtime/model.hpp"

namespace ddplab::test {

struct FdResult {
  double max_err = 0;   // largest |numeric - analytic| over the tensor
  double max_grad = 0;  // largest |numeric|: the tensor's gradient signal
};

inline FdResult finite_differences(Model& model, const ParamInfo& p, const std::vector<float>& analytic, float eps,
                                   const std::function<double()>& loss) {
  FdResult r;
  for (std::size_t k = 0; k < p.count; ++k) {
    float& w = model.params()[p.offset + k];
    const float saved = w;
    w = saved + eps;
    const double up = loss();
    w = saved - eps;
    const double down = loss();
    w = saved;
    const double numeric = (up - down) / (2.0 * eps);
    r.max_err = std::max(r.max_err, std::abs(numeric - analytic[p.offset + k]));
    r.max_grad = std::max(r.max_grad, std::abs(numeric));
  }
  return r;
}

}  // namespace ddplab::test
