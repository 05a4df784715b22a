// Private to the codecs: option parsing, the small dense linear algebra PowerSGD needs, the top-k
// selection (host versions, which host_codec_compute() runs), state buffers, and the stateful codec
// classes (declared here so unit tests can look at their state).
#pragma once
#include <cstddef>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ddplab/strategies/codec.hpp"
#include "ddplab/strategies/codec_compute.hpp"

namespace ddplab::codec_detail {

using ddplab::IndexValue;  // the wire element of ElemType::IndexValue (codec_compute.hpp)

// ---- codec state in a compute's memory (codecs.cpp) ----
// Makes `buf` hold n floats in `compute` and returns them: zero-filled when it was empty or of another
// size; moved over through the host when another compute made it (same values).
float* ensure_floats(CodecBuffer& buf, CodecCompute& compute, std::size_t n);
// Checkpoints: a host buffer holding `values` (ensure_floats moves it to the compute that uses it), and
// the bucket id of a state key "BUCKET/NAME" whose NAME is `name` (-1 for another name). Throws
// InputError for a key of another form.
CodecBuffer host_buffer(const std::vector<float>& values);
int state_bucket(const std::string& key, const std::string& codec, const std::vector<std::string>& names,
                 std::string& name);
// For tests: a host copy of a state buffer, kept in `view` (nullptr when buf is empty). The pointer stays
// valid until the next call with the same view.
const std::vector<float>* host_view(const CodecBuffer& buf, std::vector<float>& view);

// ---- options (each codec's file): its typed codec_options, checked by make_codec before the factory ----
std::vector<OptionSpec> topk_options();
std::vector<OptionSpec> powersgd_options();

std::unique_ptr<Codec> make_none(const CodecOptions& options, std::uint64_t seed);
std::unique_ptr<Codec> make_fp16(const CodecOptions& options, std::uint64_t seed);
std::unique_ptr<Codec> make_bf16(const CodecOptions& options, std::uint64_t seed);
std::unique_ptr<Codec> make_topk(const CodecOptions& options, std::uint64_t seed);
std::unique_ptr<Codec> make_powersgd(const CodecOptions& options, std::uint64_t seed);

// ---- dense linear algebra on row-major float matrices (lowrank.cpp); sums accumulate in double ----
// p (n x k) = m (n x c) * q (c x k)
void matmul(const float* m, const float* q, float* p, std::size_t n, std::size_t c, std::size_t k);
// q (c x k) = m^T * p, m being n x c and p n x k
void matmul_tn(const float* m, const float* p, float* q, std::size_t n, std::size_t c, std::size_t k);
// m (n x c) = p (n x k) * q^T, q being c x k
void matmul_nt(const float* p, const float* q, float* m, std::size_t n, std::size_t c, std::size_t k);
// Gram-Schmidt on the k columns of a (n x k), left to right, in double: each column loses its projections
// on the earlier ones (twice, for stability), then col /= (|col| + epsilon). A zero column stays zero.
void orthogonalize(float* a, std::size_t n, std::size_t k, float epsilon);
double orthogonalize_flops(std::size_t n, std::size_t k);
// Standard normal samples from a splitmix64 stream and Box-Muller: same seed, same values everywhere.
void fill_standard_normal(float* out, std::size_t count, std::uint64_t seed);
std::uint64_t mix_seed(std::uint64_t a, std::uint64_t b);

// ---- top-k (topk.cpp) ----
// k = max(1, ceil(ratio * count)), at most count; ratio * count within 1e-9 of an integer counts as it.
std::size_t topk_count(double ratio, std::size_t count);
// Indices of the k entries of largest |v| (NaN counts as largest; ties go to the lower index), ascending.
std::vector<std::uint32_t> topk_select(const float* v, std::size_t count, std::size_t k);

class TopkCodec final : public Codec {
 public:
  TopkCodec(double ratio, bool error_feedback) : ratio_(ratio), error_feedback_(error_feedback) {}
  std::string name() const override { return "topk"; }
  std::vector<CollectiveCall> plan(const BucketLayout& bucket, int world_size, std::int64_t step) const override;
  using Codec::run;
  void run(const BucketLayout& bucket, float* grad, int world_size, std::int64_t step, const CollectiveFn& collective,
           CodecCompute& compute) override;
  // The error-feedback residual of a bucket (nullptr before its first step or without error feedback), as
  // a host copy valid until the next call for the same bucket.
  const std::vector<float>* residual(int bucket_id) const;
  State state() const override;
  void restore(const State& state) override;
  std::size_t state_bytes(const BucketLayout& bucket, int world_size, std::int64_t step) const override;

 private:
  double ratio_;
  bool error_feedback_;
  std::map<int, CodecBuffer> residual_;
  mutable std::map<int, std::vector<float>> residual_view_;
};

struct PowerSgdOptions {
  std::size_t rank = 1;
  std::int64_t start_iter = 1000;
  double min_compression_rate = 2.0;
  bool warm_start = true;
  bool error_feedback = true;
  float orthogonalization_epsilon = 0.0f;
};

class PowerSgdCodec final : public Codec {
 public:
  PowerSgdCodec(const PowerSgdOptions& o, std::uint64_t seed) : o_(o), seed_(seed) {}
  std::string name() const override { return "powersgd"; }
  std::vector<CollectiveCall> plan(const BucketLayout& bucket, int world_size, std::int64_t step) const override;
  std::vector<PlanChange> plan_changes() const override;
  using Codec::run;
  void run(const BucketLayout& bucket, float* grad, int world_size, std::int64_t step, const CollectiveFn& collective,
           CodecCompute& compute) override;

  // Which tensors of a bucket are compressed, and the sizes of the P and Q buffers.
  struct Split {
    std::vector<std::size_t> compressed, uncompressed;  // indices into bucket.tensors
    std::vector<std::size_t> ranks;                     // per compressed tensor: min(rows, cols, rank)
    std::size_t uncompressed_count = 0, p_count = 0, q_count = 0;
  };
  Split split(const BucketLayout& bucket) const;
  // State for tests: the residual and the (warm-start) Q buffer of a bucket, nullptr when absent, as host
  // copies valid until the next call of the same accessor for the same bucket.
  const std::vector<float>* residual(int bucket_id) const;
  const std::vector<float>* q_memory(int bucket_id) const;
  State state() const override;
  void restore(const State& state) override;
  std::size_t state_bytes(const BucketLayout& bucket, int world_size, std::int64_t step) const override;

 private:
  struct BucketState {
    CodecBuffer residual, q;  // in the compute's memory; empty when absent
    CodecBuffer input;        // scratch for gradient + residual, kept so that a step allocates nothing this big
  };
  struct View {
    std::vector<float> residual, q;
  };
  PowerSgdOptions o_;
  std::uint64_t seed_;
  std::map<int, BucketState> state_;
  mutable std::map<int, View> view_;
};

}  // namespace ddplab::codec_detail
