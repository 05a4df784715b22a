// Runs a registry optimizer (strategies/optimizer.hpp) for a few updates on host memory, over one 2 x 3
// matrix and one bias of 2, so that each optimizer's test can check the parameters after every update
// against its formula written out in double.
#pragma once
#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include "ddplab/strategies/codec_compute.hpp"
#include "ddplab/strategies/optimizer.hpp"

namespace ddplab::test {

struct UpdateSetup {
  std::vector<float> p0 = {0.5f, -1.0f, 0.25f, 2.0f, -0.75f, 0.1f, 0.3f, -0.2f};
  // One gradient per update; the third is the first scaled down, so moments see a change of scale.
  std::vector<std::vector<float>> grads = {{0.1f, 0.2f, -0.3f, 0.05f, 0.4f, -0.1f, 0.02f, -0.6f},
                                           {-0.2f, 0.1f, 0.3f, -0.4f, 0.05f, 0.2f, 0.1f, 0.3f},
                                           {0.01f, 0.02f, -0.03f, 0.005f, 0.04f, -0.01f, 0.002f, -0.06f}};
  std::vector<TensorSlice> tensors = {{0, 2, 3}, {6, 2, 1}};
  float lr = 0.1f, weight_decay = 0.01f, grad_scale = 1.0f;
  std::size_t n() const { return p0.size(); }
};

// The parameters after each update.
inline std::vector<std::vector<float>> run_updates(const std::string& name, const OptionValues& options,
                                                   const UpdateSetup& s, CodecCompute& c = host_codec_compute()) {
  const auto optimizer = make_optimizer(name, options);
  const OptimizerInfo& info = *find_optimizer(name);
  const std::size_t bytes = s.n() * sizeof(float);
  std::vector<CodecBuffer> state;
  for (int i = 0; i < info.state_slots; ++i) state.emplace_back(c, bytes);
  CodecBuffer p(c, bytes), g(c, bytes), scratch(c, info.scratch ? bytes : 0);
  c.upload(p.get(), s.p0.data(), bytes);
  std::vector<std::vector<float>> out;
  for (std::size_t t = 0; t < s.grads.size(); ++t) {
    c.upload(g.get(), s.grads[t].data(), bytes);
    OptimizerUpdate u;
    u.params = p.as<float>();
    u.grads = g.as<float>();
    for (CodecBuffer& b : state) u.state.push_back(b.as<float>());
    u.scratch = info.scratch ? scratch.as<float>() : nullptr;
    u.count = s.n();
    u.tensors = s.tensors;
    u.t = static_cast<std::int64_t>(t) + 1;
    u.lr = s.lr;
    u.weight_decay = s.weight_decay;
    u.grad_scale = s.grad_scale;
    optimizer->update(u, c);
    out.emplace_back(s.n());
    c.download(out.back().data(), p.get(), bytes);
  }
  return out;
}

// got (float, after update t) against want (double), relative to the parameter's size.
inline void expect_params(const std::vector<float>& got, const std::vector<double>& want, int t, double tol = 2e-6) {
  ASSERT_EQ(got.size(), want.size());
  for (std::size_t i = 0; i < got.size(); ++i)
    EXPECT_NEAR(got[i], want[i], tol * (1.0 + std::abs(want[i]))) << "update " << t << ", element " << i;
}

inline double norm_of(const std::vector<double>& x, const TensorSlice& t) {
  double s = 0;
  for (std::size_t i = t.offset; i < t.offset + t.count(); ++i) s += x[i] * x[i];
  return std::sqrt(s);
}

}  // namespace ddplab::test
