// Internal helpers shared by the schedule builders (not part of the public API).
// A schedule is written as numbered rounds of point-to-point transfers; the builder adds each transfer
// to both sides in the same step, so sends and receives match by construction, and it enforces the rules
// of schedule.hpp (one send per (rank, peer) per step, equal step counts on all ranks).
#pragma once
#include <string>
#include <vector>

#include "ddplab/strategies/schedule.hpp"

namespace ddplab::sched {

class Builder {
 public:
  Builder(std::string name, Collective collective, int world_size, std::size_t count);

  // In round k, `from` sends chunk c to `to`, which adds it into (Reduce) or overwrites (Copy) the same
  // range of its buffer. Empty chunks are dropped. Throws InternalError if `from` already sends to
  // `to` in round k (a bug in the builder calling this).
  void move(int k, int from, int to, Chunk c, RecvMode mode);
  // Makes the schedule at least `rounds` steps long (rounds whose transfers were all empty still count).
  void use_rounds(int rounds);
  bool sends_to(int k, int from, int to) const;

  int world_size() const { return s_.world_size; }
  std::size_t count() const { return s_.count; }
  // Pads every rank to the same number of steps and returns the schedule.
  Schedule finish();

 private:
  std::vector<ScheduleStep>& steps_of(int rank, int k);
  Schedule s_;
  int rounds_ = 0;
};

// The power-of-two core of recursive halving and doubling: the largest power of two p <= n ranks take part
// (levels = log2 p). With extra = n - p, the first 2 extra ranks pair up: each even one folds its whole
// buffer into its odd partner before (fold_in, one round) and gets the result back after (fold_out). real()
// maps an index in the core to its rank. Both return the next free round.
struct PowerOfTwoCore {
  explicit PowerOfTwoCore(int n);
  int p = 1, levels = 0, extra = 0;
  int real(int nr) const { return nr < extra ? 2 * nr + 1 : nr + extra; }
  int fold_in(Builder& b, int k, Chunk all) const;
  int fold_out(Builder& b, int k, Chunk all) const;
};

// Part i of `region` split into `parts` near-equal contiguous parts (as chunk_of does for the buffer).
Chunk sub_chunk(Chunk region, int parts, int i);
// All parts of `region` split into `parts`.
std::vector<Chunk> split(Chunk region, int parts);
// The contiguous range from the start of `first` to the end of `last`.
Chunk span(Chunk first, Chunk last);

// Ring reduce-scatter among `group` (global ranks, in ring order) starting at round k0: afterwards
// group[i] holds the group's sum of regions[i] (regions.size() == group.size(), disjoint). Every element's
// sum is formed on one rank only. Uses group.size() - 1 rounds; returns the next free round.
int group_ring_reduce_scatter(Builder& b, const std::vector<int>& group, const std::vector<Chunk>& regions, int k0);
// Ring all-gather: group[i] starts with regions[i] and every member ends with all of them (copies only).
int group_ring_all_gather(Builder& b, const std::vector<int>& group, const std::vector<Chunk>& regions, int k0);

}  // namespace ddplab::sched
