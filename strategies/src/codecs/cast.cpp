// The dense codecs: `none` (float32 allreduce) and `fp16` / `bf16` (allreduce in half precision), the
// latter two following PyTorch's fp16_compress_hook / bf16_compress_hook, except that the division by the
// world size happens in float before the cast (one rounding, and no overflow for |g| > 65504 that the
// average brings back in range). No error feedback, as in PyTorch.
#include <vector>

#include "codecs/codec_impl.hpp"
#include "ddplab/core/error.hpp"

namespace ddplab::codec_detail {
namespace {

void require_no_options(const std::string& codec, const CodecOptions& options) {
  // make_codec already rejects unknown keys; this guards direct calls through CodecInfo::make.
  if (!options.empty())
    throw InputError("codec " + codec + ": unknown option \"" + options.begin()->first + "\" (it takes no options)",
                     options.begin()->first);
}

class NoneCodec final : public Codec {
 public:
  std::string name() const override { return "none"; }
  std::vector<CollectiveCall> plan(const BucketLayout& bucket, int, std::int64_t) const override {
    if (bucket.count == 0) return {};
    return {{Collective::Allreduce, ElemType::F32, bucket.count, "none", {}, {{WorkKind::Divide, bucket.count}}}};
  }
  using Codec::run;
  void run(const BucketLayout& bucket, float* grad, int world_size, std::int64_t step, const CollectiveFn& collective,
           CodecCompute& compute) override {
    const auto calls = plan(bucket, world_size, step);
    if (calls.empty()) return;
    collective(calls[0], grad);
    compute.divide(grad, bucket.count, static_cast<float>(world_size));
  }
};

// fp16 and bf16 differ only in the element type and its conversions.
class CastCodec final : public Codec {
 public:
  explicit CastCodec(ElemType type) : type_(type) {}
  std::string name() const override { return type_ == ElemType::F16 ? "fp16" : "bf16"; }
  std::vector<CollectiveCall> plan(const BucketLayout& bucket, int, std::int64_t) const override {
    if (bucket.count == 0) return {};
    const std::size_t n = bucket.count;
    return {{Collective::Allreduce,
             type_,
             n,
             name(),
             {{WorkKind::Divide, n}, {WorkKind::ToHalf, n, 0, 0, type_}},
             {{WorkKind::FromHalf, n, 0, 0, type_}}}};
  }
  using Codec::run;
  void run(const BucketLayout& bucket, float* grad, int world_size, std::int64_t step, const CollectiveFn& collective,
           CodecCompute& compute) override {
    const auto calls = plan(bucket, world_size, step);
    if (calls.empty()) return;
    const std::size_t n = bucket.count;
    CodecBuffer wire(compute, n * sizeof(std::uint16_t));
    // grad is overwritten by the decoded average below, so it can hold the scaled values meanwhile.
    compute.divide(grad, n, static_cast<float>(world_size));
    compute.to_half(type_, grad, wire.as<std::uint16_t>(), n);
    collective(calls[0], wire.get());
    compute.from_half(type_, wire.as<std::uint16_t>(), grad, n);
  }

 private:
  ElemType type_;
};

}  // namespace

std::unique_ptr<Codec> make_none(const CodecOptions& options, std::uint64_t) {
  require_no_options("none", options);
  return std::make_unique<NoneCodec>();
}
std::unique_ptr<Codec> make_fp16(const CodecOptions& options, std::uint64_t) {
  require_no_options("fp16", options);
  return std::make_unique<CastCodec>(ElemType::F16);
}
std::unique_ptr<Codec> make_bf16(const CodecOptions& options, std::uint64_t) {
  require_no_options("bf16", options);
  return std::make_unique<CastCodec>(ElemType::BF16);
}

}  // namespace ddplab::codec_detail
