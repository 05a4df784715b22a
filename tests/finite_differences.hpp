// Central finite differences of a model's loss, one parameter tensor at a time, against the gradients
// backward gave (host-memory backends: parameters are perturbed in place); and a model's gradients on two
// backends, with accumulation.
#pragma once
#include <algorithm>
#include <cmath>
#include <functional>
#include <vector>

#include <gtest/gtest.h>

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

// cpu and ref: the same model with the same parameters on two backends. Their gradients on one batch (x, y)
// agree within agree_abs + agree_rel |ref|, and a second micro-step on cpu, accumulated, gives twice its
// gradient within twice_abs + twice_rel |once|.
inline void expect_backends_agree_and_accumulation_adds(Model& cpu, Model& ref, const float* x, const std::int32_t* y,
                                                        int batch, double agree_abs, double agree_rel, double twice_abs,
                                                        double twice_rel) {
  for (Model* m : {&cpu, &ref}) {
    m->forward(x, batch);
    m->backward(y);
  }
  for (std::size_t i = 0; i < cpu.num_params(); ++i)
    ASSERT_NEAR(cpu.grads()[i], ref.grads()[i], agree_abs + agree_rel * std::abs(ref.grads()[i])) << i;
  const std::vector<float> once(cpu.grads(), cpu.grads() + cpu.num_params());
  cpu.forward(x, batch);
  cpu.loss_grad(y);
  for (int l = cpu.num_layers() - 1; l >= 0; --l) cpu.backward_layer(l, true);
  for (std::size_t i = 0; i < once.size(); ++i)
    ASSERT_NEAR(cpu.grads()[i], 2 * once[i], twice_abs + twice_rel * std::abs(once[i])) << i;
}

}  // namespace ddplab::test
