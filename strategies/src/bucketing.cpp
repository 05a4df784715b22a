#include "ddplab/strategies/bucketing.hpp"

#include <stdexcept>
#include <string>

#include "ddplab/core/error.hpp"

namespace ddplab {

std::vector<int> reverse_parameter_order(const ModelSpec& model) {
  std::vector<int> order;
  for (int i = static_cast<int>(model.params.size()) - 1; i >= 0; --i) order.push_back(i);
  return order;
}

Bucketing make_buckets(const ModelSpec& model, const std::vector<int>& order, std::uint64_t cap_bytes,
                       std::uint64_t first_cap_bytes, std::size_t elem_bytes, bool whole_layers) {
  const std::size_t n = model.params.size();
  std::vector<bool> seen(n, false);
  if (order.size() != n)
    throw InputError("bucket order names " + std::to_string(order.size()) + " parameters, the model has " +
                     std::to_string(n));
  for (int p : order) {
    if (p < 0 || static_cast<std::size_t>(p) >= n || seen[static_cast<std::size_t>(p)])
      throw InputError("bucket order is not a permutation of the parameters (at " + std::to_string(p) + ")");
    seen[static_cast<std::size_t>(p)] = true;
  }
  Bucketing b;
  b.grad_offset.assign(n, 0);
  b.bucket_of.assign(n, 0);
  Bucket current;
  auto close = [&] {
    if (current.params.empty()) return;
    current.id = static_cast<int>(b.buckets.size());
    current.layout.id = current.id;
    current.layout.count = current.count;
    b.buckets.push_back(std::move(current));
    current = Bucket{};
    current.offset = b.total;
  };
  for (std::size_t i = 0; i < order.size(); ++i) {
    const int p = order[i];
    const ParamSpec& ps = model.params[static_cast<std::size_t>(p)];
    b.grad_offset[static_cast<std::size_t>(p)] = b.total;
    b.bucket_of[static_cast<std::size_t>(p)] = static_cast<int>(b.buckets.size());
    current.layout.tensors.push_back({current.count, ps.rows, ps.cols});
    current.params.push_back(p);
    current.count += ps.count();
    b.total += ps.count();
    // Like DDP, a bucket closes once it holds at least its cap; the first one has its own, smaller cap.
    const std::uint64_t cap = b.buckets.empty() ? first_cap_bytes : cap_bytes;
    const bool layer_ends = !whole_layers || i + 1 == order.size() ||
                            model.params[static_cast<std::size_t>(order[i + 1])].layer != ps.layer;
    if (cap > 0 && current.count * elem_bytes >= cap && layer_ends) close();
  }
  close();
  return b;
}

}  // namespace ddplab
