// lars against its formula per tensor (You et al. 2017): the matrix's step is scaled by
// eta ||w|| / (||g|| + wd ||w|| + eps); the bias keeps lr and no weight decay unless exclude_vectors is off.
#include "optimizer_harness.hpp"

namespace ddplab {
namespace {

std::vector<std::vector<double>> lars_reference(const test::UpdateSetup& s, double momentum, double eta, double eps,
                                                bool exclude_vectors) {
  std::vector<double> p(s.p0.begin(), s.p0.end()), buf(s.n(), 0.0);
  std::vector<std::vector<double>> out;
  for (std::size_t t = 0; t < s.grads.size(); ++t) {
    std::vector<double> g(s.grads[t].begin(), s.grads[t].end()), d = g;
    for (const TensorSlice& ts : s.tensors) {
      if (exclude_vectors && ts.cols == 1) continue;
      const double wn = test::norm_of(p, ts), gn = test::norm_of(g, ts);
      const double local = eta * wn / (gn + s.weight_decay * wn + eps);
      for (std::size_t i = ts.offset; i < ts.offset + ts.count(); ++i) d[i] = (g[i] + s.weight_decay * p[i]) * local;
    }
    for (std::size_t i = 0; i < s.n(); ++i) {
      buf[i] = t == 0 ? d[i] : momentum * buf[i] + d[i];
      p[i] -= s.lr * buf[i];
    }
    out.push_back(p);
  }
  return out;
}

TEST(OptimizerLars, TrustRatioPerTensor) {
  test::UpdateSetup s;
  s.lr = 2.0f;
  const auto got = test::run_updates("lars", {{"eta", "0.02"}}, s);
  const auto want = lars_reference(s, 0.9, 0.02, 1e-9, true);
  for (int t = 0; t < 3; ++t) test::expect_params(got[t], want[t], t + 1);
  // The third gradient is the first over ten: the ratio undoes the scale, so the matrix's step does not shrink.
  const auto all = test::run_updates("lars", {{"eta", "0.02"}, {"exclude_vectors", "false"}}, s);
  const auto want_all = lars_reference(s, 0.9, 0.02, 1e-9, false);
  for (int t = 0; t < 3; ++t) test::expect_params(all[t], want_all[t], t + 1);
  EXPECT_NE(all[0][6], got[0][6]);  // the bias took the trust ratio this time
}

TEST(OptimizerLars, NeedsWholeTensors) {
  test::UpdateSetup s;
  s.tensors = {};  // a shard's update lists none
  EXPECT_THROW(test::run_updates("lars", {}, s), InternalError);
}

}  // namespace
}  // namespace ddplab
