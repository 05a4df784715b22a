#include "trainer_checks.hpp"

#include <algorithm>
#include <cstring>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

namespace ddplab {

std::uint64_t parameter_checksum(const float* p, std::size_t n) {
  std::uint64_t h = 1469598103934665603ull;
  const auto* bytes = reinterpret_cast<const unsigned char*>(p);
  for (std::size_t i = 0; i < n * sizeof(float); ++i) h = (h ^ bytes[i]) * 1099511628211ull;
  return h;
}

std::string judge_checksums(const std::vector<std::uint64_t>& sums, const std::vector<char>& worker, std::int64_t step,
                            int every) {
  std::map<std::uint64_t, std::vector<int>> holders;
  int workers = 0;
  for (std::size_t r = 0; r < sums.size(); ++r)
    if (worker.at(r)) holders[sums[r]].push_back(static_cast<int>(r)), ++workers;
  if (holders.size() <= 1) return "";
  const auto common = std::max_element(holders.begin(), holders.end(),
                                       [](const auto& a, const auto& b) { return a.second.size() < b.second.size(); });
  // Only a strict majority tells which replicas are the odd ones; otherwise every group is named.
  if (2 * static_cast<int>(common->second.size()) <= workers) {
    std::vector<std::string> groups;
    for (const auto& [sum, ranks] : holders)
      groups.push_back(fmt::format("rank {} {:016x}", fmt::join(ranks, ", "), sum));
    return fmt::format(
        "step {}: the replicas' parameters disagree and no checksum is held by a majority ({}): replicas "
        "diverged (train.consistency_every = {})",
        step, fmt::join(groups, "; "), every);
  }
  std::vector<int> diverged;
  for (const auto& [sum, ranks] : holders)
    if (sum != common->first) diverged.insert(diverged.end(), ranks.begin(), ranks.end());
  std::sort(diverged.begin(), diverged.end());
  return fmt::format(
      "step {}: the parameters of rank{} {} differ from the other replicas' (checksum {:016x}, not "
      "{:016x}): replicas diverged (train.consistency_every = {})",
      step, diverged.size() == 1 ? "" : "s", fmt::join(diverged, ", "),
      sums[static_cast<std::size_t>(diverged.front())], common->first, every);
}

std::string check_consistency(Communicator& comm, Ops& ops, Model& model, const Strategy& strategy, std::int64_t step,
                              int every) {
  std::vector<float> mine(model.num_params());
  ops.to_host(mine.data(), model.params(), mine.size());
  std::vector<std::uint64_t> all(static_cast<std::size_t>(comm.size()));
  all[static_cast<std::size_t>(comm.rank())] = parameter_checksum(mine.data(), mine.size());
  comm.all_gather(all.data(), sizeof(std::uint64_t));
  std::vector<char> worker(all.size());
  for (int r = 0; r < comm.size(); ++r) worker[static_cast<std::size_t>(r)] = strategy.is_worker(r) ? 1 : 0;
  return judge_checksums(all, worker, step, every);
}

std::string check_identical(Communicator& comm, RankParallel& rp, Ops& ops, Model& model, const FaultInjection& fault) {
  std::vector<float> mine(model.num_params()), root(model.num_params());
  ops.to_host(mine.data(), model.params(), mine.size());
  if (fault.strikes(FaultKind::Perturb, comm.rank())) mine[mine.size() / 2] += 1e-3f;
  root = mine;
  rp.data().broadcast(root.data(), root.size() * sizeof(float), 0);
  long long first_diff = -1;
  if (std::memcmp(mine.data(), root.data(), mine.size() * sizeof(float)) != 0)
    for (std::size_t i = 0; i < mine.size(); ++i)
      if (std::memcmp(&mine[i], &root[i], sizeof(float)) != 0) {
        first_diff = static_cast<long long>(i);
        break;
      }
  std::vector<long long> diffs(static_cast<std::size_t>(comm.size()), -1);
  comm.gather(&first_diff, sizeof first_diff, diffs.data(), 0);
  std::string msg;
  for (int r = 0; r < comm.size(); ++r)
    if (diffs[static_cast<std::size_t>(r)] >= 0)
      msg += fmt::format("{}parameters of {} differ from {} (first at element {})", msg.empty() ? "" : "; ",
                         rp.describe_rank(r), rp.describe_rank(rp.replica_zero(r)), diffs[static_cast<std::size_t>(r)]);
  // Only rank 0 saw every rank's answer; all ranks must agree on the outcome.
  int identical = msg.empty() ? 1 : 0;
  comm.broadcast(&identical, sizeof identical, 0);
  if (!identical && msg.empty()) msg = "parameters differ across ranks (named by rank 0)";
  return msg;
}

void flip_a_bit(Ops& ops, Model& model) {
  std::vector<float> p(model.num_params());
  ops.to_host(p.data(), model.params(), p.size());
  std::uint32_t bits = 0;
  std::memcpy(&bits, &p[p.size() / 2], sizeof bits);
  bits ^= 1u;
  std::memcpy(&p[p.size() / 2], &bits, sizeof bits);
  ops.to_device(model.params(), p.data(), p.size());
  ops.synchronize();
}

}  // namespace ddplab
