// Data partitions: every split covers the training set once and is the same on every rank; each has the
// skew it names (Dirichlet's label skew by alpha, exactly K classes per rank, the quantity ratio 1 + skew);
// the samplers take the same number of samples on every rank (drop_last, pad); bad settings name the field.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <set>

#include "ddplab/runtime/data.hpp"
#include "ddplab/runtime/partition.hpp"

namespace ddplab {
namespace {

// 10 classes of unequal sizes (500 to 950 samples), labels interleaved.
Dataset labelled(std::size_t per_class_base = 500) {
  Dataset d;
  d.classes = 10;
  for (int c = 0; c < 10; ++c)
    for (std::size_t i = 0; i < per_class_base + 50 * static_cast<std::size_t>(c); ++i) d.labels.push_back(c);
  std::vector<std::size_t> order(d.labels.size());
  std::iota(order.begin(), order.end(), std::size_t{0});
  std::mt19937_64 rng(3);
  shuffle_indices(order, rng);
  std::vector<std::int32_t> shuffled;
  for (std::size_t i : order) shuffled.push_back(d.labels[i]);
  d.labels = shuffled;
  return d;
}

DataConfig config(const std::string& partition) {
  DataConfig c;
  c.partition = partition;
  return c;
}

void expect_covers_once(const Partition& p, std::size_t n) {
  std::vector<int> seen(n, 0);
  for (const auto& s : p.samples)
    for (std::size_t i : s) ++seen.at(i);
  EXPECT_TRUE(std::all_of(seen.begin(), seen.end(), [](int x) { return x == 1; }))
      << "every sample on exactly one rank";
}

// The mean over ranks of the share of a rank's samples in its largest class: 1/C when balanced, 1 when
// each rank holds one class.
double mean_top_class_share(const std::vector<std::vector<std::size_t>>& hist) {
  double sum = 0;
  for (const auto& h : hist)
    sum += static_cast<double>(*std::max_element(h.begin(), h.end())) /
           static_cast<double>(std::accumulate(h.begin(), h.end(), std::size_t{0}));
  return sum / static_cast<double>(hist.size());
}

TEST(Partition, DirichletCoversOnceIsReproducibleAndSkewsByAlpha) {
  const Dataset d = labelled();
  DataConfig c = config("dirichlet");
  c.alpha = 0.1;
  const Partition p = partition_dataset(d.labels, 10, 4, c, 7);
  expect_covers_once(p, d.size());
  EXPECT_EQ(partition_dataset(d.labels, 10, 4, c, 7).samples, p.samples) << "same seed, same split";
  EXPECT_NE(partition_dataset(d.labels, 10, 4, c, 8).samples, p.samples) << "another seed, another split";
  const double skewed = mean_top_class_share(class_histograms(d, c, 4, 7));
  c.alpha = 1000;
  const double balanced = mean_top_class_share(class_histograms(d, c, 4, 7));
  EXPECT_GT(skewed, 0.35) << "alpha 0.1: a rank's largest class holds about half its samples";
  EXPECT_LT(balanced, 0.16) << "alpha 1000: close to the data's own largest class share (0.13)";
}

TEST(Partition, ShardsGiveEachRankExactlyItsClassesSplitEvenly) {
  const Dataset d = labelled();
  for (int k : {1, 2, 3}) {
    DataConfig c = config("shards");
    c.classes_per_rank = k;
    const Partition p = partition_dataset(d.labels, 10, 4, c, 1);
    const auto hist = class_histograms(d, c, 4, 1);
    for (std::size_t r = 0; r < hist.size(); ++r) {
      EXPECT_EQ(std::count_if(hist[r].begin(), hist[r].end(), [](std::size_t x) { return x > 0; }), k) << "rank " << r;
      for (int j = 0; j < k; ++j) EXPECT_GT(hist[r][static_cast<std::size_t>((static_cast<int>(r) * k + j) % 10)], 0u);
    }
    // A class held by several ranks is dealt out evenly: the holders' counts differ by at most one.
    for (std::size_t cl = 0; cl < 10; ++cl) {
      std::vector<std::size_t> counts;
      for (const auto& h : hist)
        if (h[cl] > 0) counts.push_back(h[cl]);
      if (counts.size() > 1) {
        EXPECT_LE(*std::max_element(counts.begin(), counts.end()) - *std::min_element(counts.begin(), counts.end()),
                  1u);
      }
    }
    std::size_t held = 0;
    for (const auto& s : p.samples) held += s.size();
    std::set<std::size_t> distinct;
    for (const auto& s : p.samples) distinct.insert(s.begin(), s.end());
    EXPECT_EQ(distinct.size(), held) << "no sample on two ranks";
  }
}

TEST(Partition, QuantityRatioIsOnePlusSkew) {
  const Dataset d = labelled();
  for (double skew : {0.0, 0.3, 2.0}) {
    DataConfig c = config("quantity");
    c.skew = skew;
    const Partition p = partition_dataset(d.labels, 10, 4, c, 2);
    expect_covers_once(p, d.size());
    const double ratio = static_cast<double>(p.samples.front().size()) / static_cast<double>(p.samples.back().size());
    EXPECT_NEAR(ratio, 1 + skew, 0.002) << skew;
    for (std::size_t r = 1; r < p.samples.size(); ++r) EXPECT_LE(p.samples[r].size(), p.samples[r - 1].size());
  }
}

TEST(PartitionSampler, DropLastAndPadTakeTheSmallestAndLargestShare) {
  const Dataset d = labelled();
  DataConfig c = config("quantity");
  c.skew = 1.0;
  const Partition p = partition_dataset(d.labels, 10, 3, c, 4);
  for (const char* uneven : {"drop_last", "pad"}) {
    c.uneven = uneven;
    const std::size_t want = c.uneven == "drop_last" ? p.samples.back().size() : p.samples.front().size();
    for (int r = 0; r < 3; ++r) {
      const auto s = make_sampler(d, c, r, 3, 4);
      ASSERT_EQ(s->per_rank(), want) << uneven << " rank " << r;
      const auto e0 = s->indices(0), e1 = s->indices(1);
      ASSERT_EQ(e0.size(), want);
      EXPECT_NE(e0, e1) << "each epoch reshuffles";
      const std::set<std::size_t> held(p.samples[static_cast<std::size_t>(r)].begin(),
                                       p.samples[static_cast<std::size_t>(r)].end());
      const std::set<std::size_t> taken(e0.begin(), e0.end());
      EXPECT_TRUE(std::includes(held.begin(), held.end(), taken.begin(), taken.end())) << "only what the rank holds";
      // Without repeats while it has enough; padding repeats, and uses all it holds.
      EXPECT_EQ(taken.size(), std::min(want, held.size()));
      EXPECT_EQ(s->indices(0), make_sampler(d, c, r, 3, 4)->indices(0)) << "reproducible";
    }
  }
}

// join: each rank takes its whole share; the schedule's steps, active ranks and samples follow the shares.
TEST(PartitionSampler, JoinTakesEachRanksWholeShare) {
  const Dataset d = labelled();
  DataConfig c = config("quantity");
  c.skew = 0.3;
  c.uneven = "join";
  const Partition p = partition_dataset(d.labels, 10, 4, c, 4);
  const JoinSchedule j = join_schedule(d, c, 4, 4, 64);
  for (int r = 0; r < 4; ++r) {
    const std::size_t share = p.samples[static_cast<std::size_t>(r)].size();
    EXPECT_EQ(make_sampler(d, c, r, 4, 4)->per_rank(), share);
    EXPECT_EQ(j.samples[static_cast<std::size_t>(r)], static_cast<std::int64_t>(share));
    EXPECT_EQ(j.steps_of(r), static_cast<std::int64_t>((share + 63) / 64));
  }
  EXPECT_EQ(j.per_epoch(), j.steps_of(0));  // rank 0 holds the most under quantity
  EXPECT_EQ(j.active(0), 4);
  EXPECT_EQ(j.active(j.per_epoch() - 1), 1);
  std::int64_t all = 0;
  for (std::int64_t s = 0; s < j.per_epoch(); ++s) all += j.samples_at(s);
  EXPECT_EQ(all, static_cast<std::int64_t>(d.labels.size()));
}

// An accumulation window that crosses into the next epoch counts a rank that shadows at its start but takes
// a batch again after the epoch boundary: its gradients are in the sync.
TEST(JoinSchedule, WindowsAcrossAnEpochCountEveryRankThatAdds) {
  JoinSchedule j;
  j.batch = 10;
  j.samples = {50, 30, 25};  // 5, 3 and 3 steps: epochs of 5
  EXPECT_EQ(j.per_epoch(), 5);
  EXPECT_EQ(j.active(2), 3);
  EXPECT_EQ(j.active(3), 1);
  EXPECT_EQ(j.active_in(3, 2), 1);   // steps 3, 4: only rank 0
  EXPECT_EQ(j.active_in(4, 2), 3);   // steps 4 and 5 (the next epoch's first): every rank adds
  EXPECT_EQ(j.samples_of(2, 2), 5);  // rank 2's last, short batch
  EXPECT_EQ(j.samples_of(2, 3), 0);
  EXPECT_EQ(j.samples_at(2), 10 + 10 + 5);
}

// resample: every class a rank holds equally likely, whatever its share of the rank's samples; only what
// the rank holds; reproducible, and new each epoch.
TEST(ResampleSampler, DrawsEachHeldClassEquallyOften) {
  const Dataset d = labelled();
  DataConfig c = config("dirichlet");
  c.alpha = 0.3;
  c.balance = "resample";
  const Partition p = partition_dataset(d.labels, 10, 3, c, 4);
  for (int r = 0; r < 3; ++r) {
    const auto s = make_sampler(d, c, r, 3, 4);
    const auto e0 = s->indices(0);
    EXPECT_EQ(e0, make_sampler(d, c, r, 3, 4)->indices(0));
    EXPECT_NE(e0, s->indices(1));
    const auto& held = p.samples[static_cast<std::size_t>(r)];
    const std::set<std::size_t> mine(held.begin(), held.end());
    std::map<std::int32_t, std::size_t> in_share, drawn;
    for (std::size_t i : held) ++in_share[d.labels[i]];
    std::size_t draws = 0;
    for (int epoch = 0; epoch < 20; ++epoch)
      for (std::size_t i : s->indices(epoch)) {
        ASSERT_TRUE(mine.count(i)) << "rank " << r << " drew a sample it does not hold";
        ++drawn[d.labels[i]], ++draws;
      }
    // Each held class near draws / K (5 sigma of a binomial), even one that is 1% of the share.
    const double k = static_cast<double>(in_share.size()), expect = static_cast<double>(draws) / k;
    for (const auto& [cls, n] : in_share)
      EXPECT_NEAR(static_cast<double>(drawn[cls]), expect, 5 * std::sqrt(expect * (1 - 1 / k)))
          << "rank " << r << " class " << cls << " (" << n << " of " << held.size() << " held)";
  }
}

TEST(Balance, ClassWeightsAreScikitLearnsBalanced) {
  // 10 samples of 3 classes held: 6, 3, 1 (and none of a fourth): n / (K n_c).
  const std::vector<float> w = balanced_class_weights({6, 3, 1, 0});
  ASSERT_EQ(w.size(), 4u);
  EXPECT_FLOAT_EQ(w[0], 10.0f / 18.0f);
  EXPECT_FLOAT_EQ(w[1], 10.0f / 9.0f);
  EXPECT_FLOAT_EQ(w[2], 10.0f / 3.0f);
  EXPECT_EQ(w[3], 0.0f);
  for (float v : balanced_class_weights({5, 5, 5})) EXPECT_FLOAT_EQ(v, 1.0f);
  // Weighted, every class held adds the same total weight: n / K.
  EXPECT_FLOAT_EQ(6 * w[0], 1 * w[2]);
}

TEST(DistributedSampler, DropLastTakesTheEvenPartWithoutWrapping) {
  std::set<std::size_t> all;
  for (int r = 0; r < 3; ++r) {
    DistributedSampler s(1000, r, 3, 5, true, true);
    EXPECT_EQ(s.per_rank(), 333u);
    const auto idx = s.indices(0);
    all.insert(idx.begin(), idx.end());
  }
  EXPECT_EQ(all.size(), 999u) << "disjoint, one sample dropped";
  EXPECT_EQ(DistributedSampler(1000, 0, 3, 5).per_rank(), 334u) << "pad (the default) wraps";
}

// The DataError message of splitting `d` over `world` ranks, or "" when it split.
std::string split_error(const Dataset& d, const DataConfig& c, int world) {
  try {
    partition_dataset(d.labels, 10, world, c, 1);
  } catch (const DataError& e) {
    return e.what();
  }
  return "";
}

TEST(Partition, SettingsThatCannotFillEveryRankNameTheField) {
  const Dataset d = labelled();
  DataConfig c = config("shards");
  c.classes_per_rank = 11;
  std::string e = split_error(d, c, 4);
  EXPECT_NE(e.find("data.classes_per_rank = 11"), std::string::npos) << "11 classes per rank of 10: " << e;
  c = config("dirichlet");
  c.alpha = 1e-4;  // each class goes to one rank: 64 ranks and 10 classes leave most empty
  e = split_error(d, c, 64);
  EXPECT_NE(e.find("raise data.alpha"), std::string::npos) << "64 ranks from 10 single-rank classes: " << e;
  c = config("quantity");
  EXPECT_THROW(partition_dataset(std::vector<std::int32_t>{0, 1}, 2, 3, c, 1), DataError);
}

TEST(PartitionTable, NamesTheSplitAndEachRanksClasses) {
  const Dataset d = labelled();
  DataConfig c = config("shards");
  c.uneven = "drop_last";
  const std::string t = partition_table(c, class_histograms(d, c, 2, 1), 123);
  EXPECT_NE(t.find("data: shards, 2 classes per rank, drop_last: every rank takes 123 samples per epoch"),
            std::string::npos)
      << t;
  EXPECT_NE(t.find("class9"), std::string::npos) << t;
  EXPECT_EQ(std::count(t.begin(), t.end(), '\n'), 5) << t;
  EXPECT_NE(t.find("no rank holds class 4 5 6 7 8 9: the model never trains on it"), std::string::npos) << t;
  c.classes_per_rank = 5;
  EXPECT_EQ(partition_table(c, class_histograms(d, c, 2, 1), 123).find("no rank holds"), std::string::npos);
}

}  // namespace
}  // namespace ddplab
