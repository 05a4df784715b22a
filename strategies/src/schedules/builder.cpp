// The round-based schedule builder and the group ring phases that several schedules reuse.
#include "builder.hpp"

#include <stdexcept>

#include "ddplab/core/error.hpp"

namespace ddplab::sched {

Builder::Builder(std::string name, Collective collective, int world_size, std::size_t count) {
  if (world_size < 1) throw InputError(name + " " + to_string(collective) + ": world size must be >= 1");
  s_.name = std::move(name);
  s_.collective = collective;
  s_.world_size = world_size;
  s_.count = count;
  s_.ranks.resize(static_cast<std::size_t>(world_size));
}

std::vector<ScheduleStep>& Builder::steps_of(int rank, int k) {
  auto& steps = s_.ranks.at(static_cast<std::size_t>(rank));
  if (steps.size() <= static_cast<std::size_t>(k)) steps.resize(static_cast<std::size_t>(k) + 1);
  return steps;
}

bool Builder::sends_to(int k, int from, int to) const {
  const auto& steps = s_.ranks.at(static_cast<std::size_t>(from));
  if (steps.size() <= static_cast<std::size_t>(k)) return false;
  for (const SendOp& snd : steps[static_cast<std::size_t>(k)].sends)
    if (snd.peer == to) return true;
  return false;
}

void Builder::move(int k, int from, int to, Chunk c, RecvMode mode) {
  use_rounds(k + 1);
  if (c.count == 0) return;
  if (from == to || k < 0)
    throw InternalError(s_.name + ": bad transfer " + std::to_string(from) + "->" + std::to_string(to));
  if (sends_to(k, from, to))
    throw InternalError(s_.name + ": two sends " + std::to_string(from) + "->" + std::to_string(to) + " in step " +
                        std::to_string(k));
  steps_of(from, k)[static_cast<std::size_t>(k)].sends.push_back({to, c});
  steps_of(to, k)[static_cast<std::size_t>(k)].recvs.push_back({from, c, mode});
}

void Builder::use_rounds(int rounds) {
  if (rounds > rounds_) rounds_ = rounds;
}

Schedule Builder::finish() {
  for (auto& steps : s_.ranks) steps.resize(static_cast<std::size_t>(rounds_));
  return std::move(s_);
}

Chunk sub_chunk(Chunk region, int parts, int i) {
  const Chunk c = chunk_of(region.count, parts, i);
  return {region.offset + c.offset, c.count};
}

std::vector<Chunk> split(Chunk region, int parts) {
  std::vector<Chunk> out;
  for (int i = 0; i < parts; ++i) out.push_back(sub_chunk(region, parts, i));
  return out;
}

Chunk span(Chunk first, Chunk last) { return {first.offset, last.offset + last.count - first.offset}; }

int group_ring_reduce_scatter(Builder& b, const std::vector<int>& group, const std::vector<Chunk>& regions, int k0) {
  const int m = static_cast<int>(group.size());
  auto mod = [m](int x) { return ((x % m) + m) % m; };
  // Step t: member i passes its partial sum of region i-t-1 to the next member, which adds its own.
  // The partial sum of region j starts at member j+1 and ends complete at member j after m-1 hops.
  for (int t = 0; t + 1 < m; ++t)
    for (int i = 0; i < m; ++i)
      b.move(k0 + t, group[static_cast<std::size_t>(i)], group[static_cast<std::size_t>(mod(i + 1))],
             regions[static_cast<std::size_t>(mod(i - t - 1))], RecvMode::Reduce);
  return k0 + (m > 0 ? m - 1 : 0);
}

int group_ring_all_gather(Builder& b, const std::vector<int>& group, const std::vector<Chunk>& regions, int k0) {
  const int m = static_cast<int>(group.size());
  auto mod = [m](int x) { return ((x % m) + m) % m; };
  // Step t: member i forwards region i-t (its own at t = 0, then the one it received last step).
  for (int t = 0; t + 1 < m; ++t)
    for (int i = 0; i < m; ++i)
      b.move(k0 + t, group[static_cast<std::size_t>(i)], group[static_cast<std::size_t>(mod(i + 1))],
             regions[static_cast<std::size_t>(mod(i - t))], RecvMode::Copy);
  return k0 + (m > 0 ? m - 1 : 0);
}

PowerOfTwoCore::PowerOfTwoCore(int n) {
  while (p * 2 <= n) p *= 2, ++levels;
  extra = n - p;
}

int PowerOfTwoCore::fold_in(Builder& b, int k, Chunk all) const {
  if (extra == 0) return k;
  for (int i = 0; i < extra; ++i) b.move(k, 2 * i, 2 * i + 1, all, RecvMode::Reduce);
  return k + 1;
}

int PowerOfTwoCore::fold_out(Builder& b, int k, Chunk all) const {
  if (extra == 0) return k;
  for (int i = 0; i < extra; ++i) b.move(k, 2 * i + 1, 2 * i, all, RecvMode::Copy);
  return k + 1;
}

}  // namespace ddplab::sched
