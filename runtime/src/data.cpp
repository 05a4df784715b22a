#include "ddplab/runtime/data.hpp"

#include <algorithm>
#include <cmath>
#include <numeric>
#include <random>

#include <fmt/format.h>

#include "ddplab/core/error.hpp"

namespace ddplab {

Dataset load_fashion_mnist(const std::string& dir, bool train) {
  const std::string prefix = dir + "/" + (train ? "train" : "t10k");
  Dataset d = load_idx(prefix + "-images-idx3-ubyte.gz", prefix + "-labels-idx1-ubyte.gz");
  for (float& x : d.images) x = (x - kFashionMnistMean) / kFashionMnistStd;
  return d;
}

Dataset make_synthetic(int samples, int features, int classes, std::uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::normal_distribution<float> noise(0.0f, 1.0f);
  // Class centres are fixed by a seed of their own so train and test sets share them.
  std::mt19937_64 centre_rng(0x5eed);
  std::vector<float> centres(static_cast<std::size_t>(classes) * features);
  // Centres about 2.8 apart whatever the dimension, against unit noise: learnable, but not trivially.
  const float spread = 2.0f / std::sqrt(static_cast<float>(features));
  for (float& c : centres) c = spread * noise(centre_rng);
  Dataset d;
  d.features = features;
  d.classes = classes;
  d.images.resize(static_cast<std::size_t>(samples) * features);
  d.labels.resize(static_cast<std::size_t>(samples));
  std::uniform_int_distribution<int> pick(0, classes - 1);
  for (int i = 0; i < samples; ++i) {
    const int y = pick(rng);
    d.labels[static_cast<std::size_t>(i)] = y;
    for (int j = 0; j < features; ++j)
      d.images[static_cast<std::size_t>(i) * features + j] =
          centres[static_cast<std::size_t>(y) * features + j] + noise(rng);
  }
  return d;
}

void shuffle_indices(std::vector<std::size_t>& v, std::mt19937_64& rng) {
  for (std::size_t i = v.size(); i > 1; --i) std::swap(v[i - 1], v[rng() % i]);
}

DistributedSampler::DistributedSampler(std::size_t n, int rank, int world, std::uint64_t seed, bool shuffle,
                                       bool drop_last)
    : n_(n),
      per_rank_(drop_last ? n / static_cast<std::size_t>(std::max(world, 1)) : (n + world - 1) / world),
      rank_(rank),
      world_(world),
      seed_(seed),
      shuffle_(shuffle) {
  if (world < 1 || rank < 0 || rank >= world) throw InternalError("DistributedSampler: bad rank/world size");
  if (n == 0) throw DataError("DistributedSampler: empty dataset");
  if (per_rank_ == 0)
    throw DataError("DistributedSampler: " + std::to_string(n) + " samples for " + std::to_string(world) +
                    " ranks leave none per rank with drop_last");
}

std::vector<std::size_t> DistributedSampler::indices(int epoch) const {
  std::vector<std::size_t> perm(n_);
  std::iota(perm.begin(), perm.end(), std::size_t{0});
  if (shuffle_) {
    std::mt19937_64 rng(seed_ + static_cast<std::uint64_t>(epoch));
    shuffle_indices(perm, rng);
  }
  std::vector<std::size_t> mine;
  mine.reserve(per_rank_);
  const std::size_t total = per_rank_ * static_cast<std::size_t>(world_);
  for (std::size_t k = static_cast<std::size_t>(rank_); k < total; k += static_cast<std::size_t>(world_))
    mine.push_back(perm[k % n_]);
  return mine;
}

void gather_batch(const Dataset& d, const std::vector<std::size_t>& idx, std::size_t first, int count, float* images,
                  std::int32_t* labels) {
  const std::size_t f = static_cast<std::size_t>(d.features), y = static_cast<std::size_t>(d.labels_per_sample);
  for (int i = 0; i < count; ++i) {
    const std::size_t s = idx[first + static_cast<std::size_t>(i)];
    std::memcpy(images + static_cast<std::size_t>(i) * f, d.images.data() + s * f, f * sizeof(float));
    std::memcpy(labels + static_cast<std::size_t>(i) * y, d.labels.data() + s * y, y * sizeof(std::int32_t));
  }
}

Dataset load_scenario_data(const Scenario& s, bool train) {
  const int features = s.model.input_features(), classes = s.model.output_classes();
  const bool cnn = s.model.type == ModelType::Cnn;
  if (s.data.dataset == "fortunes") return load_fortunes(s.data.path, s.model.gpt.seq, train);
  Dataset d = s.data.dataset == "synthetic" ? make_synthetic(train ? s.data.synthetic_train : s.data.synthetic_test,
                                                             features, classes, s.train.seed + (train ? 0 : 1))
                                            : load_fashion_mnist(s.data.path, train);
  if (d.features != features)
    throw InputError(fmt::format("{}: {} is {} but dataset {} has {} features per sample", s.path,
                                 cnn ? "model.image (height x width x channels)" : "model.layers[0]", features,
                                 s.data.dataset, d.features));
  if (d.classes != classes)
    throw InputError(fmt::format("{}: {} is {} but dataset {} has {} classes", s.path,
                                 cnn ? "model.classes" : "the last of model.layers", classes, s.data.dataset,
                                 d.classes));
  return d;
}

}  // namespace ddplab
