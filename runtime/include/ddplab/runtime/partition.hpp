// How the training set is split across the ranks that train ([data] partition, docs/scenarios.md),
// and the samplers that feed each rank's batches from its share. Every rank computes every rank's share
// from the labels and the seed alone, so no rank needs another's data and rank 0 can print all of them.
#pragma once
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "ddplab/core/join_schedule.hpp"
#include "ddplab/core/scenario.hpp"
#include "ddplab/runtime/data.hpp"

namespace ddplab {

// Whether `d` names a fixed split (dirichlet, shards, quantity) rather than iid's shuffle each epoch.
bool fixed_split(const DataConfig& d);

// A fixed split: which dataset indices each rank holds (by rank, ascending).
struct Partition {
  std::vector<std::vector<std::size_t>> samples;
};

// The split `d.partition` names ("dirichlet", "shards" or "quantity") of `labels` over `world` ranks, drawn
// from `seed`. Each rank holds at least one sample: a Dirichlet draw that leaves a rank empty is drawn
// again, and a split that cannot fill every rank throws DataError naming the [data] field to change.
Partition partition_dataset(const std::vector<std::int32_t>& labels, int classes, int world, const DataConfig& d,
                            std::uint64_t seed);

// A rank's share of a fixed split. Each epoch it shuffles what it holds (seed, epoch and rank), then takes
// `per_rank` of them: the first ones when it holds more (drop_last), wrapping around when it holds fewer (pad).
class PartitionSampler : public Sampler {
 public:
  PartitionSampler(std::vector<std::size_t> held, std::size_t per_rank, int rank, std::uint64_t seed);
  std::vector<std::size_t> indices(int epoch) const override;
  std::size_t per_rank() const override { return per_rank_; }

 private:
  std::vector<std::size_t> held_;
  std::size_t per_rank_;
  int rank_;
  std::uint64_t seed_;
};

// data.balance = "resample": each epoch `per_rank` draws with replacement from what the rank holds, a class
// it holds picked uniformly, then one of that class's samples (torch's WeightedRandomSampler with weights
// 1 / n_c), from seed, epoch and rank.
class ResampleSampler : public Sampler {
 public:
  ResampleSampler(const std::vector<std::size_t>& held, const std::vector<std::int32_t>& labels, std::size_t per_rank,
                  int rank, std::uint64_t seed);
  std::vector<std::size_t> indices(int epoch) const override;
  std::size_t per_rank() const override { return per_rank_; }

 private:
  std::vector<std::vector<std::size_t>> by_class_;  // the held samples of each class held
  std::size_t per_rank_;
  int rank_;
  std::uint64_t seed_;
};

// data.balance = "class_weighted": weights n / (K n_c) for the K classes of a histogram of n samples, 0 for
// the classes it lacks (scikit-learn's "balanced"; a balanced histogram gives all ones).
std::vector<float> balanced_class_weights(const std::vector<std::size_t>& histogram);

// Every rank's sampler as `d` describes it (iid: DistributedSampler), for rank `rank` of `world`. Under
// uneven = "join" each rank takes its own share, whole.
std::unique_ptr<Sampler> make_sampler(const Dataset& train, const DataConfig& d, int rank, int world,
                                      std::uint64_t seed);

// Under uneven = "join": each rank's share, taken `batch` samples a step.
JoinSchedule join_schedule(const Dataset& train, const DataConfig& d, int world, std::uint64_t seed, int batch);

// What each rank holds, by class: for a fixed split its share, for iid the first epoch's indices (a language
// model's sequences count every label token).
std::vector<std::vector<std::size_t>> class_histograms(const Dataset& train, const DataConfig& d, int world,
                                                       std::uint64_t seed);

// The table `ddplab run` prints at the start of a fixed split: what each rank holds, by class, and what it
// takes per epoch (per_epoch: samples; under join, the longest rank's steps).
std::string partition_table(const DataConfig& d, const std::vector<std::vector<std::size_t>>& histograms,
                            std::size_t per_epoch);

}  // namespace ddplab
