// Bucketing as PyTorch DDP does it: parameters in reverse order (or in the gradient-ready order observed in
// the first step) are packed into buckets of at most `cap` bytes (the first bucket: `first_cap`), closing a
// bucket once it reaches its cap. The gradient buffer is laid out bucket by bucket ("gradient as bucket
// view"), so a bucket is one contiguous range and no gradient is copied to be communicated.
#pragma once
#include <cstddef>
#include <cstdint>
#include <vector>

#include "ddplab/strategies/codec.hpp"
#include "ddplab/strategies/model_spec.hpp"

namespace ddplab {

struct Bucket {
  int id = 0;
  std::vector<int> params;  // parameter indices, in the bucket's buffer order
  std::size_t offset = 0;   // first element in the gradient buffer
  std::size_t count = 0;    // elements
  BucketLayout layout;      // tensors relative to the bucket (for codecs)
};

struct Bucketing {
  std::vector<Bucket> buckets;           // in the order their gradients become ready
  std::vector<std::size_t> grad_offset;  // per parameter: where its gradient lives in the gradient buffer
  std::vector<int> bucket_of;            // per parameter: its bucket
  std::size_t total = 0;                 // elements
};

// `order`: every parameter index once, in the order gradients are expected (e.g. reverse parameter order).
// A cap of 0 means unlimited (one bucket). With whole_layers a bucket that reaches its cap closes only where
// the order moves to another layer, so no layer is cut between buckets (ZeRO-3's buckets are its parameter
// units, and FSDP's units are whole modules). Throws InputError when order is not a permutation.
Bucketing make_buckets(const ModelSpec& model, const std::vector<int>& order, std::uint64_t cap_bytes,
                       std::uint64_t first_cap_bytes, std::size_t elem_bytes = 4, bool whole_layers = false);

// Reverse parameter order: DDP's initial assignment before any gradient has been seen.
std::vector<int> reverse_parameter_order(const ModelSpec& model);

}  // namespace ddplab
