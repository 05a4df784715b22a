// Top-k sparsification with error feedback: each rank sends its k largest-magnitude entries (of gradient
// plus residual) as (index, value) pairs through one all-gather; every rank adds all pairs, in rank order,
// into a zeroed dense buffer and divides by the world size, so all ranks get the same bits.
#include <algorithm>
#include <bit>
#include <cmath>
#include <functional>
#include <limits>
#include <stdexcept>

#include "codecs/codec_impl.hpp"
#include "ddplab/core/error.hpp"

namespace ddplab::codec_detail {

std::size_t topk_count(double ratio, std::size_t count) {
  if (count == 0) return 0;
  const double x = ratio * static_cast<double>(count);
  // 0.07 * 100 is 7.000000000000001 in double: treat values that close to an integer as that integer.
  const double nearest = std::round(x);
  const double k = std::abs(x - nearest) <= 1e-9 * std::max(1.0, x) ? nearest : std::ceil(x);
  return std::clamp<std::size_t>(static_cast<std::size_t>(k), 1, count);
}

namespace {

// |v| as an unsigned key that orders as the magnitudes do (IEEE 754 bits of a non-negative float), every NaN
// one key above +inf: NaN first, then larger |v|.
std::uint32_t magnitude_key(float x) {
  const std::uint32_t bits = std::bit_cast<std::uint32_t>(x) & 0x7fffffffu;
  return std::min(bits, 0x7f800001u);
}

}  // namespace

std::vector<std::uint32_t> topk_select(const float* v, std::size_t count, std::size_t k) {
  if (count > std::numeric_limits<std::uint32_t>::max()) throw InputError("topk: bucket too large for 32-bit indices");
  k = std::min(k, count);
  if (k == 0) return {};
  // A radix select: a histogram of the keys' top 15 bits finds the bin that holds the k-th largest, and only
  // that bin's keys are selected among. Its passes over memory cost about the same whatever the values; a
  // comparison-based select over all indices varies several-fold with them. Small buckets skip the histogram.
  constexpr int kLowBits = 16;
  constexpr std::size_t kBins = (0x7f800001u >> kLowBits) + 1;
  std::vector<std::uint32_t> candidates;  // the keys among which the k-th largest is
  std::size_t above = 0;                  // keys larger than every candidate
  if (count < kBins) {
    candidates.resize(count);
    for (std::size_t i = 0; i < count; ++i) candidates[i] = magnitude_key(v[i]);
  } else {
    std::vector<std::uint32_t> hist(kBins, 0);
    for (std::size_t i = 0; i < count; ++i) ++hist[magnitude_key(v[i]) >> kLowBits];
    std::size_t bin = kBins - 1;
    while (above + hist[bin] < k) above += hist[bin--];
    candidates.reserve(hist[bin]);
    for (std::size_t i = 0; i < count; ++i)
      if (const std::uint32_t key = magnitude_key(v[i]); key >> kLowBits == bin) candidates.push_back(key);
  }
  const auto kth = candidates.begin() + static_cast<std::ptrdiff_t>(k - above - 1);
  std::nth_element(candidates.begin(), kth, candidates.end(), std::greater<>());
  const std::uint32_t threshold = *kth;
  // Keys above the threshold all go; equal ones fill what is left, lower indices first (a strict total
  // order: the same selection whatever the algorithm).
  std::size_t ties =
      k - above -
      static_cast<std::size_t>(std::count_if(candidates.begin(), kth, [&](std::uint32_t x) { return x > threshold; }));
  std::vector<std::uint32_t> idx;
  idx.reserve(k);
  for (std::size_t i = 0; i < count && idx.size() < k; ++i) {
    const std::uint32_t key = magnitude_key(v[i]);
    if (key > threshold || (key == threshold && ties > 0 && ties--)) idx.push_back(static_cast<std::uint32_t>(i));
  }
  return idx;
}

std::vector<CollectiveCall> TopkCodec::plan(const BucketLayout& bucket, int world_size, std::int64_t) const {
  if (bucket.count == 0) return {};
  const std::size_t n = bucket.count, k = topk_count(ratio_, n), world = static_cast<std::size_t>(world_size);
  CollectiveCall call{Collective::AllGather, ElemType::IndexValue, k, "topk", {}, {}};
  // Encode (as run() does it): the residual add, the selection, this rank's pairs into every slot, and the
  // residual keeping what is not sent.
  if (error_feedback_) call.before.push_back({WorkKind::Add, n});
  call.before.push_back({WorkKind::TopK, n, 0, k});
  for (std::size_t r = 1; r < world; ++r) call.before.push_back({WorkKind::Copy, k * sizeof(IndexValue)});
  if (error_feedback_) {
    call.before.push_back({WorkKind::Copy, n * sizeof(float)});
    call.before.push_back({WorkKind::ZeroAt, k});
  }
  // Decode: every rank's pairs summed into a zeroed bucket, then the average.
  call.after = {{WorkKind::Fill, n}, {WorkKind::ScatterAdd, n, world, k}, {WorkKind::Divide, n}};
  return {call};
}

void TopkCodec::run(const BucketLayout& bucket, float* grad, int world_size, std::int64_t step,
                    const CollectiveFn& collective, CodecCompute& compute) {
  const auto calls = plan(bucket, world_size, step);
  if (calls.empty()) return;
  const std::size_t n = bucket.count, k = calls[0].count, world = static_cast<std::size_t>(world_size);
  if (n > std::numeric_limits<std::uint32_t>::max()) throw InputError("topk: bucket too large for 32-bit indices");

  // acc = grad + residual, in place in grad.
  float* residual = nullptr;
  if (error_feedback_) {
    residual = ensure_floats(residual_[bucket.id], compute, n);  // zeros on the first step, or a new shape
    compute.add(grad, residual, n);
  }

  // The codec does not know its rank, so its k pairs go into every rank's slot: the all-gather overwrites
  // the other slots, and this rank's slot (rank * k) holds its pairs whatever the rank.
  CodecBuffer wire(compute, world * k * sizeof(IndexValue));
  IndexValue* pairs = wire.as<IndexValue>();
  compute.topk(grad, n, k, pairs);
  for (std::size_t r = 1; r < world; ++r) compute.copy(pairs + r * k, pairs, k * sizeof(IndexValue));

  // The residual keeps what was not sent.
  if (residual) {
    compute.copy(residual, grad, n * sizeof(float));
    compute.zero_at(residual, pairs, k);
  }

  collective(calls[0], pairs);

  // Decode: sum every rank's pairs in rank order, then average.
  compute.fill(grad, n, 0.0f);
  compute.scatter_add(grad, n, pairs, world, k);
  compute.divide(grad, n, static_cast<float>(world_size));
}

const std::vector<float>* TopkCodec::residual(int bucket_id) const {
  const auto it = residual_.find(bucket_id);
  return it == residual_.end() ? nullptr : host_view(it->second, residual_view_[bucket_id]);
}

Codec::State TopkCodec::state() const {
  State out;
  std::vector<float> host;
  for (const auto& [id, buf] : residual_)
    if (host_view(buf, host)) out[std::to_string(id) + "/residual"] = host;
  return out;
}

std::size_t TopkCodec::state_bytes(const BucketLayout& bucket, int, std::int64_t) const {
  return error_feedback_ && bucket.count > 0 ? bucket.count * sizeof(float) : 0;  // the residual
}

void TopkCodec::restore(const State& state) {
  std::map<int, CodecBuffer> next;  // checked whole before any state is replaced
  for (const auto& [key, values] : state) {
    std::string name;
    next[state_bucket(key, this->name(), {"residual"}, name)] = host_buffer(values);
  }
  residual_ = std::move(next);
  residual_view_.clear();
}

std::vector<OptionSpec> topk_options() {
  return {{"ratio", OptionKind::Number, 0, 1, true, "0.01", "0.1", "share of the bucket's entries sent"},
          {"error_feedback", OptionKind::Boolean, 0, 1, false, "true", "false",
           "add what was not sent to the next step's gradient"}};
}

std::unique_ptr<Codec> make_topk(const CodecOptions& options, std::uint64_t) {
  const auto specs = topk_options();
  return std::make_unique<TopkCodec>(option_number(specs, options, "ratio"),
                                     option_bool(specs, options, "error_feedback"));
}

}  // namespace ddplab::codec_detail
