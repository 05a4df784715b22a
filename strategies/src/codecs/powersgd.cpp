// PowerSGD (Vogels et al. 2019) with the semantics of PyTorch's PowerSGDState / powerSGD_hook:
//  - before start_iter: plain float32 allreduce of the bucket, averaged; the codec state is not touched;
//  - then, per bucket: add the residual (error feedback) and keep a copy of that input;
//    tensors not worth compressing (vectors, or rows*cols <= min_compression_rate * (rows+cols)*r, with
//    r = min(rows, cols, rank)) travel in one float32 allreduce and are averaged;
//    for each compressed matrix M: orthogonalize Q (random standard normal on the first compressed step,
//    or at every step without warm start; else the previous step's Q), P = M Q, allreduce all P's,
//    orthogonalize each P, Q = M^T P, allreduce all Q's, Q /= world, M_hat = P Q^T;
//  - residual = input - output over the whole bucket, as PyTorch's `input_tensor_cp - input_tensor`
//    (so uncompressed tensors keep local - average, which sums to zero over ranks).
#include <limits>
#include <algorithm>
#include <stdexcept>
#include <vector>

#include <fmt/format.h>

#include "codecs/codec_impl.hpp"
#include "ddplab/core/error.hpp"

namespace ddplab::codec_detail {

PowerSgdCodec::Split PowerSgdCodec::split(const BucketLayout& bucket) const {
  Split s;
  for (std::size_t t = 0; t < bucket.tensors.size(); ++t) {
    const TensorSlice& ts = bucket.tensors[t];
    if (ts.offset + ts.count() > bucket.count)
      throw InternalError("powersgd: tensor " + std::to_string(t) + " of bucket " + std::to_string(bucket.id) +
                          " lies outside the bucket");
    const std::size_t r = std::min({ts.rows, ts.cols, o_.rank});
    // PyTorch's _should_compress: compressed_size * min_compression_rate < uncompressed_size (strict).
    const bool compress =
        ts.cols > 1 && r > 0 &&
        static_cast<double>((ts.rows + ts.cols) * r) * o_.min_compression_rate < static_cast<double>(ts.count());
    if (compress) {
      s.compressed.push_back(t);
      s.ranks.push_back(r);
      s.p_count += ts.rows * r;
      s.q_count += ts.cols * r;
    } else {
      s.uncompressed.push_back(t);
      s.uncompressed_count += ts.count();
    }
  }
  return s;
}

std::vector<CollectiveCall> PowerSgdCodec::plan(const BucketLayout& bucket, int, std::int64_t step) const {
  if (bucket.count == 0) return {};
  const std::size_t n = bucket.count;
  if (step < o_.start_iter)
    return {{Collective::Allreduce, ElemType::F32, n, "powersgd.allreduce", {}, {{WorkKind::Divide, n}}}};
  // The local work of run(), call by call.
  const Split s = split(bucket);
  std::vector<LocalWork> pending;  // work before the next collective
  if (o_.error_feedback) pending = {{WorkKind::Add, n}, {WorkKind::Copy, n * sizeof(float)}};
  std::vector<CollectiveCall> calls;
  if (s.uncompressed_count > 0) {
    CollectiveCall flat{Collective::Allreduce,   ElemType::F32,      s.uncompressed_count,
                        "powersgd.uncompressed", std::move(pending), {}};
    pending.clear();
    for (std::size_t t : s.uncompressed)
      flat.before.push_back({WorkKind::Copy, bucket.tensors[t].count() * sizeof(float)});
    flat.after.push_back({WorkKind::Divide, s.uncompressed_count});
    for (std::size_t t : s.uncompressed)
      flat.after.push_back({WorkKind::Copy, bucket.tensors[t].count() * sizeof(float)});
    calls.push_back(std::move(flat));
  }
  if (!s.compressed.empty()) {
    CollectiveCall p{Collective::Allreduce, ElemType::F32, s.p_count, "powersgd.P", std::move(pending), {}};
    CollectiveCall q{Collective::Allreduce,          ElemType::F32, s.q_count, "powersgd.Q", {},
                     {{WorkKind::Divide, s.q_count}}};
    for (std::size_t i = 0; i < s.compressed.size(); ++i) {
      const TensorSlice& ts = bucket.tensors[s.compressed[i]];
      const std::size_t r = s.ranks[i];
      // Orthogonalize Q, P = M Q; then orthogonalize P, Q = M^T P; then M = P Q^T.
      p.before.push_back({WorkKind::Orthogonalize, ts.cols, 0, r});
      p.before.push_back({WorkKind::MatMul, ts.rows, ts.cols, r});
      q.before.push_back({WorkKind::Orthogonalize, ts.rows, 0, r});
      q.before.push_back({WorkKind::MatMulTN, ts.rows, ts.cols, r});
      q.after.push_back({WorkKind::MatMulNT, ts.rows, ts.cols, r});
    }
    calls.push_back(std::move(p));
    calls.push_back(std::move(q));
  }
  if (o_.error_feedback && !calls.empty()) calls.back().after.push_back({WorkKind::Sub, n});
  return calls;
}

std::vector<PlanChange> PowerSgdCodec::plan_changes() const {
  if (o_.start_iter <= 0) return {};
  return {{o_.start_iter, fmt::format("plain allreduce before PowerSGD's start_iter {}", o_.start_iter)}};
}

void PowerSgdCodec::run(const BucketLayout& bucket, float* grad, int world_size, std::int64_t step,
                        const CollectiveFn& collective, CodecCompute& compute) {
  const std::vector<CollectiveCall> calls = plan(bucket, world_size, step);
  if (calls.empty()) return;
  const std::size_t n = bucket.count;
  const float w = static_cast<float>(world_size);
  if (step < o_.start_iter) {
    collective(calls[0], grad);
    compute.divide(grad, n, w);
    return;
  }

  BucketState& st = state_[bucket.id];
  float* residual = nullptr;
  float* input = nullptr;  // gradient + residual, to compute the new residual at the end
  if (o_.error_feedback) {
    residual = ensure_floats(st.residual, compute, n);  // zeros on the first compressed step, or a new shape
    compute.add(grad, residual, n);
    input = ensure_floats(st.input, compute, n);
    compute.copy(input, grad, n * sizeof(float));
  }

  const Split s = split(bucket);
  std::size_t next_call = 0;

  // Uncompressed tensors: one contiguous float32 allreduce, averaged.
  if (s.uncompressed_count > 0) {
    CodecBuffer flat_buf(compute, s.uncompressed_count * sizeof(float));
    float* flat = flat_buf.as<float>();
    std::size_t at = 0;
    for (std::size_t t : s.uncompressed) {
      const TensorSlice& ts = bucket.tensors[t];
      compute.copy(flat + at, grad + ts.offset, ts.count() * sizeof(float));
      at += ts.count();
    }
    collective(calls[next_call++], flat);
    compute.divide(flat, s.uncompressed_count, w);
    at = 0;
    for (std::size_t t : s.uncompressed) {
      const TensorSlice& ts = bucket.tensors[t];
      compute.copy(grad + ts.offset, flat + at, ts.count() * sizeof(float));
      at += ts.count();
    }
  }

  if (!s.compressed.empty()) {
    // Q: reuse the previous step's (warm start) or draw it, from a seed every rank shares. The draw runs
    // on the host whatever the compute, so every rank and backend starts from the same bits.
    if (!o_.warm_start || st.q.bytes() != s.q_count * sizeof(float)) {
      std::vector<float> fresh(s.q_count);
      const std::uint64_t id = static_cast<std::uint64_t>(static_cast<std::int64_t>(bucket.id));
      fill_standard_normal(fresh.data(), s.q_count, mix_seed(mix_seed(seed_, id), static_cast<std::uint64_t>(step)));
      st.q = CodecBuffer(compute, s.q_count * sizeof(float));
      compute.upload(st.q.get(), fresh.data(), s.q_count * sizeof(float));
    }
    float* q = ensure_floats(st.q, compute, s.q_count);  // moves a warm Q made by another compute over
    CodecBuffer p_buf(compute, s.p_count * sizeof(float));
    float* p = p_buf.as<float>();
    std::size_t po = 0, qo = 0;
    for (std::size_t i = 0; i < s.compressed.size(); ++i) {
      const TensorSlice& ts = bucket.tensors[s.compressed[i]];
      const std::size_t r = s.ranks[i];
      compute.orthogonalize(q + qo, ts.cols, r, o_.orthogonalization_epsilon);
      compute.matmul(grad + ts.offset, q + qo, p + po, ts.rows, ts.cols, r);
      po += ts.rows * r;
      qo += ts.cols * r;
    }
    collective(calls[next_call++], p);  // the sum of P's; no need to average before orthogonalizing

    po = qo = 0;
    for (std::size_t i = 0; i < s.compressed.size(); ++i) {
      const TensorSlice& ts = bucket.tensors[s.compressed[i]];
      const std::size_t r = s.ranks[i];
      compute.orthogonalize(p + po, ts.rows, r, o_.orthogonalization_epsilon);
      compute.matmul_tn(grad + ts.offset, p + po, q + qo, ts.rows, ts.cols, r);
      po += ts.rows * r;
      qo += ts.cols * r;
    }
    collective(calls[next_call++], q);
    compute.divide(q, s.q_count, w);

    po = qo = 0;
    for (std::size_t i = 0; i < s.compressed.size(); ++i) {
      const TensorSlice& ts = bucket.tensors[s.compressed[i]];
      const std::size_t r = s.ranks[i];
      compute.matmul_nt(p + po, q + qo, grad + ts.offset, ts.rows, ts.cols, r);
      po += ts.rows * r;
      qo += ts.cols * r;
    }
    if (!o_.warm_start) st.q.reset();
  }

  if (residual) compute.sub(residual, input, grad, n);
}

const std::vector<float>* PowerSgdCodec::residual(int bucket_id) const {
  const auto it = state_.find(bucket_id);
  return it == state_.end() ? nullptr : host_view(it->second.residual, view_[bucket_id].residual);
}

const std::vector<float>* PowerSgdCodec::q_memory(int bucket_id) const {
  const auto it = state_.find(bucket_id);
  return it == state_.end() ? nullptr : host_view(it->second.q, view_[bucket_id].q);
}

Codec::State PowerSgdCodec::state() const {
  State out;
  std::vector<float> host;
  for (const auto& [id, st] : state_) {
    if (host_view(st.residual, host)) out[std::to_string(id) + "/residual"] = host;
    if (host_view(st.q, host)) out[std::to_string(id) + "/q"] = host;
  }
  return out;
}

std::size_t PowerSgdCodec::state_bytes(const BucketLayout& bucket, int, std::int64_t step) const {
  if (bucket.count == 0 || step < o_.start_iter) return 0;  // plain allreduce so far: nothing kept
  const Split s = split(bucket);
  std::size_t floats = o_.error_feedback ? 2 * bucket.count : 0;  // the residual, and the input kept as scratch
  if (o_.warm_start && !s.compressed.empty()) floats += s.q_count;
  return floats * sizeof(float);
}

void PowerSgdCodec::restore(const State& state) {
  std::map<int, BucketState> built;  // checked whole before any state is replaced
  for (const auto& [key, values] : state) {
    std::string name;
    const int id = state_bucket(key, this->name(), {"residual", "q"}, name);
    (name == "residual" ? built[id].residual : built[id].q) = host_buffer(values);
  }
  state_ = std::move(built);
  view_.clear();
}

// PyTorch's powerSGD_hook defaults.
std::vector<OptionSpec> powersgd_options() {
  const double inf = std::numeric_limits<double>::infinity();
  return {
      {"rank", OptionKind::Integer, 1, inf, false, "1", "2", "columns of P and Q"},
      {"start_iter", OptionKind::Integer, 0, inf, false, "1000", "3", "plain allreduce before this optimizer step"},
      {"min_compression_rate", OptionKind::Number, 0, inf, false, "2", "1", "compress a matrix only above this rate"},
      {"warm_start", OptionKind::Boolean, 0, inf, false, "true", "false", "start each step's Q from the last one"},
      {"error_feedback", OptionKind::Boolean, 0, inf, false, "true", "false", "add the residual to the next gradient"},
      {"orthogonalization_epsilon", OptionKind::Number, 0, inf, false, "0", "1e-8", "added to norms in Gram-Schmidt"}};
}

std::unique_ptr<Codec> make_powersgd(const CodecOptions& options, std::uint64_t seed) {
  const auto specs = powersgd_options();
  PowerSgdOptions o;
  o.rank = static_cast<std::size_t>(option_integer(specs, options, "rank"));
  o.start_iter = option_integer(specs, options, "start_iter");
  o.min_compression_rate = option_number(specs, options, "min_compression_rate");
  o.warm_start = option_bool(specs, options, "warm_start");
  o.error_feedback = option_bool(specs, options, "error_feedback");
  o.orthogonalization_epsilon = static_cast<float>(option_number(specs, options, "orthogonalization_epsilon"));
  return std::make_unique<PowerSgdCodec>(o, seed);
}

}  // namespace ddplab::codec_detail
