// The codecs' local work as their plans announce it (codec.hpp LocalWork): names, and the units, FLOPs and
// bytes each kind is charged by.
#include <algorithm>
#include <cmath>

#include "codecs/codec_impl.hpp"

namespace ddplab {

const char* work_name(WorkKind k) {
  switch (k) {
    case WorkKind::Fill:
      return "fill";
    case WorkKind::Divide:
      return "divide";
    case WorkKind::Add:
      return "add";
    case WorkKind::Sub:
      return "sub";
    case WorkKind::Copy:
      return "copy";
    case WorkKind::ToHalf:
      return "to_half";
    case WorkKind::FromHalf:
      return "from_half";
    case WorkKind::TopK:
      return "topk";
    case WorkKind::ZeroAt:
      return "zero_at";
    case WorkKind::ScatterAdd:
      return "scatter_add";
    case WorkKind::MatMul:
      return "matmul";
    case WorkKind::MatMulTN:
      return "matmul_tn";
    case WorkKind::MatMulNT:
      return "matmul_nt";
    case WorkKind::Orthogonalize:
      return "orthogonalize";
  }
  return "?";
}

std::string work_key(const LocalWork& w) {
  const bool cast = w.kind == WorkKind::ToHalf || w.kind == WorkKind::FromHalf;
  return cast ? std::string(work_name(w.kind)) + "." + elem_name(w.type) : work_name(w.kind);
}

std::vector<WorkKind> work_kinds() {
  std::vector<WorkKind> all;
  for (int k = 0; k <= static_cast<int>(WorkKind::Orthogonalize); ++k) all.push_back(static_cast<WorkKind>(k));
  return all;
}

double work_flops(const LocalWork& w) {
  const double n = static_cast<double>(w.n), c = static_cast<double>(w.c), k = static_cast<double>(w.k);
  switch (w.kind) {
    case WorkKind::Divide:
    case WorkKind::Add:
    case WorkKind::Sub:
    case WorkKind::ToHalf:
    case WorkKind::FromHalf:
      return n;
    case WorkKind::TopK:
      return 2.0 * n + k * std::log2(std::max(2.0, k));  // |v| and compare per element, then a sort
    case WorkKind::ScatterAdd:
      return c * k;
    case WorkKind::MatMul:
    case WorkKind::MatMulTN:
    case WorkKind::MatMulNT:
      return 2.0 * n * c * k;
    case WorkKind::Orthogonalize:
      return codec_detail::orthogonalize_flops(w.n, w.k);
    case WorkKind::Fill:
    case WorkKind::Copy:
    case WorkKind::ZeroAt:
      return 0.0;
  }
  return 0.0;
}

double work_bytes(const LocalWork& w) {
  const double n = static_cast<double>(w.n), c = static_cast<double>(w.c), k = static_cast<double>(w.k);
  switch (w.kind) {
    case WorkKind::Fill:
      return 4.0 * n;
    case WorkKind::Divide:
      return 8.0 * n;
    case WorkKind::Add:
    case WorkKind::Sub:
      return 12.0 * n;
    case WorkKind::Copy:
      return 2.0 * n;
    case WorkKind::ToHalf:
    case WorkKind::FromHalf:
      return 6.0 * n;
    case WorkKind::TopK:
      return 4.0 * n + 8.0 * k;
    case WorkKind::ZeroAt:
      return 12.0 * n;
    case WorkKind::ScatterAdd:
      return 16.0 * c * k;  // a pair read, an element read and written
    case WorkKind::MatMul:
    case WorkKind::MatMulTN:
    case WorkKind::MatMulNT:
      return 4.0 * (n * c + c * k + n * k);
    case WorkKind::Orthogonalize:
      return 8.0 * n * k;
  }
  return 0.0;
}

WorkSize work_size(const LocalWork& w) {
  const double n = static_cast<double>(w.n), c = static_cast<double>(w.c), k = static_cast<double>(w.k);
  switch (w.kind) {
    case WorkKind::TopK:
      return {n, k * std::log2(std::max(2.0, k))};
    case WorkKind::ScatterAdd:
      return {c * k, 0.0};
    case WorkKind::MatMul:
    case WorkKind::MatMulTN:
    case WorkKind::MatMulNT:
      return {n * c, work_flops(w)};
    case WorkKind::Orthogonalize:
      return {n * k, work_flops(w)};
    default:
      return {n, 0.0};
  }
}

}  // namespace ddplab
