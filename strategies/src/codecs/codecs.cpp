// The codec registry, element types, wire accounting and option parsing shared by every codec.
#include <charconv>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "codecs/codec_impl.hpp"

namespace ddplab {

std::size_t elem_bytes(ElemType t) {
  switch (t) {
    case ElemType::F32: return 4;
    case ElemType::F16: return 2;
    case ElemType::BF16: return 2;
    case ElemType::IndexValue: return 8;
  }
  throw std::invalid_argument("elem_bytes: unknown element type");
}

const char* elem_name(ElemType t) {
  switch (t) {
    case ElemType::F32: return "f32";
    case ElemType::F16: return "f16";
    case ElemType::BF16: return "bf16";
    case ElemType::IndexValue: return "index_value";
  }
  return "unknown";
}

void Codec::run(const BucketLayout& bucket, float* grad, int world_size, std::int64_t step, const CollectiveFn& collective) {
  run(bucket, grad, world_size, step, collective, host_codec_compute());
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
      {"fp16", "divide by the world size, cast to IEEE half, allreduce in half, cast back (no error feedback)", {}, make_fp16},
      {"bf16", "divide by the world size, cast to bfloat16, allreduce in bfloat16, cast back (no error feedback)", {}, make_bf16},
      {"topk",
       "send the k = ceil(ratio * count) largest-magnitude entries as (index, value) pairs via all-gather, with error feedback",
       {"ratio", "error_feedback"},
       make_topk},
      {"powersgd",
       "PowerSGD low-rank compression of matrices (P = MQ, Q = M^T P, two allreduces), as PyTorch's powerSGD_hook",
       {"rank", "start_iter", "min_compression_rate", "warm_start", "error_feedback", "orthogonalization_epsilon"},
       make_powersgd},
  };
  return all;
}

std::unique_ptr<Codec> make_codec(const std::string& name, const CodecOptions& options, std::uint64_t seed) {
  std::string known;
  for (const auto& info : codecs()) {
    known += (known.empty() ? "" : ", ") + info.name;
    if (info.name != name) continue;
    // Unknown keys first, so a typo is reported as such rather than silently ignored.
    for (const auto& [key, value] : options) {
      bool ok = false;
      for (const auto& k : info.options) ok = ok || k == key;
      if (ok) continue;
      std::string keys;
      for (const auto& k : info.options) keys += (keys.empty() ? "" : ", ") + k;
      throw std::invalid_argument("codec " + name + ": unknown option \"" + key + "\" (" +
                                  (keys.empty() ? std::string("it takes no options") : "known: " + keys) + ")");
    }
    return info.make(options, seed);
  }
  throw std::invalid_argument("unknown codec \"" + name + "\" (known: " + known + ")");
}

namespace codec_detail {

float* ensure_floats(CodecBuffer& buf, CodecCompute& compute, std::size_t n) {
  const std::size_t bytes = n * sizeof(float);
  if (buf.empty() || buf.bytes() != bytes) {
    buf = CodecBuffer(compute, bytes);  // zero-filled
  } else if (buf.compute() != &compute) {
    std::vector<float> host(n);
    buf.compute()->download(host.data(), buf.get(), bytes);
    buf = CodecBuffer(compute, bytes);
    compute.upload(buf.get(), host.data(), bytes);
  }
  return buf.as<float>();
}

const std::vector<float>* host_view(const CodecBuffer& buf, std::vector<float>& view) {
  if (buf.empty()) return nullptr;
  view.resize(buf.bytes() / sizeof(float));
  buf.compute()->download(view.data(), buf.get(), buf.bytes());
  return &view;
}

void bad_option(const std::string& codec, const std::string& key, const std::string& what, const std::string& text) {
  throw std::invalid_argument("codec " + codec + ": " + key + " must be " + what + ", got \"" + text + "\"");
}

bool find_option(const CodecOptions& options, const std::string& key, std::string& text) {
  const auto it = options.find(key);
  if (it == options.end()) return false;
  text = it->second;
  return true;
}

double parse_number(const std::string& codec, const std::string& key, const std::string& text, const std::string& what) {
  double v = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || ptr != end || !std::isfinite(v)) bad_option(codec, key, what, text);
  return v;
}

long long parse_integer(const std::string& codec, const std::string& key, const std::string& text, const std::string& what) {
  long long v = 0;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || ptr != end) bad_option(codec, key, what, text);
  return v;
}

bool parse_bool(const std::string& codec, const std::string& key, const std::string& text) {
  if (text == "true" || text == "1") return true;
  if (text == "false" || text == "0") return false;
  bad_option(codec, key, "true or false", text);
}

}  // namespace codec_detail
}  // namespace ddplab
