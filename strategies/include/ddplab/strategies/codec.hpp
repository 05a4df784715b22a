// Codecs: how a bucket travels on the wire. A codec turns one bucket's gradients into a sequence of
// collectives on typed buffers with local work in between (a cast, a top-k selection, PowerSGD's matrix
// products), and keeps its error-feedback state per bucket.
//
// plan() describes the collectives without data, so the simulator can replay them; run() does the real
// work and calls back into the executor for each collective, in the order plan() announced.
#pragma once
#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ddplab/core/choices.hpp"
#include "ddplab/strategies/options.hpp"

namespace ddplab {

enum class ElemType { F32, F16, BF16, IndexValue };  // IndexValue: {uint32 index, float value}, 8 bytes
std::size_t elem_bytes(ElemType t);
const char* elem_name(ElemType t);

// One parameter tensor inside a bucket: where it sits (in elements from the bucket's start) and its shape.
// A vector (bias) has rows = count, cols = 1.
struct TensorSlice {
  std::size_t offset = 0;
  std::size_t rows = 0, cols = 1;
  std::size_t count() const { return rows * cols; }
};

struct BucketLayout {
  int id = 0;                        // stable across steps: codec state is keyed by it
  std::size_t count = 0;             // elements in the bucket
  std::vector<TensorSlice> tensors;  // in buffer order, covering [0, count)
};

// One call a codec makes on its CodecCompute (codec_compute.hpp) to do local work, as its plan announces
// it: the simulator charges each by kind (the calibration's timing of that kind, else a byte/FLOP model)
// and a test checks that run() makes exactly the calls plan() announced. Sizes by kind:
//   Fill, Divide, Add, Sub        n float32 elements
//   Copy                          n bytes
//   ToHalf, FromHalf              n elements of `type` (F16 or BF16) and as many float32
//   TopK                          k of n elements selected
//   ZeroAt                        n indices
//   ScatterAdd                    c groups of k (index, value) pairs into n elements
//   MatMul, MatMulTN, MatMulNT    an n x c by c x k product (or its transposed forms), accumulated in double
//   Orthogonalize                 the k columns of an n x k matrix
enum class WorkKind {
  Fill,
  Divide,
  Add,
  Sub,
  Copy,
  ToHalf,
  FromHalf,
  TopK,
  ZeroAt,
  ScatterAdd,
  MatMul,
  MatMulTN,
  MatMulNT,
  Orthogonalize
};
struct LocalWork {
  WorkKind kind = WorkKind::Fill;
  std::size_t n = 0, c = 0, k = 0;
  ElemType type = ElemType::F32;
  // Spelled out: the CUDA plugin compiles this header as C++17 (no defaulted comparisons).
  bool operator==(const LocalWork& o) const {
    return kind == o.kind && n == o.n && c == o.c && k == o.k && type == o.type;
  }
};
const char* work_name(WorkKind k);  // "fill", "to_half", "topk", "matmul_tn", ...
// What calibration times separately: the kind's name, and for casts the half type ("to_half.bf16").
std::string work_key(const LocalWork& w);
std::vector<WorkKind> work_kinds();  // every kind, in enum order
// The two sizes calibration fits a kind's time by (seconds = fixed + a x units + b x extra). `units` is the
// pass over memory: elements, bytes (Copy), pairs (ScatterAdd), matrix elements n x c (products) or n x k
// (Orthogonalize). `extra` is what grows with the kind's second dimension: top-k's sort of the k chosen
// (k log2 k) and the FLOPs of the products and of Gram-Schmidt; 0 for the other kinds. One term would not
// do: a rank-1 product costs as much per matrix element as a rank-4 one, at a quarter of the FLOPs.
struct WorkSize {
  double units = 0, extra = 0;
};
WorkSize work_size(const LocalWork& w);
double work_flops(const LocalWork& w);  // arithmetic, for the FLOP model
double work_bytes(const LocalWork& w);  // memory read and written, for the byte model

// One collective a codec needs. "allreduce" sums `count` elements of `type` over all ranks;
// "all_gather" concatenates every rank's `count` elements, rank-ordered.
struct CollectiveCall {
  Collective collective = Collective::Allreduce;
  ElemType type = ElemType::F32;
  std::size_t count = 0;                     // elements contributed per rank
  std::string label;                         // "fp16", "powersgd.P", ...
  std::vector<LocalWork> before{}, after{};  // local work before and after this collective (encode, decode, products)
};

// Where a strategy's plans change across optimizer steps (a codec's or a policy's): from `step` on they
// differ from the step before; `what` names the plans that end there ("plain allreduce before start_iter").
struct PlanChange {
  std::int64_t step = 0;
  std::string what;
};

// The executor side: run the collective in place over `buf` (count elements per rank of call.type;
// for all_gather, buf holds world * count elements and this rank's contribution is at rank * count).
using CollectiveFn = std::function<void(const CollectiveCall& call, void* buf)>;

class CodecCompute;                  // codec_compute.hpp: where run() does its local work
CodecCompute& host_codec_compute();  // on host memory

class Codec {
 public:
  virtual ~Codec() = default;
  virtual std::string name() const = 0;
  // The collectives run() will issue for this bucket at this step, with their sizes. Same on every rank.
  virtual std::vector<CollectiveCall> plan(const BucketLayout& bucket, int world_size, std::int64_t step) const = 0;
  // The optimizer steps at which plan() starts to differ from the step before (PowerSGD's start_iter),
  // with what ends there; the step pattern is built from them. Default: plan() never changes.
  virtual std::vector<PlanChange> plan_changes() const { return {}; }
  // Replaces grad (bucket.count floats, this rank's gradients) with the average over ranks as the codec
  // reconstructs it; updates error feedback. Its local work is what plan() announced, call by call.
  // All local work goes through `compute`, in whose memory grad lives (device memory for the CUDA
  // backend's Ops::codec_compute()); so do the buffers handed to `collective`, and the codec's state.
  // Keep using one compute per codec object: state made by another is moved over (through the host).
  virtual void run(const BucketLayout& bucket, float* grad, int world_size, std::int64_t step,
                   const CollectiveFn& collective, CodecCompute& compute) = 0;
  // The same on host memory (host_codec_compute()). Subclasses add `using Codec::run;` to keep it visible.
  void run(const BucketLayout& bucket, float* grad, int world_size, std::int64_t step, const CollectiveFn& collective);
  // The state a codec carries from step to step (error feedback, PowerSGD's warm-start Q), as host copies
  // keyed "BUCKET/NAME", for checkpoints. A codec made with the same options and seed, restored from it,
  // continues bit for bit. restore() replaces every state the codec holds; the default refuses any entry.
  using State = std::map<std::string, std::vector<float>>;
  virtual State state() const { return {}; }
  virtual void restore(const State& state);
  // Bytes of the codec's memory it keeps for this bucket from one step to the next once it has run `step`
  // (error feedback, a warm-start Q, scratch it keeps so as not to allocate it every step): the per-device
  // memory model counts them. Buffers a step allocates and frees are not counted. Default: none.
  virtual std::size_t state_bytes(const BucketLayout&, int /*world_size*/, std::int64_t /*step*/) const { return 0; }
  // Bytes this rank puts on the wire per element of its own payload is plan()'s business; this is the
  // total payload per rank for one bucket (sum over calls of count * elem_bytes), for reports.
  std::size_t wire_bytes(const BucketLayout& bucket, int world_size, std::int64_t step) const;
};

// Options of a codec, from the scenario's [[strategy]] entry (values as text; CodecInfo::options types them).
using CodecOptions = OptionValues;

struct CodecInfo {
  std::string name;                 // "none", "fp16", "bf16", "topk", "powersgd"
  std::string summary;              // one line
  std::vector<OptionSpec> options;  // its codec_options (options.hpp); make_codec checks them first
  std::unique_ptr<Codec> (*make)(const CodecOptions&, std::uint64_t seed);
};
const std::vector<CodecInfo>& codecs();
// Throws InputError naming the codec and the bad option (or the known codecs).
std::unique_ptr<Codec> make_codec(const std::string& name, const CodecOptions& options, std::uint64_t seed);

}  // namespace ddplab
