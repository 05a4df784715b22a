// The codec registry, element types, wire accounting and option parsing shared by every codec.
#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "codecs/codec_impl.hpp"
#include "ddplab/core/error.hpp"

namespace ddplab {

std::size_t elem_bytes(ElemType t) {
  switch (t) {
    case ElemType::F32:
      return 4;
    case ElemType::F16:
      return 2;
    case ElemType::BF16:
      return 2;
    case ElemType::IndexValue:
      return 8;
  }
  throw InternalError("elem_bytes: unknown element type");
}

const char* elem_name(ElemType t) {
  switch (t) {
    case ElemType::F32:
      return "f32";
    case ElemType::F16:
      return "f16";
    case ElemType::BF16:
      return "bf16";
    case ElemType::IndexValue:
      return "index_value";
  }
  return "unknown";
}

void Codec::run(const BucketLayout& bucket, float* grad, int world_size, std::int64_t step,
                const CollectiveFn& collective) {
  run(bucket, grad, world_size, step, collective, host_codec_compute());
}

void Codec::restore(const State& state) {
  if (!state.empty())
    throw InputError("codec " + name() + " keeps no state between steps, but was given \"" + state.begin()->first +
                     "\"");
}

std::size_t Codec::wire_bytes(const BucketLayout& bucket, int world_size, std::int64_t step) const {
  std::size_t bytes = 0;
  for (const auto& call : plan(bucket, world_size, step)) bytes += call.count * elem_bytes(call.type);
  return bytes;
}

const std::vector<CodecInfo>& codecs() {
  using namespace codec_detail;
  static const std::vector<CodecInfo> all = {
      {"none", "plain float32 allreduce of the bucket, then divide by the world size", {}, make_none},
      {"fp16",
       "divide by the world size, cast to IEEE half, allreduce in half, cast back (no error feedback)",
       {},
       make_fp16},
      {"bf16",
       "divide by the world size, cast to bfloat16, allreduce in bfloat16, cast back (no error feedback)",
       {},
       make_bf16},
      {"topk",
       "send the k = ceil(ratio * count) largest-magnitude entries as (index, value) pairs via all-gather, with error "
       "feedback",
       topk_options(), make_topk},
      {"powersgd",
       "PowerSGD low-rank compression of matrices (P = MQ, Q = M^T P, two allreduces), as PyTorch's powerSGD_hook",
       powersgd_options(), make_powersgd},
  };
  return all;
}

std::unique_ptr<Codec> make_codec(const std::string& name, const CodecOptions& options, std::uint64_t seed) {
  std::string known;
  for (const auto& info : codecs()) {
    known += (known.empty() ? "" : ", ") + info.name;
    if (info.name != name) continue;
    check_options("codec " + name, info.options, options);
    return info.make(options, seed);
  }
  throw InputError("unknown codec \"" + name + "\" (known: " + known + ")");
}

namespace codec_detail {

float* ensure_floats(CodecBuffer& buf, CodecCompute& compute, std::size_t n) {
  const std::size_t bytes = n * sizeof(float);
  if (buf.empty() || buf.bytes() != bytes) {
    buf = CodecBuffer(compute, bytes);  // zero-filled
  } else if (buf.compute() != &compute.owner()) {
    std::vector<float> host(n);
    buf.compute()->download(host.data(), buf.get(), bytes);
    buf = CodecBuffer(compute, bytes);
    compute.upload(buf.get(), host.data(), bytes);
  }
  return buf.as<float>();
}

CodecBuffer host_buffer(const std::vector<float>& values) {
  CodecCompute& host = host_codec_compute();
  CodecBuffer buf(host, values.size() * sizeof(float));
  if (!values.empty()) host.upload(buf.get(), values.data(), values.size() * sizeof(float));
  return buf;
}

int state_bucket(const std::string& key, const std::string& codec, const std::vector<std::string>& names,
                 std::string& name) {
  const auto slash = key.find('/');
  std::size_t used = 0;
  int bucket = -1;
  try {
    bucket = std::stoi(key.substr(0, slash), &used);
  } catch (const std::exception&) {
    used = 0;
  }
  if (slash == std::string::npos || used != slash || bucket < 0)
    throw InputError("codec " + codec + ": state key \"" + key + "\" is not BUCKET/NAME");
  name = key.substr(slash + 1);
  if (std::find(names.begin(), names.end(), name) == names.end())
    throw InputError("codec " + codec + ": unknown state \"" + key + "\"");
  return bucket;
}

const std::vector<float>* host_view(const CodecBuffer& buf, std::vector<float>& view) {
  if (buf.empty()) return nullptr;
  view.resize(buf.bytes() / sizeof(float));
  buf.compute()->download(view.data(), buf.get(), buf.bytes());
  return &view;
}

}  // namespace codec_detail
}  // namespace ddplab
