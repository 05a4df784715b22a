#include "ddplab/runtime/partition.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <numeric>
#include <random>
#include <stdexcept>

#include <fmt/format.h>

#include "ddplab/core/error.hpp"

namespace ddplab {
namespace {

// Draws that leave a rank empty before a Dirichlet split gives up (as FedML and NIID-Bench redraw).
constexpr int kDirichletDraws = 100;

std::vector<std::vector<std::size_t>> by_class(const std::vector<std::int32_t>& labels, int classes) {
  std::vector<std::vector<std::size_t>> out(static_cast<std::size_t>(classes));
  for (std::size_t i = 0; i < labels.size(); ++i) out[static_cast<std::size_t>(labels[i])].push_back(i);
  return out;
}

// Splits `v` into consecutive runs whose sizes follow `weights` (largest remainders get the leftovers).
std::vector<std::vector<std::size_t>> split_by(const std::vector<std::size_t>& v, const std::vector<double>& weights) {
  if (weights.empty()) throw InternalError("split_by: no weights");
  const double total = std::accumulate(weights.begin(), weights.end(), 0.0);
  std::vector<std::size_t> sizes(weights.size());
  std::vector<std::pair<double, std::size_t>> rest;
  std::size_t used = 0;
  for (std::size_t r = 0; r < weights.size(); ++r) {
    const double exact = static_cast<double>(v.size()) * weights[r] / total;
    sizes[r] = static_cast<std::size_t>(std::floor(exact));
    used += sizes[r];
    rest.emplace_back(exact - std::floor(exact), r);
  }
  std::stable_sort(rest.begin(), rest.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  for (std::size_t i = 0; used < v.size(); ++i, ++used) ++sizes[rest[i % rest.size()].second];
  std::vector<std::vector<std::size_t>> out(weights.size());
  std::size_t at = 0;
  for (std::size_t r = 0; r < weights.size(); ++r) {
    out[r].assign(v.begin() + static_cast<std::ptrdiff_t>(at), v.begin() + static_cast<std::ptrdiff_t>(at + sizes[r]));
    at += sizes[r];
  }
  return out;
}

bool every_rank_holds_some(const Partition& p) {
  return std::none_of(p.samples.begin(), p.samples.end(), [](const auto& s) { return s.empty(); });
}

Partition dirichlet(const std::vector<std::int32_t>& labels, int classes, int world, double alpha,
                    std::mt19937_64& rng) {
  const auto classes_idx = by_class(labels, classes);
  std::gamma_distribution<double> gamma(alpha, 1.0);
  for (int draw = 0; draw < kDirichletDraws; ++draw) {
    Partition p;
    p.samples.resize(static_cast<std::size_t>(world));
    for (auto idx : classes_idx) {
      shuffle_indices(idx, rng);
      std::vector<double> w(static_cast<std::size_t>(world));
      for (double& x : w) x = gamma(rng);
      if (std::accumulate(w.begin(), w.end(), 0.0) <= 0) w[rng() % w.size()] = 1.0;  // all underflowed: alpha -> 0
      const auto parts = split_by(idx, w);
      for (std::size_t r = 0; r < parts.size(); ++r)
        p.samples[r].insert(p.samples[r].end(), parts[r].begin(), parts[r].end());
    }
    if (every_rank_holds_some(p)) return p;
  }
  throw DataError(
      fmt::format("data.partition = \"dirichlet\" with data.alpha = {} left a rank of {} without samples in "
                  "{} draws; raise data.alpha or train on fewer ranks",
                  alpha, world, kDirichletDraws));
}

Partition shards(const std::vector<std::int32_t>& labels, int classes, int world, int per_rank, std::mt19937_64& rng) {
  if (per_rank > classes)
    throw DataError(fmt::format("data.classes_per_rank = {} is more than the dataset's {} classes", per_rank, classes));
  // Rank r holds classes rK, rK+1, ..., rK+K-1 (mod C); each class's samples are dealt to its holders in turn.
  std::vector<std::vector<int>> holders(static_cast<std::size_t>(classes));
  for (int r = 0; r < world; ++r)
    for (int j = 0; j < per_rank; ++j) holders[static_cast<std::size_t>((r * per_rank + j) % classes)].push_back(r);
  Partition p;
  p.samples.resize(static_cast<std::size_t>(world));
  auto classes_idx = by_class(labels, classes);
  for (std::size_t c = 0; c < classes_idx.size(); ++c) {
    if (holders[c].empty()) continue;  // fewer ranks x classes_per_rank than classes: nobody trains on it
    shuffle_indices(classes_idx[c], rng);
    const auto parts = split_by(classes_idx[c], std::vector<double>(holders[c].size(), 1.0));
    for (std::size_t h = 0; h < parts.size(); ++h) {
      auto& mine = p.samples[static_cast<std::size_t>(holders[c][h])];
      mine.insert(mine.end(), parts[h].begin(), parts[h].end());
    }
  }
  if (!every_rank_holds_some(p))
    throw DataError(
        fmt::format("data.partition = \"shards\" with data.classes_per_rank = {} leaves a rank of {} without "
                    "samples: its classes have fewer samples than holders",
                    per_rank, world));
  return p;
}

Partition quantity(std::size_t n, int world, double skew, std::mt19937_64& rng) {
  if (n < static_cast<std::size_t>(world))
    throw DataError(fmt::format("data.partition = \"quantity\": {} samples for {} ranks", n, world));
  std::vector<std::size_t> all(n);
  std::iota(all.begin(), all.end(), std::size_t{0});
  shuffle_indices(all, rng);
  // Shares fall geometrically from rank 0 to the last rank, which holds 1 / (1 + skew) of rank 0's amount.
  std::vector<double> w(static_cast<std::size_t>(world));
  for (int r = 0; r < world; ++r)
    w[static_cast<std::size_t>(r)] = world == 1 ? 1.0 : std::pow(1.0 + skew, -static_cast<double>(r) / (world - 1));
  Partition p{split_by(all, w)};
  if (!every_rank_holds_some(p))
    throw DataError(fmt::format("data.partition = \"quantity\" with data.skew = {} leaves a rank of {} without samples",
                                skew, world));
  return p;
}

}  // namespace

bool fixed_split(const DataConfig& d) { return d.partition != "iid"; }

Partition partition_dataset(const std::vector<std::int32_t>& labels, int classes, int world, const DataConfig& d,
                            std::uint64_t seed) {
  if (world < 1) throw InputError("partition_dataset: world size must be >= 1");
  // A stream of its own, so the split does not move when the epochs' shuffles change.
  std::mt19937_64 rng(seed ^ 0x9e3779b97f4a7c15ull);
  Partition p;
  if (d.partition == "dirichlet")
    p = dirichlet(labels, classes, world, d.alpha, rng);
  else if (d.partition == "shards")
    p = shards(labels, classes, world, d.classes_per_rank, rng);
  else if (d.partition == "quantity")
    p = quantity(labels.size(), world, d.skew, rng);
  else
    throw InternalError("partition_dataset: not a fixed split: \"" + d.partition + "\"");
  for (auto& s : p.samples) std::sort(s.begin(), s.end());
  return p;
}

PartitionSampler::PartitionSampler(std::vector<std::size_t> held, std::size_t per_rank, int rank, std::uint64_t seed)
    : held_(std::move(held)), per_rank_(per_rank), rank_(rank), seed_(seed) {
  if (held_.empty()) throw DataError(fmt::format("rank {} holds no samples", rank));
}

std::vector<std::size_t> PartitionSampler::indices(int epoch) const {
  std::vector<std::size_t> order = held_;
  std::mt19937_64 rng(seed_ + static_cast<std::uint64_t>(epoch) * 0x100000001b3ull + static_cast<std::uint64_t>(rank_));
  shuffle_indices(order, rng);
  std::vector<std::size_t> out(per_rank_);
  for (std::size_t i = 0; i < per_rank_; ++i) out[i] = order[i % order.size()];
  return out;
}

std::unique_ptr<Sampler> make_sampler(const Dataset& train, const DataConfig& d, int rank, int world,
                                      std::uint64_t seed) {
  if (!fixed_split(d))
    return std::make_unique<DistributedSampler>(train.size(), rank, world, seed, true, d.uneven == "drop_last");
  Partition p = partition_dataset(train.labels, train.classes, world, d, seed);
  std::size_t lo = train.size(), hi = 0;
  for (const auto& s : p.samples) lo = std::min(lo, s.size()), hi = std::max(hi, s.size());
  std::vector<std::size_t> mine = std::move(p.samples[static_cast<std::size_t>(rank)]);
  const std::size_t per_rank = d.uneven == "join" ? mine.size() : d.uneven == "drop_last" ? lo : hi;
  if (d.balance == "resample") return std::make_unique<ResampleSampler>(mine, train.labels, per_rank, rank, seed);
  return std::make_unique<PartitionSampler>(std::move(mine), per_rank, rank, seed);
}

ResampleSampler::ResampleSampler(const std::vector<std::size_t>& held, const std::vector<std::int32_t>& labels,
                                 std::size_t per_rank, int rank, std::uint64_t seed)
    : per_rank_(per_rank), rank_(rank), seed_(seed) {
  std::map<std::int32_t, std::vector<std::size_t>> classes;
  for (std::size_t i : held) classes[labels.at(i)].push_back(i);
  for (auto& [label, idx] : classes) by_class_.push_back(std::move(idx));
  if (by_class_.empty()) throw DataError(fmt::format("rank {} holds no samples", rank));
}

std::vector<std::size_t> ResampleSampler::indices(int epoch) const {
  // A stream apart from PartitionSampler's shuffles; modulo draws (our own, as shuffle_indices').
  std::mt19937_64 rng(seed_ ^ (0xa0761d6478bd642full + static_cast<std::uint64_t>(epoch) * 0x100000001b3ull +
                               static_cast<std::uint64_t>(rank_)));
  std::vector<std::size_t> out(per_rank_);
  for (std::size_t& i : out) {
    const auto& cls = by_class_[rng() % by_class_.size()];
    i = cls[rng() % cls.size()];
  }
  return out;
}

std::vector<float> balanced_class_weights(const std::vector<std::size_t>& histogram) {
  std::size_t n = 0, k = 0;
  for (std::size_t c : histogram) n += c, k += c > 0;
  std::vector<float> w(histogram.size(), 0.0f);
  for (std::size_t c = 0; c < histogram.size(); ++c)
    if (histogram[c] > 0)
      w[c] = static_cast<float>(static_cast<double>(n) / (static_cast<double>(k) * static_cast<double>(histogram[c])));
  return w;
}

JoinSchedule join_schedule(const Dataset& train, const DataConfig& d, int world, std::uint64_t seed, int batch) {
  if (d.uneven != "join" || batch < 1) throw InternalError("join_schedule: data.uneven is not \"join\"");
  JoinSchedule j;
  j.batch = batch;
  for (const auto& s : partition_dataset(train.labels, train.classes, world, d, seed).samples)
    j.samples.push_back(static_cast<std::int64_t>(s.size()));
  return j;
}

std::vector<std::vector<std::size_t>> class_histograms(const Dataset& train, const DataConfig& d, int world,
                                                       std::uint64_t seed) {
  std::vector<std::vector<std::size_t>> held;
  if (!fixed_split(d))
    for (int r = 0; r < world; ++r)
      held.push_back(DistributedSampler(train.size(), r, world, seed, true, d.uneven == "drop_last").indices(0));
  else
    held = partition_dataset(train.labels, train.classes, world, d, seed).samples;
  std::vector<std::vector<std::size_t>> hist(held.size(),
                                             std::vector<std::size_t>(static_cast<std::size_t>(train.classes), 0));
  const auto per = static_cast<std::size_t>(train.labels_per_sample);  // a sequence counts each of its tokens
  for (std::size_t r = 0; r < held.size(); ++r)
    for (std::size_t i : held[r])
      for (std::size_t k = 0; k < per; ++k) ++hist[r][static_cast<std::size_t>(train.labels[i * per + k])];
  return hist;
}

std::string partition_table(const DataConfig& d, const std::vector<std::vector<std::size_t>>& histograms,
                            std::size_t per_epoch) {
  const std::string parameter = d.partition == "dirichlet"  ? fmt::format(", alpha {}", d.alpha)
                                : d.partition == "shards"   ? fmt::format(", {} classes per rank", d.classes_per_rank)
                                : d.partition == "quantity" ? fmt::format(", skew {}", d.skew)
                                                            : "";
  const std::string balance = d.balance == "none" ? "" : fmt::format(", balance {}", d.balance);
  std::string out =
      d.uneven == "join"
          ? fmt::format(
                "data: {}{}{}, join: each rank takes what it holds, {} steps an epoch for the longest; a rank "
                "done early shadows the syncs with zeros, which divide by {}\n",
                d.partition, parameter, balance, per_epoch,
                d.join_divide_by_initial ? "every rank" : "the ranks still training")
          : fmt::format("data: {}{}{}, {}: every rank takes {} samples per epoch\n", d.partition, parameter, balance,
                        d.uneven, per_epoch);
  out += fmt::format("{:>6} {:>8} ", "rank", "holds");
  for (std::size_t c = 0; c < (histograms.empty() ? 0 : histograms[0].size()); ++c)
    out += fmt::format(" {:>6}", fmt::format("class{}", c));
  for (std::size_t r = 0; r < histograms.size(); ++r) {
    const auto& h = histograms[r];
    out += fmt::format("\n{:>6} {:>8} ", r, std::accumulate(h.begin(), h.end(), std::size_t{0}));
    for (std::size_t c : h) out += fmt::format(" {:>6}", c);
  }
  std::string unheld;
  for (std::size_t c = 0; c < (histograms.empty() ? 0 : histograms[0].size()); ++c)
    if (std::all_of(histograms.begin(), histograms.end(), [&](const auto& h) { return h[c] == 0; }))
      unheld += fmt::format(" {}", c);
  if (!unheld.empty()) out += fmt::format("\nno rank holds class{}: the model never trains on it", unheld);
  return out + "\n";
}

}  // namespace ddplab
