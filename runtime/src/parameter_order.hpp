// Private to the runtime: a flat buffer laid out by `layout` (each parameter's offset and count, as a model's
// param_info) as one parameter after another in parameter order, and back. Checkpoints hold parameter order, so
// that a file does not depend on the bucket layout of the run that wrote it.
#pragma once
#include <algorithm>
#include <vector>

#include "ddplab/runtime/model.hpp"

namespace ddplab {

inline std::vector<float> to_parameter_order(const std::vector<float>& flat, const std::vector<ParamInfo>& layout) {
  std::vector<float> out;
  out.reserve(flat.size());
  for (const ParamInfo& p : layout)
    out.insert(out.end(), flat.begin() + static_cast<std::ptrdiff_t>(p.offset),
               flat.begin() + static_cast<std::ptrdiff_t>(p.offset + p.count));
  return out;
}

inline std::vector<float> from_parameter_order(const std::vector<float>& ordered,
                                               const std::vector<ParamInfo>& layout) {
  std::vector<float> flat(ordered.size());
  std::size_t at = 0;
  for (const ParamInfo& p : layout) {
    std::copy_n(ordered.begin() + static_cast<std::ptrdiff_t>(at), p.count,
                flat.begin() + static_cast<std::ptrdiff_t>(p.offset));
    at += p.count;
  }
  return flat;
}

}  // namespace ddplab
