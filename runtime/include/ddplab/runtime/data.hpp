// Datasets in host memory (normalised float images, int32 labels) and rank-disjoint sampling.
#pragma once
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <vector>

#include "ddplab/core/error.hpp"
#include "ddplab/core/scenario.hpp"

namespace ddplab {

// A data file that is missing, unreadable or malformed: input (exit 2).
struct DataError : InputError {
  using InputError::InputError;
};

// Images and their classes, or a language model's token sequences (features = seq token ids held as floats,
// labels_per_sample = seq next tokens, classes = the vocabulary).
struct Dataset {
  int features = 0;
  int classes = 0;
  int labels_per_sample = 1;
  std::vector<float> images;         // size() x features, row-major
  std::vector<std::int32_t> labels;  // size() x labels_per_sample
  std::size_t size() const { return labels.size() / static_cast<std::size_t>(labels_per_sample); }
};

// Fashion-MNIST's per-pixel mean and standard deviation over the training set (pixels scaled to [0, 1]).
inline constexpr float kFashionMnistMean = 0.2860f;
inline constexpr float kFashionMnistStd = 0.3530f;

// Reads an IDX image file (magic 2051) and label file (magic 2049), gzip-compressed or not.
// Malformed input (bad magic, truncated data, count mismatch, label out of range) throws DataError naming the file.
Dataset load_idx(const std::string& images_path, const std::string& labels_path);
// train = true: train-*-idx?-ubyte.gz, else t10k-*. Normalised with the constants above.
Dataset load_fashion_mnist(const std::string& dir, bool train);

// Byte-level text from the fortune files in `dir` (Debian's fortunes package): every regular file without
// an extension, in name order, split into fortunes at its "%" lines. Every tenth fortune (the 10th, 20th, ...)
// is held out for validation (train = false), the rest train. Each set's bytes, the fortunes in order and each
// followed by "%\n", are cut into sequences of seq tokens, each labelled with the next seq (the last byte of
// one sequence's labels is the first of the next sequence's input). Throws DataError naming the folder when it
// holds no fortunes.
Dataset load_fortunes(const std::string& dir, int seq, bool train);

// A learnable synthetic task for tests: `classes` Gaussian clusters in `features` dimensions.
Dataset make_synthetic(int samples, int features, int classes, std::uint64_t seed);

// The scenario's training (train = true) or test set: [data] dataset, path and sizes, checked against the
// model's input and class counts (InputError naming the scenario file otherwise).
Dataset load_scenario_data(const Scenario& s, bool train);

// The samples a rank trains on, epoch by epoch; every rank takes per_rank() samples each epoch.
class Sampler {
 public:
  virtual ~Sampler() = default;
  virtual std::vector<std::size_t> indices(int epoch) const = 0;
  virtual std::size_t per_rank() const = 0;
};

// Fisher-Yates with our own draws: std::shuffle's use of the engine is implementation-defined.
void shuffle_indices(std::vector<std::size_t>& v, std::mt19937_64& rng);

// Like torch.utils.data.DistributedSampler (shuffle): each epoch a permutation seeded by seed + epoch; rank r
// takes every world-th index from r. drop_last = false pads by wrapping to a multiple of the world size;
// true drops the tail that does not divide evenly.
class DistributedSampler : public Sampler {
 public:
  DistributedSampler(std::size_t dataset_size, int rank, int world_size, std::uint64_t seed, bool shuffle = true,
                     bool drop_last = false);
  std::vector<std::size_t> indices(int epoch) const override;  // the same length on every rank
  std::size_t per_rank() const override { return per_rank_; }

 private:
  std::size_t n_, per_rank_;
  int rank_, world_;
  std::uint64_t seed_;
  bool shuffle_;
};

// Copies the samples at idx[first, first+count) into contiguous batch buffers (labels: labels_per_sample each).
void gather_batch(const Dataset& d, const std::vector<std::size_t>& idx, std::size_t first, int count, float* images,
                  std::int32_t* labels);

}  // namespace ddplab
